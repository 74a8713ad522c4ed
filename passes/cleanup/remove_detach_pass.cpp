// remove-detach: detach(x) -> x. The joint graph already holds the backward and runs
// without autograd, so a detach only produces an alias of its input with the same
// values; forwarding its uses to the input and erasing it changes nothing computed.
// No guard: a write into the detach's result writes the input it aliases, so after
// forwarding the same write reaches the same storage.
#include "passes/cleanup/cleanup_passes.h"
#include "passes/cleanup/rewrite_util.h"

#include "framework/exec/op_properties.h"

namespace passcheck::passes {

check::PassInfo remove_detach_pass_info() {
  check::PassInfo info;
  info.name = "remove-detach";
  info.summary = "Replace detach(x) with x";
  info.rules = {{"forward-detach", "detach(x): its uses go to x and it is erased"}};
  info.numerics = check::NumericsEffect::Preserves;
  info.idempotent = true;
  return info;
}

check::PassResult detail::remove_detach_on(ir::Graph& graph, const check::PassOptions& options,
                                           std::vector<ir::Node*>* nodes) {
  const std::string kRule = "forward-detach";
  const bool widened = options.faults().widened_rules.count(kRule) > 0;  // Decisions::widened
  return detail::forward_nodes(
      graph, options, kRule,
      [widened](ir::Node& n, check::Decisions&) -> ir::Value* {
        if (n.op() == "aten::detach") return detail::self_operand(n);
        // Widened (mutants only): every operator whose result aliases its input is taken
        // for a detach, views and transposes included.
        if (widened && exec::aliases_input(n) && !exec::is_mutating(n)) return detail::self_operand(n);
        return nullptr;
      },
      nodes);
}

check::PassResult remove_detach_pass(ir::Graph& graph, const check::PassOptions& options) {
  return detail::remove_detach_on(graph, options, nullptr);
}

}  // namespace passcheck::passes
