// chunk: splits selected module regions into two chunks (passes/chunk/chunk_passes.h).
//
// Plan, per region (a module root and a direction; forward regions first, then
// backward ones, which reuse the per-chunk values of their root's forward):
// 1. A region node is in the chunk body when it reads a chunk-carrying value (a live-in
//    whose shape carries the chunk symbol, or a body output) or its own arguments or
//    shapes mention the symbol (factories such as zeros([s*64, 8])). Other region nodes
//    (parameter preparation) stay shared by both chunks.
// 2. Live-ins carrying the symbol in one dimension are split in halves with
//    split_with_sizes (cloned when a half is not contiguous, since body views were
//    traced on contiguous inputs).
// 3. Chunk 0 is the original node rewritten in place; chunk 1 is a copy right after it.
//    Both see the symbol s as floordiv(s, 2) in their arguments and shapes.
// 4. In-place updates of shared state (MoE token counters) chain: chunk 1's update
//    reads chunk 0's result, so every scheduler sees their order.
// 5. Body outputs used outside the root are materialized: cat on the chunk dimension,
//    or, for values without it, add of the two partials when they provably are sums over
//    the chunked extent (parameter gradients, token reductions).
#include "passes/chunk/chunk_passes.h"

#include "framework/check/ac_policy.h"
#include "framework/exec/op_properties.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace passcheck::passes {

namespace {

using sym::Expr;

class ChunkError : public std::runtime_error {
 public:
  explicit ChunkError(const std::string& message) : std::runtime_error("chunk: " + message) {}
};

enum class Direction { Forward, Backward };

struct Region {
  std::string root;
  Direction direction;
  std::vector<ir::Node*> nodes;
};

// Whether `n`'s base op is one of `ops`. The op lists below are constexpr arrays, not
// static sets: passes/ holds no writable data (house.passes_hold_no_mutable_globals).
template <size_t N>
bool op_in(const ir::Node& n, const std::string_view (&ops)[N]) {
  const std::string base = n.op_base();
  return std::find(std::begin(ops), std::end(ops), base) != std::end(ops);
}

// Ops whose result is the same numbers as their input, rearranged or cast: a partial sum
// passed through them is still a partial sum of the same extent.
bool is_rearrangement(const ir::Node& n) {
  static constexpr std::string_view ops[] = {"t",      "transpose", "permute",   "view",     "_unsafe_view",
                                             "reshape", "clone",    "alias",     "squeeze",  "unsqueeze",
                                             "_to_copy", "to",      "contiguous", "_reshape_alias"};
  return op_in(n, ops);
}

// Ops that sum over an input dimension: applied to two halves of that dimension, the
// two results add up to the result on the whole (the rounding of the add aside). The
// aten ops by base name (op_in ignores the namespace); passcheck::grouped_mm_weight_grad
// (a sum over the rows of each group) by its full name, and aten::_grouped_mm of two 2-D
// operands (groups along the shared dim: the weight gradient of grouped experts). Their
// halves add up to the whole when each chunk's offsets count that chunk's own rows,
// i.e. when they are computed in the chunk body from the chunked rows (the MoE routing
// does so).
bool is_additive_reduction(const ir::Node& n) {
  static constexpr std::string_view ops[] = {"mm",          "bmm",    "sum",   "embedding_dense_backward",
                                             "index_add",   "scatter_add", "matmul", "addmm",
                                             "native_layer_norm_backward"};
  if (n.op_name() == "aten::_grouped_mm") {
    auto rank = [&](size_t i) {
      const ir::Value* v = i < n.num_args() && n.arg(i).is_value() ? n.arg(i).value : nullptr;
      return v && v->meta() ? v->meta()->sizes.size() : size_t{0};
    };
    return rank(0) == 2 && rank(1) == 2;
  }
  return op_in(n, ops) || n.op_name() == "passcheck::grouped_mm_weight_grad";
}

// A collective that maps a partial sum to a partial sum: its wait, and an all_reduce
// that sums or averages (all_reduce(a0) + all_reduce(a1) is all_reduce(a0 + a1) up to
// rounding, which is what each half's own collective computes in eager chunking).
bool is_linear_collective(const ir::Node& n) {
  if (n.op() == "_c10d_functional::wait_tensor") return true;
  if (n.op() != "_c10d_functional::all_reduce" || n.num_args() < 2 || n.arg(1).kind != ir::Arg::Kind::String) return false;
  return n.arg(1).str() == "sum" || n.arg(1).str() == "avg";
}

bool is_view_like(const ir::Node& n) {
  static constexpr std::string_view ops[] = {"view", "_unsafe_view", "reshape", "_reshape_alias"};
  return op_in(n, ops);
}

class ChunkRewriter {
 public:
  ChunkRewriter(ir::Graph& graph, const check::PassOptions& options) : graph_(graph), d_(result_, options) {
    unchained_buffer_updates_ = d_.injected("unchained-buffer-updates");
    mode_ = options.get("mode");
    patterns_ = options.get_list("modules");
    early_accumulation_ = options.get_bool("early-accumulation");
    if (patterns_.empty()) throw ChunkError("no module pattern given (option modules)");
    symbol_ = choose_symbol(options.get("symbol"));
    half_ = {{symbol_, sym::floordiv(Expr::symbol(symbol_), Expr::constant(2))}};
    hints_ = graph_.symbol_hints();
  }

  check::PassResult run() {
    std::vector<Region> regions;
    try {
      regions = find_regions();
      for (Region& r : regions) rewrite_region(r);
    } catch (const ChunkError& e) {
      throw check::RefusedInput(e.what(), result_);
    }
    check::PassResult& result = result_;
    result.changed = !regions.empty();
    result.stats["regions"] = static_cast<int64_t>(regions.size());
    result.stats["split_live_ins"] = splits_;
    result.stats["chunked_nodes"] = chunked_nodes_;
    result.stats["materialized_cat"] = materialized_cat_;
    result.stats["materialized_add"] = materialized_add_;
    result.stats["early_accumulations"] = early_accumulations_;
    result.stats["mutation_chains"] = mutation_chains_;
    result.stats["claims"] = claims_;
    result.stats["duplicate_claims"] = duplicate_claims_;
    return result;
  }

 private:
  std::string choose_symbol(const std::string& requested) const {
    if (!requested.empty()) {
      const sym::Symbol* s = graph_.find_symbol(requested);
      if (!s) throw ChunkError("the graph declares no symbol " + requested);
      check_symbol(*s);
      return requested;
    }
    if (graph_.symbols().empty())
      throw ChunkError("the graph has no symbolic dimension: trace it with the chunked dimension marked symbolic "
                       "(passcheck trace --symbolic batch|seq, passcheck chunk) or declare one with a 'symbol' line");
    if (graph_.symbols().size() > 1)
      throw ChunkError("the graph declares " + std::to_string(graph_.symbols().size()) +
                       " symbols; name the chunk symbol with option symbol");
    check_symbol(graph_.symbols()[0]);
    return graph_.symbols()[0].name;
  }

  static void check_symbol(const sym::Symbol& s) {
    if (s.hint < 2 || s.hint % 2 != 0)
      throw ChunkError("chunk symbol " + s.to_string() + ": the hint must be even and at least 2");
    if (s.multiple_of % 2 != 0)
      throw ChunkError("chunk symbol " + s.to_string() + " is not declared a multiple of 2, so its halves are not "
                       "equal for every value in range");
  }

  std::optional<std::string> root_of(const ir::Node& n) const {
    for (const std::string& p : patterns_)
      if (auto root = check::fqn_pattern_root(n.meta().module_fqn, p)) return root;
    return std::nullopt;
  }

  std::vector<Region> find_regions() {
    std::vector<Region> forward, backward;
    std::map<std::pair<std::string, Direction>, size_t> index;
    for (ir::Node* n : graph_.nodes()) {
      const ir::Phase phase = n->meta().phase;
      if (phase != ir::Phase::Forward && phase != ir::Phase::Backward) continue;
      auto root = root_of(*n);
      if (!root) continue;
      const Direction dir = phase == ir::Phase::Forward ? Direction::Forward : Direction::Backward;
      auto key = std::make_pair(*root, dir);
      auto& list = dir == Direction::Forward ? forward : backward;
      auto it = index.find(key);
      if (it == index.end()) {
        it = index.emplace(key, list.size()).first;
        list.push_back(Region{*root, dir, {}});
      }
      list[it->second].nodes.push_back(n);
      node_root_[n] = *root;
    }
    if (forward.empty() && backward.empty()) {
      std::set<std::string> fqns;  // the first two components are enough to show the module tree
      for (const ir::Node* n : graph_.nodes()) {
        const std::string& f = n->meta().module_fqn;
        const size_t first = f.find('.');
        if (!f.empty()) fqns.insert(first == std::string::npos ? f : f.substr(0, f.find('.', first + 1)));
      }
      std::string known;
      for (const std::string& f : fqns) known += (known.empty() ? "" : ", ") + f;
      throw ChunkError("no module matches the pattern(s) " + join(patterns_) + " (module FQNs in the graph: " +
                       (known.empty() ? "none" : known) + ")");
    }
    if (mode_ == "seq")
      for (const auto* list : {&forward, &backward})
        for (const Region& r : *list)
          for (const ir::Node* n : r.nodes)
            if (d_.refuse("seq-through-attention", has_component(n->meta().module_fqn, "attention")))
              throw ChunkError("seq chunking through attention is not supported: region " + r.root + " contains " +
                               n->meta().module_fqn + " (chunk the MoE layers, pattern layers.*.moe)");
    forward.insert(forward.end(), backward.begin(), backward.end());
    return forward;
  }

  static bool has_component(const std::string& fqn, const std::string& component) {
    size_t start = 0;
    while (start <= fqn.size()) {
      size_t dot = fqn.find('.', start);
      if (fqn.substr(start, dot == std::string::npos ? std::string::npos : dot - start) == component) return true;
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    return false;
  }

  static std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
    return out;
  }

  // Dimensions of a value's shape whose size mentions the chunk symbol.
  std::vector<size_t> chunk_dims(const ir::Value* v) const {
    std::vector<size_t> dims;
    if (!v->meta()) return dims;
    const ir::TensorMeta& m = *v->meta();
    for (size_t d = 0; d < m.sym_sizes().size(); ++d)
      if (m.sym_sizes()[d].contains_symbol(symbol_)) dims.push_back(d);
    return dims;
  }

  bool mentions_symbol(const ir::Node& n) const {
    bool found = false;
    for (const ir::Arg& a : n.args())
      a.for_each_symbolic([&](const Expr& e) { found = found || e.contains_symbol(symbol_); });
    for (const ir::Value* out : n.outputs())
      if (out->meta() && out->meta()->free_symbols().count(symbol_)) found = true;
    return found;
  }

  std::string describe(const ir::Node& n) const {
    return (n.num_outputs() ? "%" + n.output()->name() : std::string("()")) + " = " + n.op();
  }

  // One claim per distinct statement: the 6 layers' reshapes repeat the same few facts,
  // and proving each copy again would only multiply solver time.
  void claim(const std::string& kind, const std::string& subject, const std::string& description, const Expr& condition) {
    if (!claimed_.insert({kind, condition.to_string()}).second) {
      ++duplicate_claims_;
      return;
    }
    graph_.add_claim(sym::Claim{kind, "chunk", subject, description, condition, {}});
    ++claims_;
  }

  Expr halve(const Expr& e) const { return sym::substitute(e, half_); }

  ir::Arg halve(const ir::Arg& a) const {
    if (a.kind == ir::Arg::Kind::Sym) return ir::Arg::symbolic(halve(a.expr()));
    if (a.kind == ir::Arg::Kind::List) {
      ir::Arg out = a;
      for (ir::Arg& item : out.mutable_list()) item = halve(item);
      return out;
    }
    return a;
  }

  std::optional<ir::TensorMeta> halve(const std::optional<ir::TensorMeta>& meta) const {
    if (!meta || !meta->is_symbolic()) return meta;
    ir::TensorMeta m = *meta;
    std::vector<Expr> sizes, strides;
    for (const Expr& e : meta->size_exprs()) sizes.push_back(halve(e));
    for (const Expr& e : meta->stride_exprs()) strides.push_back(halve(e));
    m.set_symbolic(std::move(sizes), std::move(strides), hints_);
    return m;
  }

  void mark(ir::Node* n, const std::string& root, const std::string& role, int chunk, const std::string& orig) {
    auto& c = n->mutable_meta().custom;
    c["chunk_region"] = root;
    c["chunk_role"] = role;
    if (chunk >= 0) c["chunk_id"] = std::to_string(chunk);
    c["chunk_orig"] = orig;
  }

  // Creates the two halves of live-in `v` right before `before`.
  std::pair<ir::Value*, ir::Value*> split_live_in(ir::Value* v, size_t dim, const Region& region, ir::Node* before) {
    const ir::TensorMeta& m = *v->meta();
    const Expr extent = m.size_expr(dim);
    const Expr half = sym::floordiv(extent, Expr::constant(2));
    const int64_t extent_at_hint = m.sizes[dim];
    if (d_.refuse("odd-live-in", extent_at_hint % 2 != 0))
      throw ChunkError("live-in %" + v->name() + " of region " + region.root + " has odd size " +
                       std::to_string(extent_at_hint) + " (sym(" + extent.to_string() + ")) in chunk dim " +
                       std::to_string(dim) + " at the hint");
    const std::string subject = "%" + v->name() + " dim " + std::to_string(dim) + " in " + region.root;
    claim("split_halves", subject, "the two halves of the split add up to the extent", sym::eq(half + half, extent));
    claim("nonnegative", subject, "the half extent is at least 1", sym::ge(half, Expr::constant(1)));
    claim("assumed_equal", subject, "the half extent equals the extent with the symbol halved (body shapes use the latter)",
          sym::eq(half, halve(extent)));

    ir::Node* split = graph_.create(
        "aten::split_with_sizes",
        {ir::Arg::of(v), ir::Arg::of_list({ir::Arg::symbolic(half), ir::Arg::symbolic(half)}),
         ir::Arg::integer(static_cast<int64_t>(dim))},
        before);
    split->mutable_meta().phase = region.direction == Direction::Forward ? ir::Phase::Forward : ir::Phase::Backward;
    split->mutable_meta().module_fqn = region.root;
    mark(split, region.root, "split_boundary", -1, v->name());
    std::vector<Expr> sizes = m.size_exprs();
    sizes[dim] = half;
    ir::TensorMeta half_meta = m;
    half_meta.set_symbolic(sizes, m.stride_exprs(), hints_);
    const bool contiguous = half_meta.strides == ir::TensorMeta::contiguous_strides(half_meta.sizes);
    std::pair<ir::Value*, ir::Value*> halves;
    for (int chunk = 0; chunk < 2; ++chunk) {
      ir::Value* part = split->add_output(ir::ValueType::Tensor, half_meta,
                                          v->name() + "_split" + std::to_string(chunk));
      if (!contiguous) {
        d_.fire("clone-non-contiguous-half");
        ir::Node* clone = graph_.create("aten::clone", {ir::Arg::of(part), ir::Arg::memory_format(c10::MemoryFormat::Contiguous)},
                                        before);
        clone->mutable_meta() = split->meta();
        mark(clone, region.root, "split_boundary", chunk, v->name());
        ir::TensorMeta contiguous_meta = half_meta;
        contiguous_meta.set_symbolic(sizes, ir::TensorMeta::contiguous_stride_exprs(sizes), hints_);
        part = clone->add_output(ir::ValueType::Tensor, contiguous_meta, v->name() + "_chunk" + std::to_string(chunk));
      }
      (chunk == 0 ? halves.first : halves.second) = part;
      split_source_[part] = v;
    }
    ++splits_;
    d_.fire("split-live-in");
    return halves;
  }

  // A view whose output carries the symbol in a dimension for which its size argument
  // holds a plain constant would reshape a half into the full extent.
  void check_view(const ir::Node& n, const Region& region) {
    if (!is_view_like(n) || n.num_args() < 2 || n.arg(1).kind != ir::Arg::Kind::List) return;
    const ir::Value* out = n.output();
    const ir::Arg& sizes = n.arg(1);
    for (size_t d : chunk_dims(out)) {
      if (d >= sizes.list().size()) continue;
      const ir::Arg& entry = sizes.list()[d];
      if (d_.refuse("baked-reshape-size", entry.kind == ir::Arg::Kind::Int && entry.i != -1))
        throw ChunkError("reshape " + describe(n) + " in region " + region.root + " has the constant size " +
                         std::to_string(entry.i) + " in dim " + std::to_string(d) + ", where its result carries " +
                         symbol_ + ": a baked size cannot follow the chunk");
    }
    // Element count preserved by the halved reshape (needs every size explicit).
    const ir::Value* in = n.arg(0).is_value() ? n.arg(0).value : nullptr;
    const ir::TensorMeta* in_meta = in ? full_meta(in) : nullptr;
    if (!in_meta) return;
    Expr in_numel = Expr::constant(1), out_numel = Expr::constant(1);
    for (const Expr& e : in_meta->size_exprs()) in_numel = in_numel * e;
    for (const ir::Arg& entry : sizes.list()) {
      auto e = entry.as_int_expr();
      if (!e || (e->as_constant() && *e->as_constant() == -1)) return;
      out_numel = out_numel * *e;
    }
    if (!in_numel.contains_symbol(symbol_)) return;
    claim("numel_preserved", describe(n) + " in " + region.root, "the chunked reshape keeps the element count",
          sym::eq(halve(in_numel), halve(out_numel)));
  }

  // Values a region may read per chunk: its own body, its split live-ins, and (for a
  // backward region) the same root's forward body and splits.
  using ChunkMap = std::unordered_map<const ir::Value*, std::pair<ir::Value*, ir::Value*>>;

  void rewrite_region(Region& region) {
    ChunkMap& per_chunk = per_chunk_[region.root];
    std::unordered_set<const ir::Node*> in_region(region.nodes.begin(), region.nodes.end());
    std::vector<ir::Value*> body_outputs;
    std::unordered_map<const ir::Value*, ir::Node*> chunk1_of;  // body output -> chunk 1 producer
    std::unordered_map<const ir::Value*, ir::Value*> chunk1_value;
    std::unordered_map<const ir::Value*, ir::Node*> mutation_of_state;  // shared state -> its writer
    std::unordered_map<const ir::Value*, ir::Node*> first_reader;       // shared value -> first body reader
    std::unordered_map<const ir::Value*, const ir::Value*> state_of_alias;  // in-place result -> its state
    random_node_ = nullptr;

    for (ir::Node* n : region.nodes) {
      // Reads of shared values, for read-before-update; a node's read of the value it
      // writes in place is part of its update, not a read before it.
      const auto writes = exec::is_mutating(*n) ? exec::written_values(*n) : std::nullopt;
      for (ir::Value* v : n->operands()) {
        if (per_chunk.count(v) || (writes && std::count(writes->begin(), writes->end(), v))) continue;
        auto alias = state_of_alias.find(v);
        first_reader.emplace(alias == state_of_alias.end() ? v : alias->second, n);
      }
      // Direction check and live-in classification.
      bool reads_chunked = false;
      std::vector<std::pair<ir::Value*, size_t>> to_split;
      for (ir::Value* v : n->operands()) {
        if (d_.refuse("forward-reads-backward", region.direction == Direction::Forward && !v->is_graph_input() &&
                                                    v->producer()->meta().phase == ir::Phase::Backward))
          throw ChunkError("body node " + describe(*n) + " of forward region " + region.root +
                           " reads %" + v->name() + " from the backward");
        if (per_chunk.count(v)) {
          reads_chunked = true;
          continue;
        }
        std::vector<size_t> dims = chunk_dims(v);
        if (dims.empty()) continue;
        if (d_.refuse("multi-dim-live-in", dims.size() > 1))
          throw ChunkError("live-in %" + v->name() + " of region " + region.root + " carries " + symbol_ +
                           " in " + std::to_string(dims.size()) + " dimensions (" +
                           ir::format_int_list(std::vector<int64_t>(dims.begin(), dims.end())) +
                           "): only one chunked dimension is supported");
        if (d_.refuse("static-input-split", v->is_graph_input() && v->role() != ir::InputRole::Argument))
          throw ChunkError("live-in %" + v->name() + " of region " + region.root + " is module state carrying " +
                           symbol_ + ": static inputs are never split");
        to_split.emplace_back(v, dims[0]);
        reads_chunked = true;
      }
      // Shared state written in place by the body: one update per chunk, chained. Checked
      // before deciding whether the node is duplicated: eager chunking runs every update of
      // the region once per chunk, so an update must be a chunked body node.
      ir::Value* state = nullptr;
      if (exec::is_mutating(*n)) {
        auto written = exec::written_values(*n);
        const bool self_in_place = written && written->size() == 1 && !n->op_base().empty() &&
                                   n->op_base().back() == '_' && n->arg(0).is_value() &&
                                   n->arg(0).value == (*written)[0];
        if (d_.refuse("unsupported-in-place", !self_in_place))
          throw ChunkError("body node " + describe(*n) + " of region " + region.root +
                           " writes its inputs in a form the chunk pass does not support (only self in-place ops)");
        if (self_in_place && !per_chunk.count((*written)[0])) {
          state = (*written)[0];
          // An in-place result aliases the state it wrote: `s.mul_(a).add_(b)` updates s twice.
          auto alias = state_of_alias.find(state);
          const ir::Value* root = alias == state_of_alias.end() ? state : alias->second;
          if (d_.refuse("state-updated-twice", mutation_of_state.count(root) > 0))
            throw ChunkError("region " + region.root + " updates %" + root->name() + " more than once (" +
                             describe(*mutation_of_state[root]) + " and " + describe(*n) +
                             "); interleaved chunk bodies support one in-place update per state");
          // Per-chunk execution lets chunk 1 read what chunk 0 wrote; interleaved bodies
          // read the state before either update (duplicated or not, a reader runs first).
          auto reader = first_reader.find(root);
          if (d_.refuse("read-before-update", reader != first_reader.end() && reader->second != n))
            throw ChunkError("body node " + describe(*reader->second) + " of region " + region.root + " reads %" +
                             root->name() + " before " + describe(*n) + " updates it in place; per-chunk execution "
                             "would give chunk 1 the updated value, interleaved chunks would not");
          if (d_.refuse("update-runs-once", !reads_chunked && !mentions_symbol(*n)))
            throw ChunkError("body node " + describe(*n) + " of region " + region.root + " updates %" +
                             root->name() + " in place without reading chunked values: eager chunking runs it "
                             "once per chunk, the chunked graph would run it once");
          mutation_of_state[root] = n;
          for (ir::Value* out : n->outputs()) state_of_alias[out] = root;
        }
      }
      // Widened: region nodes that only prepare parameters are chunked too.
      if (!reads_chunked && !mentions_symbol(*n) && !d_.widened("duplicate-body")) continue;
      for (auto& [v, dim] : to_split)
        if (!per_chunk.count(v)) per_chunk[v] = split_live_in(v, dim, region, n);
      if (n->num_outputs() && n->output()->type() != ir::ValueType::Tensor)
        for (ir::Value* out : n->outputs())
          if (d_.refuse("scalar-body-output",
                        out->type() != ir::ValueType::Tensor && out->type() != ir::ValueType::None))
            throw ChunkError("body node " + describe(*n) + " of region " + region.root +
                             " produces a non-tensor value; symbolic scalars in chunk bodies are not supported");
      check_view(*n, region);
      if (exec::is_random(*n)) {
        // Interleaved chunk bodies draw c0, c1, c0, c1 where per-chunk execution draws
        // c0, c0, c1, c1: with two random ops the streams would differ.
        if (d_.refuse("second-random-op", random_node_ != nullptr))
          throw ChunkError("region " + region.root + " draws random numbers in " + describe(*random_node_) + " and " +
                           describe(*n) + ": interleaved chunk bodies support one random op per region");
        random_node_ = n;
      }

      for (ir::Value* v : n->operands()) {
        auto alias = state_of_alias.find(v);
        const ir::Value* root = alias == state_of_alias.end() ? v : alias->second;
        if (d_.refuse("read-after-update", mutation_of_state.count(root) && mutation_of_state[root] != n))
          throw ChunkError("body node " + describe(*n) + " of region " + region.root + " reads %" + v->name() +
                           " after " + describe(*mutation_of_state[root]) + " updated it in place; interleaved "
                           "chunks would read the other chunk's update");
      }

      for (ir::Value* out : n->outputs()) {
        if (out->meta()) original_meta_[out] = *out->meta();
        original_name_[out] = out->name();
      }
      const std::vector<std::string> names = [&] {
        std::vector<std::string> v;
        for (ir::Value* out : n->outputs()) v.push_back(out->name());
        return v;
      }();
      auto chunk_value = [&](int chunk) {
        return [&, chunk](ir::Value* v) -> ir::Value* {
          auto it = per_chunk.find(v);
          if (it == per_chunk.end()) return v;
          return chunk == 0 ? it->second.first : it->second.second;
        };
      };
      // Chunk 1: a copy right after the original.
      ir::Node* c1 = graph_.clone_node(*n, chunk_value(1), n->next(), "_chunk1");
      std::vector<ir::Arg> args1;
      for (const ir::Arg& a : c1->args()) args1.push_back(halve(a));
      // Widened: chunk 1's in-place update of its own per-chunk value reads chunk 0's too.
      if (state || (d_.widened("chain-mutation") && exec::is_mutating(*n) && n->num_outputs() > 0)) {
        if (!unchained_buffer_updates_) {
          args1[0] = ir::Arg::of(n->output(0));
          ++mutation_chains_;
          d_.fire("chain-mutation");
        }
      }
      c1->set_args(std::move(args1));
      // Chunk 0: the original, rewritten in place.
      std::vector<ir::Arg> args0;
      std::function<ir::Arg(const ir::Arg&)> remap0 = [&](const ir::Arg& a) -> ir::Arg {
        if (a.is_value()) return ir::Arg::of(chunk_value(0)(a.value));
        if (a.kind == ir::Arg::Kind::List) {
          ir::Arg out = a;
          for (ir::Arg& item : out.mutable_list()) item = remap0(item);
          return out;
        }
        return halve(a);
      };
      for (const ir::Arg& a : n->args()) args0.push_back(remap0(a));
      n->set_args(std::move(args0));
      for (size_t i = 0; i < n->num_outputs(); ++i) {
        ir::Value* out = n->output(i);
        out->set_meta(halve(out->meta()));
        c1->output(i)->set_meta(halve(c1->output(i)->meta()));
        graph_.rename(out, graph_.unique_name(names[i] + "_chunk0"));
        per_chunk[out] = {out, c1->output(i)};
        chunk1_of[out] = c1;
        chunk1_value[out] = c1->output(i);
        body_outputs.push_back(out);
      }
      mark(n, region.root, "body", 0, names.empty() ? n->op() : names[0]);
      mark(c1, region.root, "body", 1, names.empty() ? n->op() : names[0]);
      chunked_nodes_ += 1;
      d_.fire("duplicate-body");
    }

    for (ir::Value* v : body_outputs) {
      auto external = [&](const ir::Use& u) {
        if (u.is_graph_output()) return true;
        auto it = node_root_.find(u.user);
        if (it != node_root_.end() && it->second == region.root) return false;
        // Nodes the pass created for this root (splits, copies, materializations).
        auto c = u.user->meta().custom.find("chunk_region");
        return c == u.user->meta().custom.end() || c->second != region.root;
      };
      if (std::none_of(v->uses().begin(), v->uses().end(), external)) continue;
      materialize(v, chunk1_value.at(v), chunk1_of.at(v), region, external);
    }
  }

  void materialize(ir::Value* v0, ir::Value* v1, ir::Node* after, const Region& region,
                   const std::function<bool(const ir::Use&)>& external) {
    const std::string orig = original_name_.at(v0);
    auto meta_it = original_meta_.find(v0);
    if (d_.refuse("live-out-without-meta", meta_it == original_meta_.end() || v0->type() != ir::ValueType::Tensor))
      throw ChunkError("live-out %" + v0->name() + " of region " + region.root + " is not a tensor with metadata");
    if (meta_it == original_meta_.end()) return;  // the guard disabled: left unmaterialized
    const ir::TensorMeta& full = meta_it->second;
    std::vector<size_t> dims;
    for (size_t d = 0; d < full.sym_sizes().size(); ++d)
      if (full.sym_sizes()[d].contains_symbol(symbol_)) dims.push_back(d);
    if (d_.refuse("multi-dim-live-out", dims.size() > 1))
      throw ChunkError("live-out %" + orig + " of region " + region.root + " carries " + symbol_ + " in " +
                       std::to_string(dims.size()) + " dimensions: cannot materialize it by cat");
    ir::Node* m = nullptr;
    // Widened cat: a live-out without the chunk dimension is concatenated on dim 0.
    const bool widened_cat = dims.empty() && !full.sizes.empty() && d_.widened("materialize-cat");
    // Widened add: a live-out carrying the chunk dimension is added (historical bug 10).
    const bool widened_add = !dims.empty() && d_.widened("materialize-add");
    if ((!dims.empty() || widened_cat) && !widened_add) {
      const size_t d = dims.empty() ? 0 : dims[0];
      const Expr extent = full.size_expr(d);
      claim("cat_extent", "%" + orig + " dim " + std::to_string(d) + " in " + region.root,
            "cat of the two chunks restores the full extent", sym::eq(halve(extent) + halve(extent), extent));
      m = graph_.create("aten::cat", {ir::Arg::of_list({ir::Arg::of(v0), ir::Arg::of(v1)}),
                                      ir::Arg::integer(static_cast<int64_t>(d))},
                        after->next());
      ir::TensorMeta meta = full;
      meta.set_symbolic(full.size_exprs(), ir::TensorMeta::contiguous_stride_exprs(full.size_exprs()), hints_);
      m->add_output(ir::ValueType::Tensor, meta, orig);
      ++materialized_cat_;
      d_.fire("materialize-cat");
    } else {
      // An add keeps the chunk's extent in every dimension: each must equal the full one.
      for (size_t d : dims)
        claim("materialized_extent", "%" + orig + " dim " + std::to_string(d) + " in " + region.root,
              "the added partials have the full extent", sym::eq(halve(full.size_expr(d)), full.size_expr(d)));
      if (dims.empty()) {
        const Expr reduced_extent = partial_sum_extent(v0, region);
        claim("partial_sum", "%" + orig + " in " + region.root,
              "the two partials are sums over halves that cover the reduced extent",
              sym::eq(halve(reduced_extent) + halve(reduced_extent), reduced_extent));
      }
      // Widened: partials are accumulated early even with early-accumulation=false.
      if (dims.empty() && (early_accumulation_ || d_.widened("early-accumulation")) &&
          region.direction == Direction::Backward &&
          std::all_of(v0->uses().begin(), v0->uses().end(), [&](const ir::Use& u) { return !external(u) || u.is_graph_output(); }) &&
          accumulate_early(v0, v1, region))
        return;
      m = graph_.create("aten::add.Tensor", {ir::Arg::of(v0), ir::Arg::of(v1)}, after->next());
      m->add_output(ir::ValueType::Tensor, full, orig);
      ++materialized_add_;
      d_.fire("materialize-add");
    }
    m->mutable_meta() = v0->producer()->meta();
    m->mutable_meta().recompute = ir::RecomputePolicy::Unset;
    mark(m, region.root, "materialization", -1, orig);
    ir::Value* whole = m->output();
    v0->replace_uses_if(whole, [&](const ir::Use& u) { return u.user != m && external(u); });
  }

  // The extent a no-chunk-dim live-out sums over: walking back through rearrangements
  // to an additive reduction whose input carries the symbol. Anything else (a mean, a
  // max, a product) would not be the sum of its per-chunk partials.
  Expr partial_sum_extent(const ir::Value* v, const Region& region) {
    const ir::Value* cur = v;
    while (true) {
      const ir::Node* p = cur->producer();
      if (is_additive_reduction(*p)) {
        for (const ir::Value* in : p->operands()) {
          auto it = original_input_extent(in);
          if (it) return *it;
        }
        break;
      }
      if (const ir::Value* scaled = scaled_body_operand(*p)) {
        cur = scaled;  // c*a0 + c*a1 = c*(a0 + a1): a scaled partial sum is a partial sum
        continue;
      }
      if (!(is_rearrangement(*p) || is_linear_collective(*p)) || !p->arg(0).is_value()) break;
      cur = p->arg(0).value;
      if (cur->is_graph_input() || cur->producer()->meta().custom.count("chunk_id") == 0) break;
    }
    // Disabled: the live-out is taken for a sum over the whole symbol.
    if (!d_.refuse("not-a-partial-sum", true)) return Expr::symbol(symbol_);
    throw ChunkError("live-out %" + v->name() + " of region " + region.root + " (produced by " +
                     cur->producer()->op() + ") has no " + symbol_ +
                     " dimension and is not a sum over it: it cannot be materialized by cat or by add");
  }

  // Metadata of a value before chunking: body outputs and split halves have been
  // halved in place, the rest never changes.
  const ir::TensorMeta* full_meta(const ir::Value* v) const {
    if (auto it = original_meta_.find(v); it != original_meta_.end()) return &it->second;
    if (auto half = split_source_.find(v); half != split_source_.end()) v = half->second;
    return v->meta() ? &*v->meta() : nullptr;
  }

  // For a mul/div of exactly one body value by values shared by both chunks (a
  // parameter-derived factor), that body value; else null.
  static const ir::Value* scaled_body_operand(const ir::Node& n) {
    const std::string op = n.op_base();
    if (op != "mul" && op != "div") return nullptr;
    const ir::Value* body = nullptr;
    for (size_t i = 0; i < n.num_operands(); ++i) {
      const ir::Value* v = n.operand(i);
      const bool per_chunk = !v->is_graph_input() && v->producer()->meta().custom.count("chunk_id") > 0;
      if (!per_chunk) continue;
      if (body || (op == "div" && i != 0)) return nullptr;  // two body factors, or a body divisor
      body = v;
    }
    return body;
  }

  // The full (unhalved) extent in the chunk dimension of a body value or split half.
  std::optional<Expr> original_input_extent(const ir::Value* in) const {
    const ir::TensorMeta* full = full_meta(in);
    if (!full) return std::nullopt;
    for (const Expr& e : full->sym_sizes())
      if (e.contains_symbol(symbol_)) return e;
    return std::nullopt;
  }

  // Early gradient accumulation: add the two partials right after the reduction (or
  // after a widening cast, to accumulate in the wider dtype), and run the rest of the
  // gradient chain once on the sum. Returns false when the chain has another shape.
  bool accumulate_early(ir::Value* v0, ir::Value* v1, const Region& region) {
    // The chain by values, not nodes: a multi-output reduction (native_layer_norm_backward)
    // must accumulate the output the chain follows (the weight gradient), not its first
    // one (the input gradient, which carries the chunk dimension).
    std::vector<ir::Node*> chain0, chain1;
    std::vector<ir::Value*> values0, values1;
    ir::Value* a = v0;
    ir::Value* b = v1;
    while (true) {
      ir::Node* p0 = a->producer();
      ir::Node* p1 = b->producer();
      if (p0->meta().custom.count("chunk_id") == 0 || p1->meta().custom.count("chunk_id") == 0) return false;
      chain0.push_back(p0);
      chain1.push_back(p1);
      values0.push_back(a);
      values1.push_back(b);
      if (is_additive_reduction(*p0)) break;
      if (!is_rearrangement(*p0) || !p0->arg(0).is_value() || !p1->arg(0).is_value()) return false;
      a = p0->arg(0).value;
      b = p1->arg(0).value;
      if (a->is_graph_input() || b->is_graph_input() || a->uses().size() != 1 || b->uses().size() != 1) return false;
    }
    std::reverse(chain0.begin(), chain0.end());  // reduction first
    std::reverse(chain1.begin(), chain1.end());
    std::reverse(values0.begin(), values0.end());
    std::reverse(values1.begin(), values1.end());
    // Accumulate in the widest dtype the chain reaches before any narrowing: after a
    // widening cast, before a narrowing one.
    size_t point = 0;
    for (size_t i = 1; i < chain0.size(); ++i) {
      const auto& in = values0[i - 1]->meta();
      const auto& out = values0[i]->meta();
      if (!in || !out) break;
      if (ir::dtype_size(out->dtype) < ir::dtype_size(in->dtype)) break;
      if (ir::dtype_size(out->dtype) > ir::dtype_size(in->dtype)) point = i;
    }
    ir::Value* p0 = values0[point];
    ir::Value* p1 = values1[point];
    ir::Node* add = graph_.create("aten::add.Tensor", {ir::Arg::of(p0), ir::Arg::of(p1)}, chain1[point]->next());
    add->mutable_meta() = chain0[point]->meta();
    add->mutable_meta().custom.erase("chunk_id");
    mark(add, region.root, "materialization", -1, original_name_.at(v0));
    add->mutable_meta().custom["chunk_early_accumulation"] = "1";
    ir::Value* sum = add->add_output(ir::ValueType::Tensor, p0->meta(), p0->name() + "_accumulated");
    p0->replace_uses_if(sum, [&](const ir::Use& u) { return u.user != add; });
    d_.fire("early-accumulation");
    // Chunk 1's rest of the chain is now dead; erase it from the end. Chunk 0's copy
    // runs once, on the sum: it is part of the materialization now, not of chunk 0.
    for (size_t i = chain1.size(); i-- > point + 1;) {
      if (chain1[i]->has_users()) return true;  // kept: something else reads it
      graph_.erase(chain1[i]);
      chain0[i]->mutable_meta().custom.erase("chunk_id");
      chain0[i]->mutable_meta().custom["chunk_role"] = "materialization";
    }
    ++early_accumulations_;
    ++materialized_add_;
    return true;
  }

  ir::Graph& graph_;
  check::PassResult result_;
  check::Decisions d_;  // counts into result_
  std::string mode_;
  std::vector<std::string> patterns_;
  bool early_accumulation_ = true;
  // Injected historical bug 10: chunk 1's buffer update does not read chunk 0's result.
  bool unchained_buffer_updates_ = false;
  std::string symbol_;
  std::map<std::string, Expr> half_;
  std::map<std::string, int64_t> hints_;
  std::unordered_map<const ir::Node*, std::string> node_root_;
  const ir::Node* random_node_ = nullptr;  // the body's random op, in the region being rewritten
  std::set<std::pair<std::string, std::string>> claimed_;  // (kind, condition text)
  // Body outputs before halving, and the live-in each split half comes from.
  std::unordered_map<const ir::Value*, ir::TensorMeta> original_meta_;
  std::unordered_map<const ir::Value*, std::string> original_name_;
  std::unordered_map<const ir::Value*, const ir::Value*> split_source_;
  std::map<std::string, ChunkMap> per_chunk_;
  int64_t splits_ = 0, chunked_nodes_ = 0, materialized_cat_ = 0, materialized_add_ = 0, early_accumulations_ = 0,
          mutation_chains_ = 0, claims_ = 0, duplicate_claims_ = 0;
};

}  // namespace

check::PassResult chunk_pass(ir::Graph& graph, const check::PassOptions& options) {
  return ChunkRewriter(graph, options).run();
}

}  // namespace passcheck::passes
