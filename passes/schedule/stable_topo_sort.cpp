// Kahn's algorithm with a min-heap on the current position (stable_topo_sort.h).
#include "passes/schedule/stable_topo_sort.h"

#include "framework/exec/op_properties.h"

#include <functional>
#include <queue>
#include <unordered_map>

namespace passcheck::passes {

namespace {

std::string name_of(const ir::Node* n) {
  return n->num_outputs() ? "%" + n->output(0)->name() : "(" + n->op() + ")";
}

}  // namespace

bool is_order_barrier(const ir::Node& node) {
  return exec::is_mutating(node) || exec::has_side_effects(node) || exec::is_random(node);
}

TopoOrder stable_topological_order(const ir::Graph& graph, const std::vector<OrderEdge>& extra) {
  const std::vector<ir::Node*> nodes = graph.node_list();
  std::unordered_map<const ir::Node*, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i]] = i;
  std::vector<std::vector<size_t>> successors(nodes.size());
  std::vector<size_t> pending(nodes.size(), 0);
  auto edge = [&](size_t from, size_t to) {
    if (from == to) return;
    successors[from].push_back(to);
    ++pending[to];
  };
  // Barriers: every node between two barriers stays between them.
  std::optional<size_t> last_barrier;
  std::vector<size_t> since_barrier;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (is_order_barrier(*nodes[i])) {
      for (size_t j : since_barrier) edge(j, i);
      if (last_barrier) edge(*last_barrier, i);
      since_barrier.clear();
      last_barrier = i;
    } else {
      if (last_barrier) edge(*last_barrier, i);
      since_barrier.push_back(i);
    }
    for (const ir::Value* in : nodes[i]->operands()) {
      auto it = in->producer() ? index.find(in->producer()) : index.end();
      if (it != index.end()) edge(it->second, i);
    }
  }
  for (const auto& [first, second] : extra) edge(index.at(first), index.at(second));

  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.push(i);
  TopoOrder result;
  result.order.reserve(nodes.size());
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    result.order.push_back(nodes[i]);
    for (size_t s : successors[i])
      if (--pending[s] == 0) ready.push(s);
  }
  if (result.order.size() == nodes.size()) return result;
  // A cycle: walk back through unfinished predecessors from an unfinished node until one
  // repeats; the repeat closes the cycle.
  std::vector<std::vector<size_t>> unfinished_preds(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (size_t s : successors[i])
      if (pending[i] > 0 && pending[s] > 0) unfinished_preds[s].push_back(i);
  size_t at = 0;
  while (pending[at] == 0) ++at;
  std::vector<size_t> path;
  std::unordered_map<size_t, size_t> seen;
  while (!seen.count(at)) {
    seen[at] = path.size();
    path.push_back(at);
    at = unfinished_preds[at].front();
  }
  // Edges run at -> path.back() -> ... -> path[seen[at]] == at.
  std::string cycle = name_of(nodes[at]);
  for (size_t k = path.size(); k-- > seen[at];) cycle += " -> " + name_of(nodes[path[k]]);
  result.cycle = cycle;
  result.order.clear();
  return result;
}

bool apply_order(ir::Graph& graph, const std::vector<ir::Node*>& order) {
  bool moved = false;
  ir::Node* anchor = nullptr;  // the node placed last
  for (ir::Node* n : order) {
    ir::Node* expected = anchor ? anchor->next() : graph.first_node();
    if (expected != n) {
      if (anchor) n->move_after(anchor);
      else n->move_before(graph.first_node());
      moved = true;
    }
    anchor = n;
  }
  return moved;
}

std::optional<std::string> stable_topological_sort(ir::Graph& graph, const std::vector<OrderEdge>& extra,
                                                   bool* changed) {
  TopoOrder sorted = stable_topological_order(graph, extra);
  if (!sorted.acyclic()) {
    if (changed) *changed = false;
    return sorted.cycle;
  }
  bool moved = apply_order(graph, sorted.order);
  if (changed) *changed = moved;
  return std::nullopt;
}

}  // namespace passcheck::passes
