// cse: common subexpression elimination. Two nodes are the same computation when they
// name the same operator overload with structurally equal arguments, graph values
// compared by identity; the later one's uses go to the first and it is erased. Never
// merged: nodes without outputs, RNG draws (two draws differ), uninitialized
// allocations (two buffers must stay two), operators whose output aliases an input
// (merging views would merge later writes through them), mutating operators,
// collectives, and rematerialized duplicates (custom "recomputed_from": merging them
// with their original would undo the recomputation). Mutations bound the search: a
// mutating or side-effecting node forgets every candidate seen so far, and a
// candidate whose result (or a view of it) is later written is not merged into.
#include "passes/cleanup/cleanup_passes.h"
#include "passes/cleanup/rewrite_util.h"

#include "framework/exec/op_properties.h"
#include "framework/ir/text.h"

#include <unordered_map>

namespace passcheck::passes {

namespace {

bool mergeable(const ir::Node& n) {
  return n.num_outputs() > 0 && !exec::is_random(n) && !exec::is_uninitialized_allocation(n) &&
         !exec::aliases_input(n) && !exec::is_mutating(n) && !exec::is_collective(n) &&
         !n.meta().custom.count("recomputed_from");
}

// The text of the operator and its arguments: values print as their (unique) names,
// which is identity; constants print exactly (format_double round-trips).
std::string key_of(const ir::Node& n) {
  std::string key = n.op() + "(";
  for (size_t i = 0; i < n.num_args(); ++i) key += (i ? ", " : "") + ir::print_arg(n.arg(i));
  return key + ")";
}

// Whether a write may reach `v`: some user mutates it, or views it (a view's users
// may write through it). Memoized per value.
class WriteExposure {
 public:
  bool exposed(const ir::Value* v) {
    auto it = memo_.find(v);
    if (it != memo_.end()) return it->second;
    memo_[v] = false;  // views form a DAG; this only guards against malformed input
    bool result = false;
    for (const ir::Use& u : v->uses()) {
      if (u.is_graph_output()) continue;
      if (exec::is_mutating(*u.user)) result = true;
      else if (exec::aliases_input(*u.user))
        for (const ir::Value* out : u.user->outputs()) result = result || exposed(out);
      if (result) break;
    }
    memo_[v] = result;
    return result;
  }

 private:
  std::unordered_map<const ir::Value*, bool> memo_;
};

}  // namespace

check::PassInfo cse_pass_info() {
  check::PassInfo info;
  info.name = "cse";
  info.summary = "Merge nodes computing the same operator on the same arguments (keeps the first)";
  info.numerics = check::NumericsEffect::Preserves;
  info.idempotent = true;
  return info;
}

check::PassResult cse_pass(ir::Graph& graph, const check::PassOptions&) {
  int64_t erased = 0, rewired = 0;
  std::unordered_map<std::string, ir::Node*> seen;
  WriteExposure writes;
  for (ir::Node* n : graph.nodes()) {
    if (exec::is_mutating(*n) || exec::has_side_effects(*n) || exec::is_collective(*n)) {
      seen.clear();
      continue;
    }
    if (!mergeable(*n)) continue;
    std::string key = key_of(*n);
    auto it = seen.find(key);
    if (it == seen.end()) {
      seen.emplace(std::move(key), n);
      continue;
    }
    ir::Node* first = it->second;
    bool compatible = first->num_outputs() == n->num_outputs();
    for (size_t i = 0; compatible && i < n->num_outputs(); ++i)
      compatible = first->output(i)->type() == n->output(i)->type() &&
                   first->output(i)->meta() == n->output(i)->meta() && !writes.exposed(first->output(i)) &&
                   !writes.exposed(n->output(i));
    if (!compatible) continue;
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      rewired += static_cast<int64_t>(n->output(i)->uses().size());
      n->output(i)->replace_all_uses_with(first->output(i));
    }
    graph.erase(n);
    ++erased;
  }
  return detail::rewrite_result(erased, rewired);
}

}  // namespace passcheck::passes
