// split_into_segments(): see segments.h.
#include "passes/cudagraph/segments.h"

#include "framework/ir/pointer_index.h"
#include "passes/partition/split.h"

#include <algorithm>
#include <stdexcept>

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

  // Dense indices instead of hash maps keyed by pointer (a 10^6-node part was a few
  // million map entries, each its own allocation): a node's position, and per value the
  // index among its segment's results. A value is returned by one segment only: its
  // producer's, or segment 0 for a graph input.
  ir::PointerIndex position(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) position.insert(nodes[i], static_cast<uint32_t>(i));
  auto segment_of = [&](const ir::Value* v) -> size_t {
    if (v->is_graph_input()) return 0;
    const uint32_t at = position.find(v->producer());
    if (at == ir::PointerIndex::npos) throw std::out_of_range("split_into_segments: a value of another graph");
    return segment_of_node[at];
  };
  ir::PointerIndex returned(graph.outputs().size());
  for (const ir::Value* v : graph.outputs()) returned.insert(v, 0);

  // Per segment: the values it returns (read by a later segment or by the graph), in
  // graph order.
  std::vector<std::vector<const ir::Value*>> outputs(num_segments);
  ir::PointerIndex output_index(nodes.size() + graph.inputs().size());
  auto export_value = [&](const ir::Value* v, size_t s) {
    if (output_index.try_insert(v, static_cast<uint32_t>(outputs[s].size()))) outputs[s].push_back(v);
  };
  // Graph inputs the graph returns go through segment 0, in input order.
  for (const ir::Value* in : graph.inputs())
    if (returned.find(in) != ir::PointerIndex::npos) export_value(in, 0);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const ir::Value* v : nodes[i]->outputs()) {
      bool needed = returned.find(v) != ir::PointerIndex::npos;
      for (const ir::Use& u : v->uses()) {
        if (needed) break;
        if (u.is_graph_output()) continue;
        const uint32_t at = position.find(u.user);
        if (at == ir::PointerIndex::npos) throw std::out_of_range("split_into_segments: a use by a node of another graph");
        needed = segment_of_node[at] > segment_of_node[i];
      }
      if (needed) export_value(v, segment_of_node[i]);
    }
  auto result_index = [&](const ir::Value* v) -> size_t {
    const uint32_t o = output_index.find(v);
    if (o == ir::PointerIndex::npos) throw std::out_of_range("split_into_segments: a linked value no segment returns");
    return o;
  };

  ir::Module module;
  for (const ir::Value* in : graph.inputs()) module.input_names.push_back(in->name());

  size_t first = 0;
  std::vector<const ir::Value*> read;
  std::vector<ir::Value*> copies;  // by index in `copy_of`
  for (size_t s = 0; s < num_segments; ++s) {
    size_t last = first;
    while (last < nodes.size() && segment_of_node[last] == s) ++last;
    // Inputs: graph inputs it reads (or passes through), then linked values, each in
    // graph order.
    ir::PointerIndex seen(2 * (last - first) + 16);
    read.clear();
    auto note_read = [&](const ir::Value* v) {
      if (seen.try_insert(v, 0)) read.push_back(v);
    };
    for (size_t i = first; i < last; ++i)
      for (size_t k = 0; k < nodes[i]->num_operands(); ++k) note_read(nodes[i]->operand(k));
    if (s == 0)
      for (const ir::Value* v : outputs[0])
        if (v->is_graph_input()) note_read(v);
    auto g = std::make_unique<ir::Graph>();
    copy_graph_context(graph, *g);
    ir::PointerIndex copy_of(read.size() + 2 * (last - first) + 16);
    copies.clear();
    auto map_to = [&](const ir::Value* from, ir::Value* to) {
      copy_of.insert(from, static_cast<uint32_t>(copies.size()));
      copies.push_back(to);
    };
    ir::ModulePart p;
    // Graph inputs it reads, in input order (an input's output_index is its position).
    std::vector<const ir::Value*> read_inputs;
    for (const ir::Value* v : read)
      if (v->is_graph_input()) read_inputs.push_back(v);
    std::sort(read_inputs.begin(), read_inputs.end(),
              [](const ir::Value* a, const ir::Value* b) { return a->output_index() < b->output_index(); });
    for (const ir::Value* in : read_inputs) {
      map_to(in, copy_input(*g, in, in->role()));
      p.input_sources.push_back(std::nullopt);
    }
    // Linked values in graph order (producer position, then output index): sorting what
    // the segment reads, not scanning every earlier node per segment, which was
    // quadratic when a part splits into many segments.
    std::vector<std::pair<size_t, const ir::Value*>> linked;
    for (const ir::Value* v : read)
      if (!v->is_graph_input())
        if (const uint32_t at = position.find(v->producer()); at != ir::PointerIndex::npos && at < first)
          linked.emplace_back(at, v);
    std::sort(linked.begin(), linked.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second->output_index() < b.second->output_index();
    });
    for (const auto& [at, v] : linked) {
      map_to(v, copy_input(*g, v, ir::InputRole::Argument));
      const size_t from = segment_of(v);
      p.input_sources.push_back(ir::PartOutput{from, result_index(v)});
    }
    auto copied = [&](const ir::Value* v) -> ir::Value* {
      const uint32_t at = copy_of.find(v);
      if (at == ir::PointerIndex::npos) throw std::out_of_range("split_into_segments: %" + v->name() + " has no copy");
      return copies[at];
    };
    for (size_t i = first; i < last; ++i) {
      ir::Node* copy = g->clone_node(*nodes[i], copied);
      for (size_t k = 0; k < nodes[i]->num_outputs(); ++k) map_to(nodes[i]->output(k), copy->output(k));
    }
    for (const ir::Value* v : outputs[s]) g->add_output(copied(v));
    p.name = segment_name(part, s, captured[s]);
    p.graph = std::move(g);
    module.parts.push_back(std::move(p));
    first = last;
  }
  for (const ir::Value* v : graph.outputs()) {
    const size_t s = segment_of(v);
    module.outputs.push_back(ir::PartOutput{s, result_index(v)});
  }
  return module;
}

}  // namespace passcheck::passes
