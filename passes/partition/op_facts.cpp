// OpFactsCache: see op_facts.h.
#include "passes/partition/op_facts.h"

#include "framework/exec/op_properties.h"
#include "passes/partition/min_cut.h"

#include <algorithm>
#include <iterator>

namespace passcheck::passes {

const OpFacts& OpFactsCache::of(const ir::Node& node) {
  const std::string* op = &node.op();
  auto it = facts_.find(op);
  if (it != facts_.end()) return it->second;
  OpFacts f;
  f.mutating = exec::is_mutating(node);
  f.aliases_input = exec::aliases_input(node);
  f.collective = exec::is_collective(node);
  f.side_effects = exec::has_side_effects(node);
  f.compute_intensive = is_compute_intensive(node);
  f.heavy_outside_classic_list = is_heavy_kernel_outside_the_classic_list(node.op_base());
  return facts_.emplace(op, f).first->second;
}

const char* unsafe_to_recompute(const ir::Node& node, const OpFacts& facts) {
  // As unsafe_to_recompute(node): must_stay_in_forward holds only for nodes with side
  // effects, so has_side_effects || must_stay_in_forward is has_side_effects.
  if (exec::is_random(node)) return "random";
  if (facts.mutating) return "mutating";
  if (facts.side_effects) return "side-effects";
  return nullptr;
}

WrittenStorage::WrittenStorage(const Classification& classes, OpFactsCache& ops) : classes_(classes) {
  constexpr uint32_t npos = Classification::npos;
  const size_t values = classes.num_values();
  root_.resize(values);
  written_.assign(values, 0);
  last_writer_.assign(values, npos);
  op_.resize(classes.nodes.size());
  for (uint32_t id = 0; id < classes.num_inputs; ++id) root_[id] = id;
  for (uint32_t p = 0; p < classes.nodes.size(); ++p) {
    const ir::Node& node = *classes.nodes[p];
    const OpFacts& f = ops.of(node);
    op_[p] = &f;
    // storage_root: an aliasing node's outputs share its first operand's storage.
    uint32_t shared = npos;
    if (f.aliases_input && classes.operand_begin[p] < classes.operand_begin[p + 1]) {
      const uint32_t first = classes.operand_ids[classes.operand_begin[p]];
      if (first != npos) shared = root_[first];
      else conservative_ = true;  // a storage outside the graph: no cheap answer
    }
    for (size_t k = 0; k < node.num_outputs(); ++k) {
      const uint32_t id = classes.output_id(p, k);
      root_[id] = shared == npos ? id : shared;
    }
    if (!f.mutating) continue;
    auto written = exec::written_values(node);
    if (!written) continue;
    const uint32_t first_slot = classes.operand_begin[p];
    const uint32_t slots = classes.operand_begin[p + 1] - first_slot;
    for (const ir::Value* v : *written) {
      // A written value is an operand (out= and in-place arguments): its id is recorded.
      uint32_t slot = 0;
      while (slot < slots && node.operand(slot) != v) ++slot;
      const uint32_t id = slot < slots ? classes.operand_ids[first_slot + slot] : classes.value_id(v);
      if (id == npos) {
        conservative_ = true;  // a write outside the graph: no cheap answer
        continue;
      }
      written_[root_[id]] = 1;
      last_writer_[root_[id]] = p;  // positions only grow: the last one stays
      any_ = true;
    }
  }
}

bool WrittenStorage::reads_value_written_later(const ir::Graph& joint, uint32_t position) const {
  if (!reads_written_storage(position)) return false;
  if (conservative_) {
    if (!mutations_) mutations_.emplace(joint);
    return mutations_->reads_value_written_later(*classes_.nodes[position]);
  }
  // As MutationIndex::read_facts: operands in slot order, the first root written later
  // whose storage a recomputation would not create afresh decides.
  for (uint32_t s = classes_.operand_begin[position]; s < classes_.operand_begin[position + 1]; ++s) {
    const uint32_t id = classes_.operand_ids[s];
    if (id == Classification::npos) continue;  // not conservative: nothing outside the graph is written
    const uint32_t root = root_[id];
    if (last_writer_[root] == Classification::npos || last_writer_[root] <= position) continue;
    if (root >= classes_.num_inputs) {
      const ir::Node* creator = classes_.nodes[classes_.value_producer[root]];
      if (ir::is_recomputable(creator->meta().recompute) && !must_stay_in_forward(*creator)) continue;
    }
    return true;
  }
  return false;
}

bool WrittenStorage::reads_written_storage(uint32_t position) const {
  if (conservative_) return true;
  if (!any_) return false;
  for (uint32_t s = classes_.operand_begin[position]; s < classes_.operand_begin[position + 1]; ++s) {
    const uint32_t id = classes_.operand_ids[s];
    if (id == Classification::npos || written_[root_[id]]) return true;
  }
  return false;
}

// PyTorch's min-cut never recomputes these: it bans every op outside its recomputable
// allowlist, and none of these is on it.
bool is_heavy_kernel_outside_the_classic_list(const std::string& base) {
  static const char* const kOps[] = {"_scaled_dot_product_flash_attention_for_cpu",
                                     "_scaled_dot_product_fused_attention_overrideable",
                                     "_scaled_dot_product_attention_math", "_scaled_mm", "_grouped_mm"};
  return std::any_of(std::begin(kOps), std::end(kOps), [&](const char* op) { return base == op; });
}

}  // namespace passcheck::passes
