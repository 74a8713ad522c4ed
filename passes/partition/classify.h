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
#include "framework/ir/pointer_index.h"

#include <cstdint>
#include <string>
#include <vector>

namespace passcheck::passes {

/// Which side of the forward/backward boundary a node belongs to.
enum class NodeClass { RequiredForward, RequiredBackward, Unclaimed };
const char* to_string(NodeClass c);

struct Classification {
  /// The classified graph's nodes in graph order; a node's position indexes the vectors
  /// below.
  std::vector<const ir::Node*> nodes;
  /// Class per position.
  std::vector<NodeClass> classes;
  /// Per joint output: true when a required-backward node produces it.
  std::vector<bool> output_is_backward;
  /// Per joint output: its value id (npos: not a value of the graph).
  std::vector<uint32_t> output_ids;

  // Dense value ids, in graph order: graph input i is i; output k of the node at
  // position p is num_inputs + first_output[p] + k.
  size_t num_inputs = 0;
  std::vector<uint32_t> first_output;     // per position, and one past the last
  std::vector<uint32_t> value_producer;   // per value id: the producer's position, npos for a graph input
  std::vector<uint32_t> operand_begin;    // per position, and one past the last: range in operand_ids
  std::vector<uint32_t> operand_ids;      // per operand slot: the value id (npos: not a value of the graph)
  std::vector<const ir::Value*> inputs;   // the graph's inputs: input i has value id i
  ir::PointerIndex index;                 // node -> position

  static constexpr uint32_t npos = ir::PointerIndex::npos;

  /// Position of `node` in `nodes`, npos for a node of another graph.
  uint32_t position(const ir::Node* node) const { return index.find(node); }
  /// Dense id of `v`, npos for a value of another graph.
  uint32_t value_id(const ir::Value* v) const;
  size_t num_values() const { return num_inputs + (first_output.empty() ? 0 : first_output.back()); }
  /// Value id of output k of the node at position p.
  uint32_t output_id(uint32_t p, size_t k) const {
    return static_cast<uint32_t>(num_inputs + first_output[p] + k);
  }

  /// Class of `node` (Unclaimed for a node of another graph).
  NodeClass class_of(const ir::Node* node) const;
  bool is_backward(const ir::Node* node) const { return class_of(node) == NodeClass::RequiredBackward; }
  bool is_backward_at(uint32_t p) const { return classes[p] == NodeClass::RequiredBackward; }
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
