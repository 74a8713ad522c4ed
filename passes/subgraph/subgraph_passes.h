// The subgraph family (docs/nested-subgraphs.md): structural rewrites between a flat
// joint graph and one whose repeated transformer layers call shared subgraphs.
//   inline-subgraphs          replace every passcheck::invoke_subgraph call by a copy of
//                             its body; the flat graph runs the same kernels in order
//   outline-repeated-layers   layer deduplication: each layer's forward and backward
//                             runs become calls, identical bodies shared by all layers
// Both keep results bitwise equal: a call runs its body's kernels in the same order.
#pragma once

#include "framework/check/pass.h"

namespace passcheck::passes {

check::PassResult inline_subgraphs_pass(ir::Graph& graph, const check::PassOptions& options);
check::PassResult outline_repeated_layers_pass(ir::Graph& graph, const check::PassOptions& options);

void register_subgraph_passes(check::PassRegistry& registry);

}  // namespace passcheck::passes
