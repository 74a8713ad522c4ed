// dce: dead code elimination. A node is dead when none of its outputs is used and
// running it has no effect beyond those outputs. In-place and out= operators,
// collectives, RNG draws (removing one would shift every later random number) and
// other side-effecting operators are kept even when unused; asynchronous asserts are
// treated as pure, as upstream DCE does, since they only guard values nobody reads.
// Rules: erase-unused, erase-async-assert; guards: mutating, collective, random,
// side-effects (one per kind of effect that keeps an unused node).
#include "passes/cleanup/cleanup_passes.h"

#include "framework/exec/op_properties.h"

namespace passcheck::passes {

namespace {

// Whether some output is used. Widened (mutants only): uses as a graph output do not
// count, as if the graph's results were not part of what it computes.
bool used(const ir::Node& node, const check::Decisions& d) {
  if (!d.widened("erase-unused")) return node.has_users();
  for (const ir::Value* out : node.outputs())
    for (const ir::Use& u : out->uses())
      if (!u.is_graph_output()) return true;
  return false;
}

// Whether `node` is dead, counting the guards that keep an unused node.
bool is_dead(const ir::Node& node, check::Decisions& d) {
  if (used(node, d)) return false;
  // Widened (mutants only): every node without outputs is taken for an assert.
  if (exec::is_async_assert(node) || (d.widened("erase-async-assert") && node.num_outputs() == 0)) return true;
  // Collectives first: the dispatcher does not know the passcheck:: ones, which makes
  // them "mutating" too, and the more specific reason is the one to report.
  if (d.refuse("collective", exec::is_collective(node))) return false;
  if (d.refuse("mutating", exec::is_mutating(node))) return false;
  if (d.refuse("random", exec::is_random(node))) return false;
  // has_side_effects includes mutation; the guard is about the other effects.
  if (d.refuse("side-effects", exec::has_side_effects(node) && !exec::is_mutating(node))) return false;
  return true;
}

}  // namespace

check::PassInfo dce_pass_info() {
  check::PassInfo info;
  info.name = "dce";
  info.summary = "Erase nodes whose outputs are unused (keeps mutations, collectives, RNG, side effects)";
  info.rules = {
      {"erase-unused", "a node none of whose outputs is used, and that has no effect beyond them, is erased"},
      {"erase-async-assert", "an asynchronous assert is erased (pure: it only guards values nobody reads)"},
  };
  info.guards = {
      {"mutating", "an unused in-place or out= operator is kept: its effect is the write"},
      {"collective", "an unused collective or wait is kept: every rank must run it"},
      {"random", "an unused random draw is kept: removing it shifts every later random number"},
      {"side-effects", "an unused operator with other side effects (RNG state, print, unknown) is kept"},
  };
  info.numerics = check::NumericsEffect::Preserves;
  info.idempotent = true;
  return info;
}

check::PassResult dce_pass(ir::Graph& graph, const check::PassOptions& options) {
  int64_t erased = 0;
  check::PassResult result;
  check::Decisions d(result, options);
  // Walking backwards frees a producer in the same sweep as its last user; the outer
  // loop is the fixpoint guard for orders where that does not hold.
  bool progress = true;
  while (progress) {
    progress = false;
    for (ir::Node* n = graph.last_node(); n != nullptr;) {
      ir::Node* prev = n->prev();
      if (is_dead(*n, d)) {
        d.fire(exec::is_async_assert(*n) ? "erase-async-assert" : "erase-unused");
        graph.erase(n);
        ++erased;
        progress = true;
      }
      n = prev;
    }
  }
  result.changed = erased > 0;
  result.stats["erased_nodes"] = erased;
  return result;
}

}  // namespace passcheck::passes
