// remove-detach: detach(x) -> x. The joint graph already holds the backward and runs
// without autograd, so a detach only produces an alias of its input with the same
// values; forwarding its uses to the input and erasing it changes nothing computed.
#include "passes/cleanup/cleanup_passes.h"
#include "passes/cleanup/rewrite_util.h"

namespace passcheck::passes {

check::PassInfo remove_detach_pass_info() {
  check::PassInfo info;
  info.name = "remove-detach";
  info.summary = "Replace detach(x) with x";
  info.numerics = check::NumericsEffect::Preserves;
  info.idempotent = true;
  return info;
}

check::PassResult remove_detach_pass(ir::Graph& graph, const check::PassOptions&) {
  int64_t erased = 0, rewired = 0;
  for (ir::Node* n : graph.nodes()) {
    if (n->op() != "aten::detach" || n->num_outputs() != 1) continue;
    ir::Value* in = detail::self_operand(*n);
    if (in == nullptr) continue;
    rewired += detail::forward_and_erase(graph, n, in);
    ++erased;
  }
  check::PassResult result;
  result.changed = erased > 0;
  result.stats["erased_nodes"] = erased;
  result.stats["rewired_uses"] = rewired;
  return result;
}

}  // namespace passcheck::passes
