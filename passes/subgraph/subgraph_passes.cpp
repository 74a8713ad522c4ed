// inline-subgraphs and outline-repeated-layers (subgraph_passes.h): thin passes over
// framework/ir/subgraph.h, which the tracer's --dedup uses too.
#include "passes/subgraph/subgraph_passes.h"

#include "framework/ir/subgraph.h"

namespace passcheck::passes {

check::PassResult inline_subgraphs_pass(ir::Graph& graph, const check::PassOptions& options) {
  check::PassResult result;
  check::Decisions d(result, options);
  const size_t subgraphs = graph.subgraphs().size();
  const size_t calls = ir::inline_subgraphs(graph);
  d.fire("inline-call", static_cast<int64_t>(calls));
  result.changed = calls > 0 || subgraphs > 0;
  result.stats["inlined_calls"] = static_cast<int64_t>(calls);
  result.stats["dropped_subgraphs"] = static_cast<int64_t>(subgraphs);
  return result;
}

check::PassResult outline_repeated_layers_pass(ir::Graph& graph, const check::PassOptions& options) {
  check::PassResult result;
  check::Decisions d(result, options);
  const ir::OutlineReport report = ir::outline_repeated_layers(graph);
  d.fire("outline-layer-region", static_cast<int64_t>(report.regions));
  d.fire("share-identical-body", static_cast<int64_t>(report.regions - report.subgraphs));
  result.changed = report.regions > 0;
  result.stats["outlined_regions"] = static_cast<int64_t>(report.regions);
  result.stats["subgraphs"] = static_cast<int64_t>(report.subgraphs);
  result.stats["regions_left_flat"] = static_cast<int64_t>(report.skipped);
  return result;
}

void register_subgraph_passes(check::PassRegistry& registry) {
  using check::NumericsEffect;
  check::PassInfo inline_info{"inline-subgraphs",
                              "Replace every subgraph call by a copy of its body and drop the subgraph table",
                              {},
                              NumericsEffect::Preserves,
                              true,
                              {{"inline-call", "a passcheck::invoke_subgraph call is replaced by its body"}},
                              {}};
  inline_info.handles_subgraphs = true;
  registry.add(inline_info, inline_subgraphs_pass);
  check::PassInfo outline_info{
      "outline-repeated-layers",
      "Deduplicate transformer layers: each layer's forward and backward runs call one shared subgraph per distinct body",
      {},
      NumericsEffect::Preserves,
      true,
      {{"outline-layer-region", "a run of one layer's nodes of one phase becomes a subgraph call"},
       {"share-identical-body", "a region whose canonical body equals an earlier one calls that subgraph"}},
      {}};
  outline_info.handles_subgraphs = true;
  registry.add(outline_info, outline_repeated_layers_pass);
}

}  // namespace passcheck::passes
