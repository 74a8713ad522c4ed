// Nested subgraphs: a graph calls a subgraph of its top graph's table with a
// `passcheck::invoke_subgraph("name", [%a, %b])` node (one output per subgraph output),
// as PyTorch's invoke_subgraph does to trace a repeated layer once. This header holds
// what every layer needs about such calls (recognising them, creating them, walking
// every graph of a nest, finding call cycles) and the two structural rewrites on them:
// inlining every call (flat again) and outlining identical transformer-layer regions
// into one shared subgraph (layer deduplication). docs/nested-subgraphs.md.
#pragma once

#include "framework/ir/graph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace passcheck::ir {

/// The call operator: `passcheck::invoke_subgraph(str name, Tensor[] operands) -> Tensor[]`.
inline constexpr const char* kInvokeSubgraphOp = "passcheck::invoke_subgraph";

/// True for a passcheck::invoke_subgraph node.
bool is_invoke_subgraph(const Node& node);
/// The subgraph name a call node names (its first argument); empty when it names none.
std::string called_subgraph_name(const Node& node);
/// The subgraph a call node names, or null when the top graph has none by that name.
Graph* called_subgraph(const Node& node);
/// The operands a call passes, in the subgraph's input order.
std::vector<Value*> call_operands(const Node& node);

/// What is wrong with a call node (unknown subgraph, operand count, or an operand or
/// output whose type or metadata differs from the subgraph's input or output); empty
/// when it is well formed. Names the subgraph and the slot.
std::string call_problem(const Node& call);

/// Appends (or inserts before `insert_before`) a call of subgraph `name` of `caller`'s
/// top graph on `operands`; its outputs copy the subgraph outputs' types and metadata.
/// Throws IrError for an unknown subgraph or an operand count that does not match.
Node* create_invoke_subgraph(Graph& caller, const std::string& name, const std::vector<Value*>& operands,
                             Node* insert_before = nullptr);

/// The top graph, then every subgraph of its table in name order.
std::vector<const Graph*> graphs_of(const Graph& top);
std::vector<Graph*> graphs_of(Graph& top);
/// Nodes of the top graph plus every subgraph body (each body counted once).
size_t total_nodes(const Graph& top);
/// One cycle of subgraph calls ("a -> b -> a"), or empty when calls never recurse.
std::string find_call_cycle(const Graph& top);

/// How deep a graph's calls nest and how many nodes it runs with every call expanded
/// (a call node counts once plus its body's expanded size).
struct CallNesting {
  size_t depth = 0;             ///< 0: no calls; 1: calls of bodies without calls; ...
  uint64_t expanded_nodes = 0;  ///< saturates at UINT64_MAX
};
/// Computed without recursion; depth SIZE_MAX when calls recurse.
CallNesting call_nesting(const Graph& top);

/// Bounds on a nest, checked before anything runs, inlines or walks calls recursively: a
/// file of a few kilobytes can chain calls thousands deep (the executor and the inliner
/// recurse once per level) or fan out to 2^40 nodes.
inline constexpr size_t kMaxCallDepth = 64;
inline constexpr uint64_t kMaxExpandedNodes = uint64_t(1) << 25;
/// What makes `top`'s nest unusable (a cycle, too deep, too large once expanded); empty
/// when it is within the bounds.
std::string nesting_problem(const Graph& top);

/// Replaces every call (recursively) by a copy of the body and drops the subgraph table;
/// the flat graph runs the same kernels in the same order. Returns the calls inlined.
size_t inline_subgraphs(Graph& graph);

/// What outline_repeated_layers did.
struct OutlineReport {
  size_t regions = 0;     ///< layer regions replaced by a call
  size_t subgraphs = 0;   ///< distinct bodies those calls share
  size_t skipped = 0;     ///< regions left flat (boundary value not a tensor, or too small)
};

/// Layer deduplication: every maximal run of consecutive top-graph nodes of one phase
/// whose module FQN lies under `layers.K` becomes a call of a subgraph; runs whose
/// canonical body text is identical (value names numbered, FQNs relative to the layer,
/// sequence numbers relative to the layer's first) share one subgraph. The call keeps
/// the layer FQN and base sequence number, so inline_subgraphs restores the metadata.
OutlineReport outline_repeated_layers(Graph& graph);

}  // namespace passcheck::ir
