// ac-regions: each child of `layers` is one activation-checkpoint region. Nodes whose
// module FQN is "layers.N" or below get ac_region_id = N; other nodes get none
// (consumers that need a number treat that as 0). Backward nodes carry their forward
// node's FQN, so they land in the same region.
#include "framework/check/ac_policy.h"
#include "passes/ac/ac_passes.h"

namespace passcheck::passes {

check::PassResult ac_regions_pass(ir::Graph& graph, const check::PassOptions& options) {
  check::PassResult result;
  check::Decisions d(result, options);
  int64_t annotated = 0;
  for (ir::Node* n : graph.nodes()) {
    std::optional<int64_t> region = check::layer_of(n->meta().module_fqn);
    // Widened: nodes outside the layers join region 0, which every consumer already
    // assumes for them (so no result can tell; the mutant is excluded, suites/mutants).
    if (!region && d.widened("number-layer-node")) region = 0;
    if (region) d.fire("number-layer-node");
    if (n->meta().ac_region_id != region) {
      n->mutable_meta().ac_region_id = region;
      result.changed = true;
    }
    annotated += region.has_value();
  }
  result.stats["nodes_in_regions"] = annotated;
  return result;
}

}  // namespace passcheck::passes
