// Node classification of a joint forward-loss-backward graph (specs/distributed.md
// "Partitioners", PyTorch's classify_nodes): required-backward nodes are those with phase
// backward or optimizer (the graph has no tangent inputs: ones_like of the loss starts the
// backward) closed over users; the backward results are the joint outputs they produce;
// the forward results are the other joint outputs; required-forward nodes are the nodes
// the forward results depend on; every other node is unclaimed. Partitioners (split,
// min-cut, save-all) all start from this.
#pragma once

#include "framework/check/pass.h"
#include "framework/ir/graph.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace passcheck::passes {

/// Which side of the forward/backward boundary a node belongs to.
enum class NodeClass { RequiredForward, RequiredBackward, Unclaimed };
const char* to_string(NodeClass c);

struct Classification {
  std::unordered_map<const ir::Node*, NodeClass> of;
  /// Per joint output: true when a required-backward node produces it.
  std::vector<bool> output_is_backward;

  /// Class of `node` (Unclaimed for a node the map does not hold).
  NodeClass class_of(const ir::Node* node) const;
  bool is_backward(const ir::Node* node) const { return class_of(node) == NodeClass::RequiredBackward; }
  /// True for a graph input or a value of a node outside the backward.
  bool is_forward_value(const ir::Value* v) const { return v->is_graph_input() || !is_backward(v->producer()); }
  size_t count(NodeClass c) const;
};

/// Classifies every node of `joint` as in the file comment.
Classification classify_nodes(const ir::Graph& joint);

/// The forward values (graph inputs excluded) that required-backward nodes read
/// directly, each once, in graph order: the largest useful saved set.
std::vector<const ir::Value*> forward_values_read_by_backward(const ir::Graph& joint, const Classification& classes);

/// Custom metadata key classify-nodes writes ("forward", "backward", "unclaimed").
inline const char* partition_class_key() { return "partition_class"; }

/// classify-nodes: writes the class of every node into custom "partition_class".
check::PassResult classify_nodes_pass(ir::Graph& graph, const check::PassOptions& options);
check::PassInfo classify_nodes_pass_info();

}  // namespace passcheck::passes
