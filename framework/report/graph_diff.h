// Structural diff of two graphs, the "before" and "after" of a pass, for reports: each
// node is matched across the two by a stable key (its first output's name and its
// operator; nodes without outputs by operator and occurrence), so a node is kept,
// added, removed, or rewired (matched, but its operands now name other values). The
// diff reads names only, never node identity, so the two graphs may be clones.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace passcheck::ir {
class Graph;
}

namespace passcheck::report {

/// What a pass did to one node.
enum class Change { Kept, Added, Removed, Rewired, Retagged };
/// "kept", "added", "removed", "rewired", "retagged".
const char* to_string(Change change);

/// One node of either graph and how it changed.
struct NodeChange {
  Change change = Change::Kept;
  /// The matching key: "%name aten::op" (or "aten::op #k" for a node without outputs).
  std::string key;
  /// First output's name without '%', empty for a node without outputs.
  std::string name;
  std::string op;
  /// Module FQN the node belongs to ("" at top level) and its phase ("forward", ...).
  std::string region;
  std::string phase;
  /// Operand value names in slot order; "before" empty for added nodes, "after" for removed.
  std::vector<std::string> operands_before, operands_after;
};

struct GraphDiff {
  size_t nodes_before = 0, nodes_after = 0;
  /// Every node of the after graph in order (kept, added, rewired), then the removed
  /// nodes in their before order.
  std::vector<NodeChange> nodes;
  /// Graph outputs whose value changed: "output 2: %a -> %b"; inputs "only before: %x".
  std::vector<std::string> interface_changes;
  size_t count(Change change) const;
  /// No node added, removed, rewired or retagged and no interface change.
  bool unchanged() const;
};

/// Matches the nodes of `before` and `after` by key and classifies each.
GraphDiff diff_graphs(const ir::Graph& before, const ir::Graph& after);

}  // namespace passcheck::report
