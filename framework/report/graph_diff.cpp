// Structural graph diff (see graph_diff.h).
#include "framework/report/graph_diff.h"

#include "framework/ir/graph.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace passcheck::report {

const char* to_string(Change change) {
  switch (change) {
    case Change::Kept: return "kept";
    case Change::Added: return "added";
    case Change::Removed: return "removed";
    case Change::Rewired: return "rewired";
    case Change::Retagged: return "retagged";
  }
  return "?";
}

size_t GraphDiff::count(Change change) const {
  size_t n = 0;
  for (const NodeChange& node : nodes) n += node.change == change;
  return n;
}

bool GraphDiff::unchanged() const {
  return interface_changes.empty() && count(Change::Added) == 0 && count(Change::Removed) == 0 &&
         count(Change::Rewired) == 0 &&
         count(Change::Retagged) == 0;
}

namespace {

std::vector<std::string> operand_names(const ir::Node& node) {
  std::vector<std::string> names;
  for (const ir::Value* v : node.operands()) names.push_back(v->name());
  return names;
}

// Keys of every node of `graph` in order. Output names are unique in a graph, so the
// first output's name with the operator is a stable key; a node without outputs is
// keyed by its operator and how many such nodes came before it.
std::vector<std::string> node_keys(const ir::Graph& graph) {
  std::vector<std::string> keys;
  std::map<std::string, int> without_outputs;
  for (const ir::Node* node : graph.nodes()) {
    if (node->num_outputs() > 0)
      keys.push_back("%" + node->output(0)->name() + " " + node->op());
    else
      keys.push_back(node->op() + " #" + std::to_string(without_outputs[node->op()]++));
  }
  return keys;
}

NodeChange describe(const ir::Node& node, const std::string& key, Change change) {
  NodeChange c;
  c.change = change;
  c.key = key;
  c.name = node.num_outputs() > 0 ? node.output(0)->name() : "";
  c.op = node.op();
  c.region = node.meta().module_fqn;
  c.phase = ir::to_string(node.meta().phase);
  return c;
}

}  // namespace

GraphDiff diff_graphs(const ir::Graph& before, const ir::Graph& after) {
  GraphDiff diff;
  diff.nodes_before = before.num_nodes();
  diff.nodes_after = after.num_nodes();
  const std::vector<std::string> before_keys = node_keys(before), after_keys = node_keys(after);
  std::unordered_map<std::string, const ir::Node*> before_by_key;
  {
    size_t i = 0;
    for (const ir::Node* node : before.nodes()) before_by_key[before_keys[i++]] = node;
  }
  std::unordered_map<std::string, bool> matched;
  size_t i = 0;
  for (const ir::Node* node : after.nodes()) {
    const std::string& key = after_keys[i++];
    auto it = before_by_key.find(key);
    if (it == before_by_key.end()) {
      NodeChange c = describe(*node, key, Change::Added);
      c.operands_after = operand_names(*node);
      diff.nodes.push_back(std::move(c));
      continue;
    }
    matched[key] = true;
    std::vector<std::string> was = operand_names(*it->second), now = operand_names(*node);
    const Change change = was != now                                 ? Change::Rewired
                          : it->second->meta() == node->meta() ? Change::Kept
                                                               : Change::Retagged;
    NodeChange c = describe(*node, key, change);
    c.operands_before = std::move(was);
    c.operands_after = std::move(now);
    diff.nodes.push_back(std::move(c));
  }
  i = 0;
  for (const ir::Node* node : before.nodes()) {
    const std::string& key = before_keys[i++];
    if (matched.count(key)) continue;
    NodeChange c = describe(*node, key, Change::Removed);
    c.operands_before = operand_names(*node);
    diff.nodes.push_back(std::move(c));
  }
  const auto& outs_before = before.outputs();
  const auto& outs_after = after.outputs();
  for (size_t k = 0; k < std::max(outs_before.size(), outs_after.size()); ++k) {
    std::string was = k < outs_before.size() ? "%" + outs_before[k]->name() : "(none)";
    std::string now = k < outs_after.size() ? "%" + outs_after[k]->name() : "(none)";
    if (was != now) diff.interface_changes.push_back("output " + std::to_string(k) + ": " + was + " -> " + now);
  }
  std::map<std::string, int> inputs;  // 1: before only, 2: after only, 3: both
  for (const ir::Value* v : before.inputs()) inputs[v->name()] |= 1;
  for (const ir::Value* v : after.inputs()) inputs[v->name()] |= 2;
  for (const auto& [name, where] : inputs)
    if (where != 3) diff.interface_changes.push_back((where == 1 ? "input only before: %" : "input only after: %") + name);
  return diff;
}

}  // namespace passcheck::report
