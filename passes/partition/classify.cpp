// classify-nodes and classify_nodes(): see classify.h. Required-backward is a forward
// walk (users of backward nodes are backward), required-forward a backward walk from the
// forward results that stops at required-backward nodes (none can feed a forward result:
// they are closed over users).
#include "passes/partition/classify.h"

#include <algorithm>
#include <unordered_set>

namespace passcheck::passes {

const char* to_string(NodeClass c) {
  switch (c) {
    case NodeClass::RequiredForward: return "forward";
    case NodeClass::RequiredBackward: return "backward";
    case NodeClass::Unclaimed: return "unclaimed";
  }
  return "unclaimed";
}

NodeClass Classification::class_of(const ir::Node* node) const {
  auto it = of.find(node);
  return it == of.end() ? NodeClass::Unclaimed : it->second;
}

size_t Classification::count(NodeClass c) const {
  size_t n = 0;
  for (const auto& [node, cls] : of) n += cls == c;
  return n;
}

Classification classify_nodes(const ir::Graph& joint) {
  Classification result;
  std::unordered_set<const ir::Node*> backward;
  // Graph order is topological, so one sweep closes the set over users.
  for (const ir::Node* n : joint.nodes()) {
    bool is_bw = n->meta().phase == ir::Phase::Backward || n->meta().phase == ir::Phase::Optimizer;
    for (size_t i = 0; !is_bw && i < n->num_operands(); ++i) {
      const ir::Node* p = n->operand(i)->producer();
      is_bw = p && backward.count(p);
    }
    if (is_bw) backward.insert(n);
    result.of[n] = is_bw ? NodeClass::RequiredBackward : NodeClass::Unclaimed;
  }
  std::vector<const ir::Node*> stack;
  for (const ir::Value* out : joint.outputs()) {
    const bool bw = out->producer() && backward.count(out->producer());
    result.output_is_backward.push_back(bw);
    if (!bw && out->producer()) stack.push_back(out->producer());
  }
  while (!stack.empty()) {
    const ir::Node* n = stack.back();
    stack.pop_back();
    NodeClass& cls = result.of[n];
    if (cls != NodeClass::Unclaimed) continue;
    cls = NodeClass::RequiredForward;
    for (size_t i = 0; i < n->num_operands(); ++i)
      if (const ir::Node* p = n->operand(i)->producer()) stack.push_back(p);
  }
  return result;
}

std::vector<const ir::Value*> forward_values_read_by_backward(const ir::Graph& joint, const Classification& classes) {
  std::vector<const ir::Value*> result;
  std::unordered_set<const ir::Value*> seen;
  for (const ir::Node* n : joint.nodes()) {
    if (!classes.is_backward(n)) continue;
    for (size_t i = 0; i < n->num_operands(); ++i) {
      const ir::Value* v = n->operand(i);
      if (v->is_graph_input() || classes.is_backward(v->producer())) continue;
      if (seen.insert(v).second) result.push_back(v);
    }
  }
  // Graph order of the producers, so a saved set reads the same whatever walk found it.
  std::stable_sort(result.begin(), result.end(), [](const ir::Value* a, const ir::Value* b) {
    return a->producer() != b->producer() ? a->producer()->is_before(b->producer())
                                          : a->output_index() < b->output_index();
  });
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
  for (ir::Node* n : graph.nodes()) {
    const std::string cls = to_string(classes.class_of(n));
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
