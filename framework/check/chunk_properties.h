// Properties of a chunked graph (passes/chunk), checked by the suites and the fuzzer on
// the graph the chunk pass produced (before concretization) and on the concretized one.
// Each returns one message per violation, naming the node; empty when the graph holds.
#pragma once

#include "framework/ir/graph.h"

#include <string>
#include <vector>

namespace passcheck::check {

/// Structural invariants of a chunked graph:
/// - every body node of chunk 0 has its chunk-1 copy in the same region and vice versa;
/// - chunk 1's in-place update of shared state reads chunk 0's result (the chain that
///   orders the two updates for any scheduler);
/// - a materialization by add never adds values that carry the chunk symbol (those must
///   be concatenated), and a cat materialization concatenates chunk 0 then chunk 1.
std::vector<std::string> check_chunk_invariants(const ir::Graph& graph);

/// Every place a symbol is still mentioned (arguments, value and input metadata,
/// declarations, claims): what a concretized graph must not have.
std::vector<std::string> find_symbols(const ir::Graph& graph);

}  // namespace passcheck::check
