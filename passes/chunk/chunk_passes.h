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

#include <optional>
#include <string>

namespace passcheck::passes {

check::PassResult chunk_pass(ir::Graph& graph, const check::PassOptions& options);
check::PassResult concretize_pass(ir::Graph& graph, const check::PassOptions& options);

/// Fault injection for the mutant suite (suites/mutants): each flag, turned off,
/// reproduces one historical chunking bug of specs/passes.md (bug 10). The registered
/// pass runs with every flag on.
struct ChunkBehaviour {
  /// Off: a live-out that carries the chunk dimension is materialized with add instead
  /// of cat (recording the partial-sum claim it would need).
  bool cat_chunk_dim_live_outs = true;
  /// Off: chunk 1's in-place buffer update reads the buffer itself instead of chunk 0's
  /// result, so nothing orders the two updates.
  bool chain_buffer_mutations = true;
};
check::PassResult chunk_pass_with(ir::Graph& graph, const check::PassOptions& options, const ChunkBehaviour& behaviour);

/// Fault injection for concretize (bug 9).
struct ConcretizeBehaviour {
  /// Off: graph input metadata keeps its symbolic shapes (the analogue, in an IR
  /// without nested subgraphs, of stale symbols in a nested graph's placeholders).
  bool substitute_input_metadata = true;
  /// Off: guards are not evaluated at the hint, so a false guard is accepted.
  bool validate_guards = true;
};
check::PassResult concretize_pass_with(ir::Graph& graph, const check::PassOptions& options,
                                       const ConcretizeBehaviour& behaviour);

void register_chunk_passes(check::PassRegistry& registry);

}  // namespace passcheck::passes
