// Stable topological sort of a graph's nodes under extra ordering dependencies, for
// scheduling passes (passes/schedule). Stable: among the nodes ready at each step, the
// one earliest in the current order goes first, so with no extra dependency a valid
// graph keeps its order. Nodes that must keep their place relative to everything
// (in-place writes, side effects, random draws: the generator is consumed in order) are
// barriers: nothing moves across them. The order is computed on a copy; the graph is
// changed only when the result is acyclic, so a cycle leaves it exactly as it was.
#pragma once

#include "framework/ir/graph.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace passcheck::passes {

/// An extra dependency: `first` must come before `second`.
using OrderEdge = std::pair<ir::Node*, ir::Node*>;

/// The outcome of a sort: the new order, or a description of a cycle.
struct TopoOrder {
  std::vector<ir::Node*> order;  ///< every node, when acyclic
  std::string cycle;             ///< non-empty on a cycle: the nodes on it, by output name
  bool acyclic() const { return cycle.empty(); }
};

/// The stable topological order of `graph`'s nodes honouring data dependencies, the
/// barriers above and `extra`; never changes the graph.
TopoOrder stable_topological_order(const ir::Graph& graph, const std::vector<OrderEdge>& extra);

/// Moves the nodes into `order` (a permutation of the graph's nodes); true when any moved.
bool apply_order(ir::Graph& graph, const std::vector<ir::Node*>& order);

/// Sorts and commits when acyclic; on a cycle returns its description and leaves the
/// graph untouched. nullopt on success.
std::optional<std::string> stable_topological_sort(ir::Graph& graph, const std::vector<OrderEdge>& extra,
                                                   bool* changed = nullptr);

/// Whether a node must keep its place relative to every other node.
bool is_order_barrier(const ir::Node& node);

}  // namespace passcheck::passes
