// Structural verifier run after every pass: definitions precede uses, use lists agree
// with operands, graph outputs are defined, names are unique, metadata invariants hold
// and phases are ordered (no forward or loss node after the first backward node), and
// every argument fits its operator's schema (kinds, enum codes; exec/arg_check.h). It
// never mutates the graph.
#pragma once

#include "framework/ir/graph.h"
#include "framework/ir/module.h"

#include <string>
#include <vector>

namespace passcheck::check {

struct VerifierIssue {
  std::string message;  ///< names the offending node or value
};

/// Every problem found (empty when the graph is well formed).
std::vector<VerifierIssue> verify_graph(const ir::Graph& graph);

/// Throws std::runtime_error("<context>: <first issue> (+N more)") when not well formed.
void verify_or_throw(const ir::Graph& graph, const std::string& context);

/// Every problem of a module: each part's graph issues (prefixed "part 'NAME': "), and
/// its links: a linked input must come from an earlier part's existing output of the same
/// kind, metadata and placements; an unlinked input must be a module input, declared with
/// the same role, kind and metadata in every part that takes it; results must name
/// existing outputs.
std::vector<VerifierIssue> verify_module(const ir::Module& module);

}  // namespace passcheck::check
