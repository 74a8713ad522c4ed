// classify-nodes and classify_nodes(): see classify.h. Required-backward is a forward
// walk (users of backward nodes are backward), required-forward a backward walk from the
// forward results that stops at required-backward nodes (none can feed a forward result:
// they are closed over users).
#include "passes/partition/classify.h"

#include <algorithm>
#include <cstdint>

namespace passcheck::passes {

const char* to_string(NodeClass c) {
  switch (c) {
    case NodeClass::RequiredForward: return "forward";
    case NodeClass::RequiredBackward: return "backward";
    case NodeClass::Unclaimed: return "unclaimed";
  }
  return "unclaimed";
}

uint32_t Classification::value_id(const ir::Value* v) const {
  // A graph input's output_index is its position among the inputs: no lookup (most
  // operands of a large graph are inputs or recent values, and a lookup is a cache miss).
  if (v->is_graph_input()) {
    const size_t i = v->output_index();
    return i < inputs.size() && inputs[i] == v ? static_cast<uint32_t>(i) : npos;
  }
  const uint32_t p = index.find(v->producer());
  return p == npos ? npos : output_id(p, v->output_index());
}

NodeClass Classification::class_of(const ir::Node* node) const {
  const uint32_t p = index.find(node);
  return p == npos ? NodeClass::Unclaimed : classes[p];
}

size_t Classification::count(NodeClass c) const {
  return static_cast<size_t>(std::count(classes.begin(), classes.end(), c));
}

Classification classify_nodes(const ir::Graph& joint) {
  Classification r;
  const size_t num_nodes = joint.num_nodes();
  r.num_inputs = joint.inputs().size();
  r.inputs.assign(joint.inputs().begin(), joint.inputs().end());
  r.index.reserve(num_nodes);
  r.nodes.reserve(num_nodes);
  r.first_output.reserve(num_nodes + 1);
  r.value_producer.assign(r.num_inputs, Classification::npos);
  uint32_t outputs = 0;
  for (const ir::Node* n : joint.nodes()) {
    const auto p = static_cast<uint32_t>(r.nodes.size());
    r.index.insert(n, p);
    r.nodes.push_back(n);
    r.first_output.push_back(outputs);
    outputs += static_cast<uint32_t>(n->num_outputs());
    r.value_producer.insert(r.value_producer.end(), n->num_outputs(), p);
  }
  r.first_output.push_back(outputs);

  // Required backward: graph order is topological, so one sweep closes the set over users.
  r.classes.assign(r.nodes.size(), NodeClass::Unclaimed);
  r.operand_begin.reserve(r.nodes.size() + 1);
  for (uint32_t p = 0; p < r.nodes.size(); ++p) {
    const ir::Node* n = r.nodes[p];
    r.operand_begin.push_back(static_cast<uint32_t>(r.operand_ids.size()));
    bool is_bw = n->meta().phase == ir::Phase::Backward || n->meta().phase == ir::Phase::Optimizer;
    for (size_t i = 0; i < n->num_operands(); ++i) {
      const uint32_t id = r.value_id(n->operand(i));
      r.operand_ids.push_back(id);
      if (is_bw || id == Classification::npos) continue;
      const uint32_t q = r.value_producer[id];
      // An operand produced later is not (yet) backward, as the walk in graph order saw it.
      is_bw = q != Classification::npos && q < p && r.classes[q] == NodeClass::RequiredBackward;
    }
    if (is_bw) r.classes[p] = NodeClass::RequiredBackward;
  }
  r.operand_begin.push_back(static_cast<uint32_t>(r.operand_ids.size()));

  // Required forward: what the forward results depend on, stopping at the backward.
  std::vector<uint32_t> stack;
  r.output_ids.reserve(joint.outputs().size());
  for (const ir::Value* out : joint.outputs()) {
    const uint32_t p = out->producer() ? r.position(out->producer()) : Classification::npos;
    r.output_ids.push_back(out->producer() ? (p == Classification::npos ? p : r.output_id(p, out->output_index()))
                                           : r.value_id(out));
    const bool bw = p != Classification::npos && r.classes[p] == NodeClass::RequiredBackward;
    r.output_is_backward.push_back(bw);
    if (!bw && p != Classification::npos) stack.push_back(p);
  }
  while (!stack.empty()) {
    const uint32_t p = stack.back();
    stack.pop_back();
    if (r.classes[p] != NodeClass::Unclaimed) continue;
    r.classes[p] = NodeClass::RequiredForward;
    for (uint32_t s = r.operand_begin[p]; s < r.operand_begin[p + 1]; ++s) {
      const uint32_t id = r.operand_ids[s];
      if (id != Classification::npos && r.value_producer[id] != Classification::npos)
        stack.push_back(r.value_producer[id]);
    }
  }
  return r;
}

std::vector<const ir::Value*> forward_values_read_by_backward(const ir::Graph& joint, const Classification& classes) {
  (void)joint;
  // Value ids are in graph order of the producers, then output index: a scan of the
  // marked ids is the order a saved set reads in whatever walk found it.
  std::vector<uint8_t> read(classes.num_values(), 0);
  for (uint32_t p = 0; p < classes.nodes.size(); ++p) {
    if (!classes.is_backward_at(p)) continue;
    for (uint32_t s = classes.operand_begin[p]; s < classes.operand_begin[p + 1]; ++s) {
      const uint32_t id = classes.operand_ids[s];
      if (id == Classification::npos || id < classes.num_inputs) continue;
      if (classes.is_backward_at(classes.value_producer[id])) continue;
      read[id] = 1;
    }
  }
  std::vector<const ir::Value*> result;
  for (uint32_t p = 0; p < classes.nodes.size(); ++p)
    for (size_t k = 0; k < classes.nodes[p]->num_outputs(); ++k)
      if (read[classes.output_id(p, k)]) result.push_back(classes.nodes[p]->output(k));
  return result;
}

check::PassInfo classify_nodes_pass_info() {
  check::PassInfo info("classify-nodes",
                       "Tag every node with its partition class (custom partition_class: forward, backward, unclaimed)");
  info.rules = {{"tag-class", "a node whose partition_class tag was missing or different is (re)tagged"}};
  return info;
}

check::PassResult classify_nodes_pass(ir::Graph& graph, const check::PassOptions& options) {
  check::PassResult result;
  check::Decisions d(result, options);
  const Classification classes = classify_nodes(graph);
  size_t p = 0;
  for (ir::Node* n : graph.nodes()) {
    const char* cls = to_string(classes.classes[p++]);
    const auto& custom = n->meta().custom;
    auto it = custom.find(partition_class_key());
    if (it != custom.end() && it->second == cls) continue;
    n->mutable_meta().custom[partition_class_key()] = cls;
    d.fire("tag-class");
    result.changed = true;
  }
  result.stats["backward_nodes"] = static_cast<int64_t>(classes.count(NodeClass::RequiredBackward));
  result.stats["forward_nodes"] = static_cast<int64_t>(classes.count(NodeClass::RequiredForward));
  result.stats["unclaimed_nodes"] = static_cast<int64_t>(classes.count(NodeClass::Unclaimed));
  return result;
}

}  // namespace passcheck::passes
