// dce: dead code elimination. A node is dead when none of its outputs is used and
// running it has no effect beyond those outputs. In-place and out= operators,
// collectives, RNG draws (removing one would shift every later random number) and
// other side-effecting operators are kept even when unused; asynchronous asserts are
// treated as pure, as upstream DCE does, since they only guard values nobody reads.
#include "passes/cleanup/cleanup_passes.h"

#include "framework/exec/op_properties.h"

namespace passcheck::passes {

namespace {

bool is_dead(const ir::Node& node) {
  if (node.has_users()) return false;
  if (exec::is_async_assert(node)) return true;
  return !(exec::is_mutating(node) || exec::is_collective(node) || exec::is_random(node) ||
           exec::has_side_effects(node));
}

}  // namespace

check::PassInfo dce_pass_info() {
  check::PassInfo info;
  info.name = "dce";
  info.summary = "Erase nodes whose outputs are unused (keeps mutations, collectives, RNG, side effects)";
  info.numerics = check::NumericsEffect::Preserves;
  info.idempotent = true;
  return info;
}

check::PassResult dce_pass(ir::Graph& graph, const check::PassOptions&) {
  int64_t erased = 0;
  // Walking backwards frees a producer in the same sweep as its last user; the outer
  // loop is the fixpoint guard for orders where that does not hold.
  bool progress = true;
  while (progress) {
    progress = false;
    for (ir::Node* n = graph.last_node(); n != nullptr;) {
      ir::Node* prev = n->prev();
      if (is_dead(*n)) {
        graph.erase(n);
        ++erased;
        progress = true;
      }
      n = prev;
    }
  }
  check::PassResult result;
  result.changed = erased > 0;
  result.stats["erased_nodes"] = erased;
  return result;
}

}  // namespace passcheck::passes
