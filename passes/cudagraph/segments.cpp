// split_into_segments(): see segments.h.
#include "passes/cudagraph/segments.h"

#include "passes/partition/split.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace passcheck::passes {

std::string segment_name(const std::string& part, size_t index, bool captured) {
  return part + (captured ? "_graph" : "_eager") + std::to_string(index);
}

ir::Module split_into_segments(const ir::Graph& graph, const std::vector<size_t>& segment_of_node,
                               const std::vector<bool>& captured, const std::string& part) {
  const std::vector<ir::Node*> nodes = graph.node_list();
  const size_t num_segments = captured.size();
  if (segment_of_node.size() != nodes.size())
    throw std::invalid_argument("split_into_segments: " + std::to_string(segment_of_node.size()) +
                                " segment indices for " + std::to_string(nodes.size()) + " nodes");
  if (num_segments == 0) throw std::invalid_argument("split_into_segments: no segment");
  for (size_t i = 0; i < nodes.size(); ++i) {
    const size_t s = segment_of_node[i];
    const size_t prev = i == 0 ? 0 : segment_of_node[i - 1];
    if (s >= num_segments || s < prev || s > prev + (i == 0 ? 0 : 1))
      throw std::invalid_argument("split_into_segments: node " + std::to_string(i) + " gets segment " +
                                  std::to_string(s) + " after segment " + std::to_string(prev) +
                                  " (indices must start at 0, never decrease and skip none)");
  }
  if (!nodes.empty() && segment_of_node.back() + 1 != num_segments)
    throw std::invalid_argument("split_into_segments: segment " + std::to_string(segment_of_node.back() + 1) +
                                " has no node");

  // Segment of every node and of every value a node defines.
  std::unordered_map<const ir::Value*, size_t> segment_of;
  std::unordered_map<const ir::Node*, size_t> node_segment, position;
  for (size_t i = 0; i < nodes.size(); ++i) {
    node_segment[nodes[i]] = segment_of_node[i];
    position[nodes[i]] = i;
    for (const ir::Value* v : nodes[i]->outputs()) segment_of[v] = segment_of_node[i];
  }
  const std::unordered_set<const ir::Value*> returned(graph.outputs().begin(), graph.outputs().end());

  // Per segment: the values it returns (read by a later segment or by the graph), in
  // graph order.
  std::vector<std::vector<const ir::Value*>> outputs(num_segments);
  std::vector<std::unordered_set<const ir::Value*>> exported(num_segments);
  auto export_value = [&](const ir::Value* v, size_t s) {
    if (exported[s].insert(v).second) outputs[s].push_back(v);
  };
  // Graph inputs the graph returns go through segment 0, in input order.
  for (const ir::Value* in : graph.inputs())
    if (returned.count(in)) export_value(in, 0);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const ir::Value* v : nodes[i]->outputs()) {
      bool needed = returned.count(v) > 0;
      for (const ir::Use& u : v->uses())
        if (!u.is_graph_output() && node_segment.at(u.user) > segment_of_node[i]) needed = true;
      if (needed) export_value(v, segment_of_node[i]);
    }

  ir::Module module;
  for (const ir::Value* in : graph.inputs()) module.input_names.push_back(in->name());
  std::vector<std::unordered_map<const ir::Value*, size_t>> output_index(num_segments);
  for (size_t s = 0; s < num_segments; ++s)
    for (size_t o = 0; o < outputs[s].size(); ++o) output_index[s][outputs[s][o]] = o;

  size_t first = 0;
  for (size_t s = 0; s < num_segments; ++s) {
    size_t last = first;
    while (last < nodes.size() && segment_of_node[last] == s) ++last;
    // Inputs: graph inputs it reads (or passes through), then linked values, each in
    // graph order.
    std::unordered_set<const ir::Value*> read;
    for (size_t i = first; i < last; ++i)
      for (size_t k = 0; k < nodes[i]->num_operands(); ++k) read.insert(nodes[i]->operand(k));
    if (s == 0)
      for (const ir::Value* v : outputs[0])
        if (v->is_graph_input()) read.insert(v);
    auto g = std::make_unique<ir::Graph>();
    copy_graph_context(graph, *g);
    std::unordered_map<const ir::Value*, ir::Value*> map;
    ir::ModulePart p;
    // Graph inputs it reads, in input order (an input's output_index is its position).
    std::vector<const ir::Value*> read_inputs;
    for (const ir::Value* v : read)
      if (v->is_graph_input()) read_inputs.push_back(v);
    std::sort(read_inputs.begin(), read_inputs.end(),
              [](const ir::Value* a, const ir::Value* b) { return a->output_index() < b->output_index(); });
    for (const ir::Value* in : read_inputs) {
      map[in] = copy_input(*g, in, in->role());
      p.input_sources.push_back(std::nullopt);
    }
    // Linked values in graph order (producer position, then output index): sorting what
    // the segment reads, not scanning every earlier node per segment, which was
    // quadratic when a part splits into many segments.
    std::vector<std::pair<size_t, const ir::Value*>> linked;
    for (const ir::Value* v : read)
      if (!v->is_graph_input())
        if (auto at = position.find(v->producer()); at != position.end() && at->second < first)
          linked.emplace_back(at->second, v);
    std::sort(linked.begin(), linked.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second->output_index() < b.second->output_index();
    });
    for (const auto& [at, v] : linked) {
      map[v] = copy_input(*g, v, ir::InputRole::Argument);
      const size_t from = segment_of.at(v);
      p.input_sources.push_back(ir::PartOutput{from, output_index[from].at(v)});
    }
    for (size_t i = first; i < last; ++i) {
      ir::Node* copy = g->clone_node(*nodes[i], [&](ir::Value* v) { return map.at(v); });
      for (size_t k = 0; k < nodes[i]->num_outputs(); ++k) map[nodes[i]->output(k)] = copy->output(k);
    }
    for (const ir::Value* v : outputs[s]) g->add_output(map.at(v));
    p.name = segment_name(part, s, captured[s]);
    p.graph = std::move(g);
    module.parts.push_back(std::move(p));
    first = last;
  }
  for (const ir::Value* v : graph.outputs()) {
    const size_t s = v->is_graph_input() ? 0 : segment_of.at(v);
    module.outputs.push_back(ir::PartOutput{s, output_index[s].at(v)});
  }
  return module;
}

}  // namespace passcheck::passes
