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
  return detail::forward_nodes(graph, [](ir::Node& n) -> ir::Value* {
    return n.op() == "aten::detach" ? detail::self_operand(n) : nullptr;
  });
}

}  // namespace passcheck::passes
