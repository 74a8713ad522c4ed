// Static peak-memory estimate (see memory_estimate.h).
#include "framework/check/memory_estimate.h"

#include "framework/exec/op_properties.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace passcheck::check {

MemoryEstimate estimate_memory(const ir::Graph& graph) {
  // Storage ids: 0 = a graph input's storage (never counted); others are created here.
  std::unordered_map<const ir::Value*, int64_t> storage_of;
  std::unordered_map<int64_t, int64_t> bytes_of, holders_of;
  // Storages written in place by a node that is not recomputable hold saved contents,
  // whatever allocated them (a dropout mask: empty_like, then a saved bernoulli_).
  std::unordered_map<int64_t, bool> written_by_saved;
  std::unordered_map<const ir::Value*, const ir::Node*> last_use;
  for (const ir::Node* n : graph.nodes())
    for (const ir::Value* v : n->operands()) last_use[v] = n;
  for (const ir::Value* in : graph.inputs()) storage_of[in] = 0;
  std::unordered_map<const ir::Value*, bool> is_output;
  for (const ir::Value* out : graph.outputs()) is_output[out] = true;

  MemoryEstimate est;
  est.live_bytes_per_node.reserve(graph.num_nodes());
  int64_t current = 0, next_storage = 1;
  bool backward_seen = false;
  auto release = [&](const ir::Value* v) {
    auto it = storage_of.find(v);
    if (it == storage_of.end() || it->second == 0) return;
    if (--holders_of[it->second] == 0) current -= bytes_of[it->second];
  };
  for (const ir::Node* n : graph.nodes()) {
    if (!backward_seen && n->meta().phase == ir::Phase::Backward) {
      backward_seen = true;
      est.live_at_backward_start = current;
      // Storages held now whose creator is a recomputable forward node.
      std::unordered_map<int64_t, bool> counted;
      for (const auto& [value, id] : storage_of) {
        const ir::Node* p = value->producer();
        if (id == 0 || !p || !ir::is_recomputable(p->meta().recompute) || holders_of[id] == 0 || counted[id] ||
            written_by_saved[id])
          continue;
        if (exec::aliases_input(*p)) continue;  // a view or in-place result: its storage's creator decides
        counted[id] = true;
        est.recomputable_live_at_backward_start += bytes_of[id];
      }
    }
    const bool aliases = exec::aliases_input(*n);
    const ir::Value* first_tensor_input = nullptr;
    for (const ir::Value* v : n->operands())
      if (v->type() == ir::ValueType::Tensor) {
        first_tensor_input = v;
        break;
      }
    for (const ir::Value* out : n->outputs()) {
      if (out->type() != ir::ValueType::Tensor) continue;
      int64_t id;
      if (aliases && first_tensor_input && storage_of.count(first_tensor_input)) {
        id = storage_of.at(first_tensor_input);
        if (exec::is_mutating(*n) && !ir::is_recomputable(n->meta().recompute)) written_by_saved[id] = true;
      } else {
        id = next_storage++;
        bytes_of[id] = out->meta() ? out->meta()->nbytes() : 0;
      }
      storage_of[out] = id;
      if (id != 0 && holders_of[id]++ == 0) current += bytes_of[id];
    }
    est.live_bytes_per_node.push_back(current);
    if (current > est.peak_bytes) {
      est.peak_bytes = current;
      est.peak_at = n;
    }
    std::vector<const ir::Value*> released;  // a value read twice by one node dies once
    for (const ir::Value* v : n->operands())
      if (last_use.at(v) == n && !is_output.count(v) &&
          std::find(released.begin(), released.end(), v) == released.end()) {
        released.push_back(v);
        release(v);
      }
    for (const ir::Value* out : n->outputs())
      if (!last_use.count(out) && !is_output.count(out)) release(out);
  }
  return est;
}

}  // namespace passcheck::check
