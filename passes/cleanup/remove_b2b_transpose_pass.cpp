// remove-b2b-transpose: t(t(x)) -> x and transpose.int(transpose.int(x, a, b), a, b)
// -> x (the same pair of dimensions in either order, negative dimensions wrapped by
// the input's rank). The outer transpose's uses go to x; the inner transpose is erased
// only when nothing else uses it, since other users still need the transposed view.
#include "passes/cleanup/cleanup_passes.h"
#include "passes/cleanup/rewrite_util.h"

#include <algorithm>

namespace passcheck::passes {

namespace {

// The wrapped, ordered dimension pair of a transpose.int node; nullopt when a
// dimension is not a constant or cannot be wrapped without knowing the rank.
std::optional<std::pair<int64_t, int64_t>> transpose_dims(const ir::Node& n) {
  detail::IntArg a = detail::int_arg(n, 1, std::nullopt);
  detail::IntArg b = detail::int_arg(n, 2, std::nullopt);
  if (!a.constant || !b.constant || !a.value || !b.value) return std::nullopt;
  int64_t d0 = *a.value, d1 = *b.value;
  if (d0 < 0 || d1 < 0) {
    const ir::Value* in = detail::self_operand(n);
    if (in == nullptr || !in->meta()) return std::nullopt;
    int64_t rank = static_cast<int64_t>(in->meta()->sizes.size());
    auto w0 = detail::wrap_dim(d0, rank), w1 = detail::wrap_dim(d1, rank);
    if (!w0 || !w1) return std::nullopt;
    d0 = *w0;
    d1 = *w1;
  }
  return std::make_pair(std::min(d0, d1), std::max(d0, d1));
}

// Whether `op` is a transpose this pass knows how to cancel. Widened (mutants only):
// permute too, as if every permutation were its own inverse.
bool is_transpose(const std::string& op, const check::Decisions& d) {
  return op == "aten::t" || op == "aten::transpose.int" || (d.widened("cancel-pair") && op == "aten::permute");
}

// The x of op(op(x)) when `outer` undoes its producer, else null.
ir::Value* undone_input(const ir::Node& outer, check::Decisions& d) {
  ir::Value* mid = detail::self_operand(outer);
  if (mid == nullptr || mid->is_graph_input()) return nullptr;
  const ir::Node& inner = *mid->producer();
  if (inner.op() != outer.op() || inner.num_outputs() != 1) return nullptr;
  ir::Value* x = detail::self_operand(inner);
  if (x == nullptr) return nullptr;
  if (outer.op() == "aten::t") return outer.num_args() == 1 && inner.num_args() == 1 ? x : nullptr;
  if (outer.op() == "aten::permute") return outer.num_args() > 1 && inner.num_args() > 1 && outer.arg(1) == inner.arg(1) ? x : nullptr;
  auto outer_dims = transpose_dims(outer), inner_dims = transpose_dims(inner);
  if (d.refuse("symbolic-dims", !outer_dims || !inner_dims)) return nullptr;
  // With the guard disabled (mutants) dimensions that cannot be read are taken to match.
  if (!outer_dims || !inner_dims) return x;
  if (d.refuse("dims-differ", *outer_dims != *inner_dims)) return nullptr;
  return x;
}

}  // namespace

check::PassInfo remove_b2b_transpose_pass_info() {
  check::PassInfo info;
  info.name = "remove-b2b-transpose";
  info.summary = "Replace t(t(x)) and transpose(transpose(x, a, b), a, b) with x";
  info.rules = {{"cancel-pair", "t(t(x)) or a transpose undone by the same transpose: the outer's uses go to x"}};
  info.guards = {
      {"symbolic-dims", "a transpose dimension is not a constant, or negative on an input of unknown rank"},
      {"dims-differ", "the two transposes swap different pairs of dimensions"},
      {"inner-has-other-users", "the inner transpose stays: other nodes still use it"},
  };
  info.numerics = check::NumericsEffect::Preserves;
  info.idempotent = true;
  return info;
}

check::PassResult detail::remove_b2b_transpose_on(ir::Graph& graph, const check::PassOptions& options,
                                                  std::vector<ir::Node*>* nodes) {
  const std::string kRule = "cancel-pair";
  const std::string kInnerHasOtherUsers = "inner-has-other-users";
  int64_t erased = 0, rewired = 0, cancelled = 0;
  check::PassResult decisions;
  check::Decisions d(decisions, options);
  std::vector<ir::Node*> erased_inner;  // with `nodes`: entries to clear afterwards
  // Returns whether `n` itself was erased.
  auto visit = [&](ir::Node* n) {
    if (!is_transpose(n->op(), d) || n->num_outputs() != 1) return false;
    ir::Value* x = undone_input(*n, d);
    if (x == nullptr) return false;
    ir::Node* inner = detail::self_operand(*n)->producer();
    rewired += detail::forward_and_erase(graph, n, x);
    ++erased;
    ++cancelled;
    if (d.refuse(kInnerHasOtherUsers, inner->has_users())) return true;
    graph.erase(inner);
    if (nodes) erased_inner.push_back(inner);
    ++erased;
    return true;
  };
  // In order, so t(t(t(t(x)))) collapses fully in one run: once the second t is
  // forwarded to x, the fourth sees t(t(x)) again.
  if (nodes == nullptr) {
    for (ir::Node* n : graph.nodes()) visit(n);
  } else {
    for (ir::Node*& n : *nodes)
      if (n != nullptr && visit(n)) n = nullptr;
    // An inner transpose comes before its outer one, so it was visited already; no node
    // was created since, so its address names no other candidate.
    if (!erased_inner.empty()) {
      std::sort(erased_inner.begin(), erased_inner.end());
      for (ir::Node*& n : *nodes)
        if (n != nullptr && std::binary_search(erased_inner.begin(), erased_inner.end(), n)) n = nullptr;
    }
  }
  d.fire(kRule, cancelled);
  check::PassResult result = detail::rewrite_result(erased, rewired);
  detail::add_decisions(result, decisions);
  return result;
}

check::PassResult remove_b2b_transpose_pass(ir::Graph& graph, const check::PassOptions& options) {
  return detail::remove_b2b_transpose_on(graph, options, nullptr);
}

}  // namespace passcheck::passes
