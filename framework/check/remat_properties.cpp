// Rematerialization properties (see remat_properties.h).
#include "framework/check/remat_properties.h"

#include "framework/check/memory_estimate.h"
#include "framework/ir/text.h"

#include <map>

namespace passcheck::check {

std::vector<std::string> check_remat_properties(const ir::Graph& before, const ir::Graph& after) {
  std::vector<std::string> violations;
  std::map<std::string, int> recompute_count;
  for (const ir::Node* n : after.nodes()) {
    const ir::NodeMeta& meta = n->meta();
    auto from = meta.custom.find("recomputed_from");
    if (from != meta.custom.end() && n->op().rfind("passcheck::", 0) != 0) {
      if (++recompute_count[from->second] == 2)
        violations.push_back("%" + from->second + " is recomputed more than once (second copy `" + ir::print_node(*n) +
                             "`)");
      if (meta.phase != ir::Phase::Backward)
        violations.push_back("duplicate `" + ir::print_node(*n) + "` is not marked backward");
    }
    if (meta.phase != ir::Phase::Backward) continue;
    for (const ir::Value* v : n->operands()) {
      const ir::Node* p = v->producer();
      if (p && p->meta().phase != ir::Phase::Backward && ir::is_recomputable(p->meta().recompute))
        violations.push_back("backward node `" + ir::print_node(*n) + "` reads forward value %" + v->name() +
                             " tagged " + ir::to_string(p->meta().recompute) +
                             ": the original stays alive until the backward instead of being recomputed");
    }
  }
  int64_t held = estimate_memory(after).recomputable_live_at_backward_start;
  if (held > 0)
    violations.push_back("recomputable forward values still held into the backward: " + std::to_string(held) +
                         " bytes (was " + std::to_string(estimate_memory(before).recomputable_live_at_backward_start) +
                         ")");
  return violations;
}

}  // namespace passcheck::check
