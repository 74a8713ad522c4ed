// Random chained all_gathers and their property (chained_allgathers.h). Every view's
// output metadata comes from running the view on a meta tensor, so the graph carries
// exactly the sizes and strides the executor will see.
#include "generators/chained_allgathers.h"

#include "framework/check/compare.h"
#include "framework/check/pipeline.h"
#include "framework/dist/sim.h"
#include "framework/exec/executor.h"
#include "framework/ir/text.h"
#include "framework/sym/prover.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>

namespace passcheck::gen {

namespace {

ir::TensorMeta meta_of(const at::Tensor& t) {
  ir::TensorMeta m;
  m.sizes = t.sizes().vec();
  m.strides = t.strides().vec();
  m.dtype = c10::ScalarType::Float;
  return m;
}

at::Tensor meta_tensor(const std::vector<int64_t>& sizes) {
  return at::empty(sizes, at::TensorOptions().dtype(at::kFloat).device(at::kMeta));
}

// One view step: the node to emit and what it does to a meta tensor.
struct View {
  std::string op;
  std::vector<ir::Arg> args;  // after self
  std::function<at::Tensor(const at::Tensor&)> apply;
};

View permute(std::vector<int64_t> p) {
  return {"aten::permute", {ir::Arg::int_list(p)}, [p](const at::Tensor& t) { return t.permute(p); }};
}
View transpose(int64_t a, int64_t b) {
  return {"aten::transpose.int", {ir::Arg::integer(a), ir::Arg::integer(b)},
          [a, b](const at::Tensor& t) { return t.transpose(a, b); }};
}
View t_view() {
  return {"aten::t", {}, [](const at::Tensor& t) { return t.t(); }};
}
View reshape(std::vector<int64_t> s, bool as_view = false) {
  return {as_view ? "aten::view" : "aten::reshape", {ir::Arg::int_list(s)},
          [s, as_view](const at::Tensor& t) { return as_view ? t.view(s) : t.reshape(s); }};
}
View unsqueeze(int64_t d) {
  return {"aten::unsqueeze", {ir::Arg::integer(d)}, [d](const at::Tensor& t) { return t.unsqueeze(d); }};
}
View squeeze(int64_t d) {
  return {"aten::squeeze.dim", {ir::Arg::integer(d)}, [d](const at::Tensor& t) { return t.squeeze(d); }};
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  int64_t below(int64_t n) { return std::uniform_int_distribution<int64_t>(0, n - 1)(engine_); }
  bool chance(int64_t percent) { return below(100) < percent; }
  std::vector<int64_t> real_permutation(int64_t rank) {
    std::vector<int64_t> p(static_cast<size_t>(rank));
    std::iota(p.begin(), p.end(), 0);
    do std::shuffle(p.begin(), p.end(), engine_);
    while (std::is_sorted(p.begin(), p.end()));
    return p;
  }

 private:
  std::mt19937_64 engine_;
};

// A real reorder of a tensor of rank `rank` (>= 2), and its inverse.
std::pair<View, View> reorder_move(Rng& rng, int64_t rank) {
  const int64_t kind = rng.below(3);
  if (kind == 0 || (kind == 2 && rank != 2)) {
    std::vector<int64_t> p = rng.real_permutation(rank), inverse(p.size());
    for (size_t k = 0; k < p.size(); ++k) inverse[static_cast<size_t>(p[k])] = static_cast<int64_t>(k);
    return {permute(p), permute(inverse)};
  }
  if (kind == 1) {
    const int64_t a = rng.below(rank);
    const int64_t b = (a + 1 + rng.below(rank - 1)) % rank;
    return {transpose(a, b), transpose(b, a)};
  }
  return {t_view(), t_view()};
}

// Any move (reorders, a flatten, an unsqueeze) on `t`, and its inverse.
std::pair<View, View> any_move(Rng& rng, const at::Tensor& t) {
  const int64_t rank = t.dim();
  const int64_t kind = rng.below(4);
  if (kind <= 1 && rank >= 2) return reorder_move(rng, rank);
  if (kind == 2) return {reshape({t.numel()}), reshape(t.sizes().vec())};
  const int64_t d = rng.below(rank + 1);
  return {unsqueeze(d), squeeze(d)};
}

struct Spec {
  std::vector<std::pair<std::string, int64_t>> dims;
  std::string g1, g2;  // gathered over g1 first
  std::vector<View> chain;
  std::string options;
  bool first_is_all_reduce = false;
  bool neg_in_chain = false;
  bool return_wait = false, return_chain_value = false;
  std::string description;
};

int64_t size_of(const Spec& s, const std::string& dim) {
  for (const auto& [name, size] : s.dims)
    if (name == dim) return size;
  throw std::logic_error("no dim " + dim);
}

std::string build_text(const Spec& s, const std::vector<int64_t>& input_sizes) {
  ir::Graph g;
  ir::MeshInfo mesh;
  mesh.dims = s.dims;
  g.set_mesh(mesh);
  at::Tensor cur = meta_tensor(input_sizes);
  ir::Value* x = g.add_input("x", ir::ValueType::Tensor, meta_of(cur), ir::InputRole::Parameter);
  auto emit = [&](const std::string& op, std::vector<ir::Arg> args, const at::Tensor& out, const std::string& name) {
    ir::Node* n = g.create(op, std::move(args));
    return n->add_output(ir::ValueType::Tensor, meta_of(out), name);
  };
  auto gathered = [](const at::Tensor& t, int64_t n) {
    std::vector<int64_t> sizes = t.sizes().vec();
    sizes[0] *= n;
    return meta_tensor(sizes);
  };
  ir::Value* first;
  if (s.first_is_all_reduce) {
    first = emit("_c10d_functional::all_reduce", {ir::Arg::of(x), ir::Arg::string("sum"), ir::Arg::string(s.g1)}, cur, "ar");
  } else {
    const int64_t n1 = size_of(s, s.g1);
    cur = gathered(cur, n1);
    first = emit("_c10d_functional::all_gather_into_tensor", {ir::Arg::of(x), ir::Arg::integer(n1), ir::Arg::string(s.g1)}, cur, "ag");
  }
  ir::Value* wait = emit("_c10d_functional::wait_tensor", {ir::Arg::of(first)}, cur, "wait");
  ir::Value* v = wait;
  ir::Value* shared = nullptr;
  for (size_t k = 0; k < s.chain.size(); ++k) {
    std::vector<ir::Arg> args = {ir::Arg::of(v)};
    for (const ir::Arg& a : s.chain[k].args) args.push_back(a);
    cur = s.chain[k].apply(cur);
    v = emit(s.chain[k].op, std::move(args), cur, "v");
    if (k == 0) shared = v;
    if (k == 0 && s.neg_in_chain) {
      cur = cur.neg();
      v = emit("aten::neg", {ir::Arg::of(v)}, cur, "neg");
    }
  }
  const int64_t n2 = size_of(s, s.g2);
  // A gather reads its input as laid out; what it returns is contiguous.
  const at::Tensor out = gathered(cur.contiguous(), n2);
  ir::Value* ag2 = emit("_c10d_functional::all_gather_into_tensor", {ir::Arg::of(v), ir::Arg::integer(n2), ir::Arg::string(s.g2)}, out, "ag2");
  g.add_output(emit("_c10d_functional::wait_tensor", {ir::Arg::of(ag2)}, out, "out"));
  if (s.return_wait) g.add_output(wait);
  if (s.return_chain_value && shared) g.add_output(shared);
  return g.print();
}

std::string options_text(const std::string& full, const std::string& order, const std::string& column_major) {
  std::vector<std::string> items;
  if (!full.empty()) items.push_back("full-group=" + full);
  if (!order.empty()) items.push_back("subgroup-order=\"" + order + "\"");
  if (!column_major.empty()) items.push_back("column-major-group=" + column_major);
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "{" : ",") + i;
  return out.empty() ? "" : out + "}";
}

}  // namespace

ChainedGatherCase generate_chained_allgathers(uint64_t seed) {
  Rng rng(seed);
  Spec s;
  const std::vector<std::string> names = {"dp", "tp", "ep"};
  const int64_t ndims = rng.chance(25) ? 3 : 2;
  for (int64_t k = 0; k < ndims; ++k) s.dims.push_back({names[static_cast<size_t>(k)], 2 + rng.below(2)});
  // The two chained dims, in mesh order (major, minor).
  int64_t major = 0, minor = 1;
  if (ndims == 3) {
    major = rng.below(2);
    minor = major + 1 + rng.below(2 - major);
  }
  const std::string d0 = s.dims[static_cast<size_t>(major)].first, d1 = s.dims[static_cast<size_t>(minor)].first;
  // The variant first: some situations decide the direction and the first collective.
  const int64_t variant = rng.below(100);
  const int64_t situation = variant >= 65 ? rng.below(9) : -1;
  const bool ascending = situation == 7 || rng.chance(50);
  s.g1 = ascending ? d0 : d1;
  s.g2 = ascending ? d1 : d0;
  const std::string full = ndims == 3 ? d0 + "_" + d1 : "";
  std::string order = d0 + "," + d1, column_major = d1 + "_" + d0;
  // Without an order the pass assumes a descending chain: only those go without one.
  if (!ascending && rng.chance(30)) {
    order.clear();
    column_major.clear();
  }

  std::vector<int64_t> input_sizes = {1 + rng.below(2), 2 + rng.below(2)};
  if (rng.chance(25)) input_sizes.push_back(2);
  std::vector<int64_t> wait_sizes = input_sizes;
  if (situation != 4) wait_sizes[0] *= size_of(s, s.g1);  // 4: an all_reduce keeps the shape
  const at::Tensor wait = meta_tensor(wait_sizes);

  if (variant < 30) {
    // An identity chain: moves, then their inverses in reverse order.
    s.description = "identity chain";
    std::vector<std::pair<View, View>> moves = {reorder_move(rng, wait.dim())};
    at::Tensor t = moves[0].first.apply(wait);
    for (int64_t k = rng.below(3); k > 0; --k) {
      moves.push_back(any_move(rng, t));
      t = moves.back().first.apply(t);
    }
    for (const auto& m : moves) s.chain.push_back(m.first);
    for (auto it = moves.rbegin(); it != moves.rend(); ++it) s.chain.push_back(it->second);
  } else if (variant < 45) {
    // Upstream's trap: a reorder, a copying flatten, a view back (bug 13).
    s.description = "reorder, flatten, view back";
    s.chain = {reorder_move(rng, wait.dim()).first, reshape({wait.numel()}), reshape(wait.sizes().vec(), true)};
  } else if (variant < 55) {
    // Reorders that need not cancel, then back to the shape of the source.
    s.description = "reorders, reshape back";
    at::Tensor t = wait;
    for (int64_t k = 1 + rng.below(2); k > 0; --k) {
      s.chain.push_back(reorder_move(rng, t.dim()).first);
      t = s.chain.back().apply(t);
    }
    if (t.sizes() != wait.sizes() || rng.chance(50)) s.chain.push_back(reshape(wait.sizes().vec()));
  } else if (variant < 65) {
    s.description = "direct chain";
  } else {
    // Situations the pass must refuse (or, for a mutant, may get wrong).
    s.chain = {reorder_move(rng, wait.dim()).first};
    s.chain.push_back(s.chain[0].op == "aten::t" ? t_view() : reshape(wait.sizes().vec()));
    switch (situation) {
      case 0: s.description = "the first wait has another user"; s.return_wait = true; break;
      case 1: s.description = "a chain value has another user"; s.return_chain_value = true; break;
      case 2: s.description = "a non-view in the chain"; s.neg_in_chain = true; break;
      case 3: {
        s.description = "no reorder";
        const int64_t d = rng.below(wait.dim() + 1);
        s.chain = rng.chance(50) ? std::vector<View>{unsqueeze(d), squeeze(d)}
                                 : std::vector<View>{reshape({wait.numel()}), reshape(wait.sizes().vec())};
        break;
      }
      case 4: s.description = "the first collective is an all_reduce"; s.first_is_all_reduce = true; break;
      case 5:
        s.description = "the same group twice";
        s.g2 = s.g1;
        break;
      case 6:
        s.description = "a group outside the subgroup order";
        order = s.g1 + ",zz";
        break;
      case 7:
        s.description = "ascending without a column-major group";
        order = d0 + "," + d1;
        column_major.clear();
        break;
      default:
        s.description = "direct chain without an order";
        s.chain.clear();
        order.clear();
        column_major.clear();
        break;
    }
  }
  // A three-dim mesh whose full group is left at its default (all dims): sizes fall short.
  const bool short_full = ndims == 3 && rng.chance(20);
  s.options = options_text(short_full ? "" : full, order, column_major);
  if (short_full) s.description += ", full group of three dims";

  ChainedGatherCase c;
  for (const auto& [name, size] : s.dims) c.mesh += (c.mesh.empty() ? "" : ",") + name + "=" + std::to_string(size);
  c.graph_text = build_text(s, input_sizes);
  c.options = s.options;
  c.input_sizes = input_sizes;
  c.description = s.description + " (" + s.g1 + " then " + s.g2 + " on " + c.mesh + ")";
  return c;
}

std::vector<std::string> chained_allgathers_violations(const ChainedGatherCase& c, const std::string& pass,
                                                       const check::PassRegistry& registry, bool* fused) {
  std::unique_ptr<ir::Graph> original = ir::parse_graph(c.graph_text);
  std::unique_ptr<ir::Graph> result = ir::parse_graph(c.graph_text);
  check::PipelineOptions options;
  options.prove_new_claims = false;  // the claims are a property of their own, below
  std::vector<check::PassRecord> records;
  try {
    records = check::Pipeline::parse(pass + c.options, registry).run(*result, options);
  } catch (const std::exception& e) {
    return {std::string("the pipeline failed: ") + e.what()};
  }
  if (fused) *fused = records.at(0).changed;
  std::vector<std::string> violations;
  for (const sym::ClaimResult& r : sym::prove_all(result->claims(), result->symbols()).results)
    if (r.verdict != sym::Verdict::Proved) violations.push_back("claim " + r.format());
  if (!records.at(0).changed) return violations;
  const dist::DeviceMesh mesh = dist::DeviceMesh::parse(c.mesh);
  dist::SimOptions sim;
  sim.timeout = std::chrono::milliseconds(20000);
  for (const dist::RankOutcome& o : dist::SimWorld(mesh, sim).run([&](int64_t rank) {
         at::Generator gen = at::detail::createCPUGenerator(static_cast<uint64_t>(rank) * 7919 + 17);
         const at::Tensor x = at::randn(c.input_sizes, gen, at::TensorOptions().dtype(at::kFloat));
         const std::vector<c10::IValue> expected = exec::Executor(*original).run({x});
         const std::vector<c10::IValue> actual = exec::Executor(*result).run({x});
         for (size_t k = 0; k < expected.size(); ++k) {
           check::TensorComparison cmp = check::compare_bitwise("output " + std::to_string(k), expected[k].toTensor(),
                                                                actual.at(k).toTensor());
           if (!cmp.equal) throw std::runtime_error(cmp.describe());
         }
       }))
    if (!o.ok) violations.push_back("rank " + std::to_string(o.rank) + ": " + o.error);
  return violations;
}

}  // namespace passcheck::gen
