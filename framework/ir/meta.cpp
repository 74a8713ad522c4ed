// Tensor and node metadata helpers: dtype names, phase and policy names.
#include "framework/ir/meta.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>

namespace passcheck::ir {

// Sizes come from files: a product that leaves int64 is refused, never wrapped (the
// parser reports it first, at the type; these guard graphs built by other means).
int64_t TensorMeta::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes)
    if (__builtin_mul_overflow(n, s, &n)) throw std::overflow_error("tensor element count overflows int64");
  return n;
}

int64_t TensorMeta::nbytes() const {
  int64_t bytes = 0;
  if (__builtin_mul_overflow(numel(), dtype_size(dtype), &bytes)) throw std::overflow_error("tensor byte count overflows int64");
  return bytes;
}

namespace {
// Calls visit(d, stride) for each dim d from the last to the first with the row-major
// stride of `sizes` there; throws when a stride overflows int64.
template <class Visit>
void visit_row_major_strides(const std::vector<int64_t>& sizes, Visit&& visit) {
  int64_t running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    visit(i, running);
    if (__builtin_mul_overflow(running, std::max<int64_t>(sizes[i], 1), &running))
      throw std::overflow_error("contiguous strides overflow int64");
  }
}
}  // namespace

std::vector<int64_t> TensorMeta::contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size());
  visit_row_major_strides(sizes, [&](size_t d, int64_t stride) { strides[d] = stride; });
  return strides;
}

// Compared stride by stride: the printer and the graph hash ask this of every tensor, and
// building the row-major strides to compare with cost an allocation each time.
bool TensorMeta::is_contiguous() const {
  bool same = strides.size() == sizes.size();
  visit_row_major_strides(sizes, [&](size_t d, int64_t stride) { same = same && strides[d] == stride; });
  return same;
}

sym::Expr TensorMeta::size_expr(size_t d) const {
  return symbolic_ ? symbolic_->sizes.at(d) : sym::Expr::constant(sizes.at(d));
}

sym::Expr TensorMeta::stride_expr(size_t d) const {
  return symbolic_ ? symbolic_->strides.at(d) : sym::Expr::constant(strides.at(d));
}

const std::vector<sym::Expr>& TensorMeta::no_exprs() {
  static const std::vector<sym::Expr> none;
  return none;
}

std::vector<sym::Expr> TensorMeta::size_exprs() const {
  std::vector<sym::Expr> out;
  for (size_t d = 0; d < sizes.size(); ++d) out.push_back(size_expr(d));
  return out;
}

std::vector<sym::Expr> TensorMeta::stride_exprs() const {
  std::vector<sym::Expr> out;
  for (size_t d = 0; d < strides.size(); ++d) out.push_back(stride_expr(d));
  return out;
}

std::vector<sym::Expr> TensorMeta::contiguous_stride_exprs(const std::vector<sym::Expr>& sizes) {
  std::vector<sym::Expr> strides(sizes.size());
  sym::Expr running = sym::Expr::constant(1);
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    // Symbols are declared >= 1, so only a constant 0 needs the max() the concrete form uses.
    const auto c = sizes[i].as_constant();
    running = running * (c ? sym::Expr::constant(std::max<int64_t>(*c, 1)) : sizes[i]);
  }
  return strides;
}

void TensorMeta::set_symbolic(std::vector<sym::Expr> sizes_expr, std::vector<sym::Expr> strides_expr,
                              const std::map<std::string, int64_t>& hints) {
  if (sizes_expr.size() != strides_expr.size())
    throw std::invalid_argument("symbolic sizes and strides differ in rank");
  auto concrete = [&](const std::vector<sym::Expr>& exprs) {
    std::vector<int64_t> out;
    for (const sym::Expr& e : exprs) {
      auto v = sym::evaluate(e, hints);
      if (!v) throw std::invalid_argument("shape expression " + e.to_string() + " has a symbol without a hint");
      out.push_back(*v);
    }
    return out;
  };
  sizes = concrete(sizes_expr);
  strides = concrete(strides_expr);
  auto all_constant = [](const std::vector<sym::Expr>& exprs) {
    return std::all_of(exprs.begin(), exprs.end(), [](const sym::Expr& e) { return e.is_constant(); });
  };
  if (all_constant(sizes_expr) && all_constant(strides_expr))
    symbolic_.reset();
  else
    symbolic_ = std::make_unique<SymbolicShape>(SymbolicShape{std::move(sizes_expr), std::move(strides_expr)});
}

std::set<std::string> TensorMeta::free_symbols() const {
  std::set<std::string> out;
  for (const auto* list : {&sym_sizes(), &sym_strides()})
    for (const sym::Expr& e : *list) {
      auto f = e.free_symbols();
      out.insert(f.begin(), f.end());
    }
  return out;
}

std::string format_int_list(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::Forward: return "forward";
    case Phase::Loss: return "loss";
    case Phase::Backward: return "backward";
    case Phase::Optimizer: return "optimizer";
  }
  return "?";
}

const char* to_string(RecomputePolicy policy) {
  switch (policy) {
    case RecomputePolicy::Unset: return "unset";
    case RecomputePolicy::MustSave: return "must_save";
    case RecomputePolicy::PreferSave: return "prefer_save";
    case RecomputePolicy::MustRecompute: return "must_recompute";
    case RecomputePolicy::PreferRecompute: return "prefer_recompute";
  }
  return "?";
}

std::optional<Phase> parse_phase(const std::string& text) {
  for (Phase p : {Phase::Forward, Phase::Loss, Phase::Backward, Phase::Optimizer})
    if (text == to_string(p)) return p;
  return std::nullopt;
}

std::optional<RecomputePolicy> parse_recompute_policy(const std::string& text) {
  for (RecomputePolicy p : {RecomputePolicy::Unset, RecomputePolicy::MustSave, RecomputePolicy::PreferSave,
                            RecomputePolicy::MustRecompute, RecomputePolicy::PreferRecompute})
    if (text == to_string(p)) return p;
  return std::nullopt;
}

namespace {
struct DtypeName {
  c10::ScalarType type;
  std::string_view name;  // compared by length first: the parser asks once per value
  int64_t size;
};
constexpr DtypeName kDtypes[] = {
    {c10::ScalarType::Byte, "u8", 1},        {c10::ScalarType::Char, "i8", 1},
    {c10::ScalarType::Short, "i16", 2},      {c10::ScalarType::Int, "i32", 4},
    {c10::ScalarType::Long, "i64", 8},       {c10::ScalarType::Half, "f16", 2},
    {c10::ScalarType::Float, "f32", 4},      {c10::ScalarType::Double, "f64", 8},
    {c10::ScalarType::ComplexFloat, "c64", 8}, {c10::ScalarType::ComplexDouble, "c128", 16},
    {c10::ScalarType::Bool, "b8", 1},        {c10::ScalarType::BFloat16, "bf16", 2},
};
}  // namespace

const char* dtype_short_name(c10::ScalarType dtype) {
  for (const auto& d : kDtypes)
    if (d.type == dtype) return d.name.data();  // each a literal: NUL-terminated
  return "unknown_dtype";
}

std::optional<c10::ScalarType> dtype_from_short_name(std::string_view name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return d.type;
  return std::nullopt;
}

int64_t dtype_size(c10::ScalarType dtype) {
  for (const auto& d : kDtypes)
    if (d.type == dtype) return d.size;
  return 0;
}

std::string Placement::str() const {
  switch (kind) {
    case Kind::Shard: return "S(" + std::to_string(dim) + ")";
    case Kind::Replicate: return "R";
    case Kind::Partial: return "P(" + reduce_op + ")";
  }
  return "?";
}

std::optional<Placement> Placement::parse(const std::string& text) {
  Placement p;
  if (text == "R") return p;
  if (text.size() < 4 || text[1] != '(' || text.back() != ')') return std::nullopt;
  std::string inner = text.substr(2, text.size() - 3);
  if (text[0] == 'S') {
    if (inner.empty() || inner.size() > 2 ||
        !std::all_of(inner.begin(), inner.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    p.kind = Placement::Kind::Shard;
    p.dim = std::stoll(inner);
    return p;
  }
  if (text[0] == 'P') {
    static const char* const ops[] = {"sum", "avg", "product", "min", "max"};
    if (std::none_of(std::begin(ops), std::end(ops), [&](const char* op) { return inner == op; })) return std::nullopt;
    p.kind = Placement::Kind::Partial;
    p.reduce_op = inner;
    return p;
  }
  return std::nullopt;
}

}  // namespace passcheck::ir
