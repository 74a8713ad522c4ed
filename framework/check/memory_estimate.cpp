// Static peak-memory estimate (see memory_estimate.h).
#include "framework/check/memory_estimate.h"

#include "framework/exec/op_properties.h"

#include <c10/util/flat_hash_map.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace passcheck::check {

MemoryEstimate estimate_memory(const ir::Graph& graph) {
  // Dense indices: graph inputs first, then every node's outputs in graph order; one
  // lookup table from value to index, arrays for the rest (fuzzing asks this of every
  // case, before and after the pipeline).
  constexpr uint32_t kNone = UINT32_MAX;
  ska::flat_hash_map<const ir::Value*, uint32_t> index_of;
  index_of.reserve(graph.inputs().size() + graph.num_nodes() * 2);
  std::vector<const ir::Value*> values;
  for (const ir::Value* in : graph.inputs()) {
    index_of.emplace(in, static_cast<uint32_t>(values.size()));
    values.push_back(in);
  }
  const size_t num_inputs = values.size();
  for (const ir::Node* n : graph.nodes())
    for (const ir::Value* out : n->outputs()) {
      index_of.emplace(out, static_cast<uint32_t>(values.size()));
      values.push_back(out);
    }
  std::vector<uint32_t> operand_index;  // every node's operands, in order (kNone: not a value of the graph)
  std::vector<uint32_t> last_use(values.size(), kNone);  // position of each value's last reader
  uint32_t position = 0;
  for (const ir::Node* n : graph.nodes()) {
    for (size_t slot = 0; slot < n->num_operands(); ++slot) {
      auto it = index_of.find(n->operand(slot));
      const uint32_t index = it == index_of.end() ? kNone : it->second;
      operand_index.push_back(index);
      if (index != kNone) last_use[index] = position;
    }
    ++position;
  }
  std::vector<uint8_t> is_output(values.size(), 0);
  for (const ir::Value* out : graph.outputs()) {
    auto it = index_of.find(out);
    if (it != index_of.end()) is_output[it->second] = 1;
  }

  // Storage ids: 0 = a graph input's storage (never counted); others are created here.
  constexpr int64_t kNoStorage = -1;
  std::vector<int64_t> storage_of(values.size(), kNoStorage);
  for (size_t i = 0; i < num_inputs; ++i) storage_of[i] = 0;
  std::vector<int64_t> bytes_of{0}, holders_of{0};
  // Storages written in place by a node that is not recomputable hold saved contents,
  // whatever allocated them (a dropout mask: empty_like, then a saved bernoulli_).
  std::vector<uint8_t> written_by_saved{0};

  MemoryEstimate est;
  est.live_bytes_per_node.reserve(graph.num_nodes());
  int64_t current = 0;
  bool backward_seen = false;
  auto release = [&](uint32_t v) {
    const int64_t id = storage_of[v];
    if (id <= 0) return;
    if (--holders_of[id] == 0) current -= bytes_of[id];
  };
  size_t k = 0;         // first operand of the node, in operand_index
  size_t next_out = num_inputs;  // index of the node's first output
  position = 0;
  std::vector<uint32_t> released;  // a value read twice by one node dies once
  for (const ir::Node* n : graph.nodes()) {
    if (!backward_seen && n->meta().phase == ir::Phase::Backward) {
      backward_seen = true;
      est.live_at_backward_start = current;
      // Storages held now whose creator is a recomputable forward node.
      std::vector<uint8_t> counted(bytes_of.size(), 0);
      for (size_t v = num_inputs; v < next_out; ++v) {
        const int64_t id = storage_of[v];
        const ir::Node* p = values[v]->producer();
        if (id <= 0 || !ir::is_recomputable(p->meta().recompute) || holders_of[id] == 0 || counted[id] ||
            written_by_saved[id])
          continue;
        if (exec::aliases_input(*p)) continue;  // a view or in-place result: its storage's creator decides
        counted[id] = 1;
        est.recomputable_live_at_backward_start += bytes_of[id];
      }
    }
    const size_t num_operands = n->num_operands();
    const bool aliases = exec::aliases_input(*n);
    uint32_t first_tensor_input = kNone;
    for (size_t s = 0; s < num_operands; ++s)
      if (n->operand(s)->type() == ir::ValueType::Tensor) {
        first_tensor_input = operand_index[k + s];
        break;
      }
    for (const ir::Value* out : n->outputs()) {
      const size_t v = next_out++;
      if (out->type() != ir::ValueType::Tensor) continue;
      int64_t id;
      if (aliases && first_tensor_input != kNone && storage_of[first_tensor_input] != kNoStorage) {
        id = storage_of[first_tensor_input];
        if (exec::is_mutating(*n) && !ir::is_recomputable(n->meta().recompute)) written_by_saved[id] = 1;
      } else {
        id = static_cast<int64_t>(bytes_of.size());
        bytes_of.push_back(out->meta() ? out->meta()->nbytes() : 0);
        holders_of.push_back(0);
        written_by_saved.push_back(0);
      }
      storage_of[v] = id;
      if (id != 0 && holders_of[id]++ == 0) current += bytes_of[id];
    }
    est.live_bytes_per_node.push_back(current);
    if (current > est.peak_bytes) {
      est.peak_bytes = current;
      est.peak_at = n;
    }
    released.clear();
    for (size_t s = 0; s < num_operands; ++s) {
      const uint32_t v = operand_index[k + s];
      if (v == kNone || last_use[v] != position || is_output[v] ||
          std::find(released.begin(), released.end(), v) != released.end())
        continue;
      released.push_back(v);
      release(v);
    }
    for (size_t v = next_out - n->num_outputs(); v < next_out; ++v)
      if (last_use[v] == kNone && !is_output[v]) release(static_cast<uint32_t>(v));
    k += num_operands;
    ++position;
  }
  return est;
}

}  // namespace passcheck::check
