// Structural verifier run after every pass: definitions precede uses, use lists agree
// with operands, graph outputs are defined, names are unique, metadata invariants hold
// and phases are ordered (no forward or loss node after the first backward node), and
// every argument fits its operator's schema (kinds, enum codes; exec/arg_check.h). It
// never mutates the graph.
#pragma once

#include "framework/ir/graph.h"
#include "framework/ir/module.h"

#include <cstdint>
#include <string>
#include <vector>

namespace passcheck::check {

struct VerifierIssue {
  std::string message;  ///< names the offending node or value
};

/// Every problem found (empty when the graph is well formed).
std::vector<VerifierIssue> verify_graph(const ir::Graph& graph);

/// What changed in a graph since its change log was last cleared (ir::Graph::
/// clear_changes): the nodes touched, each with its ir::TouchBits, and the
/// ir::GraphChangeBits of the graph itself.
struct ChangeSet {
  std::vector<const ir::Node*> nodes;
  uint8_t graph_changes = 0;
};
/// The graph's change log as a ChangeSet (erased nodes left out).
ChangeSet changes_of(const ir::Graph& graph);

/// Incremental verification, for a graph that was well formed when its change log was
/// cleared: one cheap walk over every node (count, order keys, phase order, metadata
/// invariants) and the full checks of verify_graph for what `changes` names: the
/// operands, schema and use lists of new and rewritten nodes, the users of moved nodes,
/// the declarations and use lists of touched values, the graph outputs. Finds what
/// verify_graph would find (with the same messages) for every change made through the IR
/// API, at a cost that grows with what changed. Changes to the graph's inputs, symbols,
/// claims, mesh or subgraphs fall back to verify_graph.
std::vector<VerifierIssue> verify_changes(const ir::Graph& graph, const ChangeSet& changes);

/// Throws std::runtime_error("<context>: <first issue> (+N more)") when not well formed.
void verify_or_throw(const ir::Graph& graph, const std::string& context);

/// Every problem of a module: each part's graph issues (prefixed "part 'NAME': "), and
/// its links: a linked input must come from an earlier part's existing output of the same
/// kind, metadata and placements; an unlinked input must be a module input, declared with
/// the same role, kind and metadata in every part that takes it; results must name
/// existing outputs.
std::vector<VerifierIssue> verify_module(const ir::Module& module);
/// verify_module without each part's graph issues: the links alone (for a gate that has
/// just verified every part's graph).
std::vector<VerifierIssue> verify_module_links(const ir::Module& module);

}  // namespace passcheck::check
