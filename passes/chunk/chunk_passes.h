// The chunking family (specs/passes.md "Chunking passes", torchtitan PR 3325):
//   chunk       split selected module regions (transformer blocks, MoE layers) into two
//               chunks along the batch or sequence dimension, so a later scheduler can
//               overlap one chunk's communication with the other's compute
//   concretize  substitute the hint for every symbol once scheduling is done, after
//               checking every recorded guard at the hint
//
// The chunk pass works on a graph traced with a symbolic chunk dimension
// (framework/sym/symbolize.h): the symbol tells which values carry the chunked extent.
// Every shape fact the rewrite relies on is recorded as a claim on the graph
// (ir::Graph::claims) for the Z3 prover; concretize checks them at the hint.
#pragma once

#include "framework/check/pass.h"


namespace passcheck::passes {

check::PassResult chunk_pass(ir::Graph& graph, const check::PassOptions& options);
check::PassResult concretize_pass(ir::Graph& graph, const check::PassOptions& options);

void register_chunk_passes(check::PassRegistry& registry);

}  // namespace passcheck::passes
