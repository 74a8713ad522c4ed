// What the partitioners ask of every node's operator (framework/exec/op_properties.h and
// the compute-intensive list), looked up once per operator name in a pass rather than
// once per question and node: exec's property cache takes a lock and hashes the operator
// name on every call. Only operator-level facts are cached; is_random (which reads a
// dropout_p argument) and written_values are still asked per node.
#pragma once

#include "framework/ir/graph.h"
#include "passes/ac/ac_passes.h"
#include "passes/partition/classify.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace passcheck::passes {

struct OpFacts {
  bool mutating = false;
  bool aliases_input = false;
  bool collective = false;
  bool side_effects = false;
  bool compute_intensive = false;
  /// One of the kernels outside PyTorch's classic compute-intensive list (CPU flash
  /// attention, _scaled_mm, _grouped_mm).
  bool heavy_outside_classic_list = false;
};

/// Per-pass cache of OpFacts by operator, keyed by the address of the node's interned
/// operator name (ir::intern_operator: one string per name, alive as long as the process).
class OpFactsCache {
 public:
  const OpFacts& of(const ir::Node& node);

 private:
  std::unordered_map<const std::string*, OpFacts> facts_;
};

/// unsafe_to_recompute (split.h) from the node's facts: the reason, or null.
const char* unsafe_to_recompute(const ir::Node& node, const OpFacts& facts);

/// Which nodes of a classified joint graph read a storage some in-place node writes, and
/// MutationIndex::reads_value_written_later (passes/ac) for them: the storage root of
/// every value (views and in-place results followed to their source, as storage_root
/// does) and the last node writing each root, by dense id, found in one walk.
class WrittenStorage {
 public:
  WrittenStorage(const Classification& classes, OpFactsCache& ops);
  /// False when no operand of the node at `position` shares a storage root with a value
  /// some node writes in place.
  bool reads_written_storage(uint32_t position) const;
  /// MutationIndex(joint).reads_value_written_later(node at `position`): an operand's
  /// storage is written in place after the node, and a recomputation would not create
  /// that storage afresh. From the dense roots; where a value lies outside the graph, from
  /// a MutationIndex of `joint` built on first need.
  bool reads_value_written_later(const ir::Graph& joint, uint32_t position) const;
  /// The operator facts of the node at `position` (asked of every node on the way).
  const OpFacts& op(uint32_t position) const { return *op_[position]; }
  /// False when no node of the graph writes in place.
  bool any() const { return any_ || conservative_; }

 private:
  const Classification& classes_;
  std::vector<const OpFacts*> op_;  // per position
  std::vector<uint32_t> root_;     // per value id: its storage root's id
  std::vector<uint8_t> written_;   // per value id (roots only): written in place
  std::vector<uint32_t> last_writer_;  // per value id (roots only): position of the last writer, npos: none
  mutable std::optional<MutationIndex> mutations_;  // the conservative case only
  bool any_ = false;
  bool conservative_ = false;  // a value outside the graph: every node may read a written storage
};

/// The kernels scaled_dot_product_attention and the grouped/scaled matmuls dispatch to on
/// the CPU and for low precision (`base`: the operator name without namespace and
/// overload).
bool is_heavy_kernel_outside_the_classic_list(const std::string& base);

}  // namespace passcheck::passes
