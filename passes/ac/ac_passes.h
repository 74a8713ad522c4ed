// The activation-checkpointing family (specs/passes.md "AC family"):
//   ac-regions  each child of `layers` is one region (ac_region_id = layer index)
//   sac-tag     recompute policy per forward node (default / eager / full / op)
//   apply-ac    model-level AC: full, selective every n-th layer, or per-op
//   remat       duplicate recomputable forward nodes right before their first
//               backward use and drop the originals nothing else needs
#pragma once

#include "framework/check/pass.h"

#include <string_view>
#include <unordered_map>
#include <vector>

namespace passcheck::passes {

/// Node::op_base() ("mm" of "aten::mm.default") as a view into the node's operator: the
/// AC passes ask it of every forward node, and building a string each time showed.
inline std::string_view op_base_of(const ir::Node& n) {
  std::string_view name = n.op();
  auto dot = name.find('.');
  if (dot != std::string_view::npos) name = name.substr(0, dot);
  auto colon = name.rfind("::");
  return colon == std::string_view::npos ? name : name.substr(colon + 2);
}

check::PassResult ac_regions_pass(ir::Graph& graph, const check::PassOptions& options);
check::PassResult sac_tag_pass(ir::Graph& graph, const check::PassOptions& options);
check::PassResult apply_ac_pass(ir::Graph& graph, const check::PassOptions& options);
check::PassResult remat_pass(ir::Graph& graph, const check::PassOptions& options);

/// Upgrades a recomputable forward node that feeds a recomputable forward node of a
/// higher layer to MUST_SAVE, so recomputation never crosses a layer boundary.
/// Returns how many nodes changed; counts rule save-layer-boundary in `d`.
int64_t save_layer_boundaries(ir::Graph& graph, check::Decisions& d);

/// Upgrades recomputable nodes that are unsafe to recompute — in-place writes into saved
/// storage, reads of a surviving storage written later — to MUST_SAVE, to a fixpoint.
/// Returns how many changed; counts rule save-in-place-write and guards
/// writes-saved-storage / reads-value-written-later in `d`.
int64_t save_in_place_writes_to_saved_storage(ir::Graph& graph, check::Decisions& d);
class MutationIndex;
/// The same with the graph's mutation index already built (the index depends on the
/// graph's nodes and arguments only, not on their tags).
int64_t save_in_place_writes_to_saved_storage(ir::Graph& graph, check::Decisions& d, const MutationIndex& mutations);
/// The same over `candidates` already found: the forward nodes, in graph order, that
/// write in place or may read a storage written after them (MutationIndex::read_facts).
int64_t save_in_place_writes_to_saved_storage(check::Decisions& d, const MutationIndex& mutations,
                                              const std::vector<ir::Node*>& candidates);

/// A node that must run exactly once, in the forward: side effects other than writing a
/// fresh value (generator-state ops, prints), or an in-place write whose target is (a
/// view of) a graph input such as a buffer. Tagging makes these MUST_SAVE and
/// rematerialization never duplicates them.
bool must_stay_in_forward(const ir::Node& node);

/// Values written in place somewhere in a graph, by storage root (through views and
/// in-place results), with the writing nodes. A node reading such a root before one of
/// its writers must not be recomputed later: the recomputation would read the written
/// value (e.g. x + running_mean recomputed after running_mean.mul_(0.9)).
class MutationIndex {
 public:
  explicit MutationIndex(const ir::Graph& graph);
  /// True when some operand of `node` is written in place after `node` in a storage a
  /// recomputation would not create afresh (a graph input, or a saved value).
  bool reads_value_written_later(const ir::Node& node) const;
  /// The same without the exception for storages a recomputation creates afresh: what
  /// no retagging can change (false here: reads_value_written_later is false whatever
  /// the tags).
  bool may_read_value_written_later(const ir::Node& node) const;

  /// Both answers from one walk of the operands to their storage roots (a pass asking
  /// both for every node walks each operand once).
  struct ReadFacts {
    bool may_read_value_written_later = false;
    bool reads_value_written_later = false;
  };
  ReadFacts read_facts(const ir::Node& node) const;

 private:
  std::unordered_map<const ir::Value*, std::vector<const ir::Node*>> writers_;
};

/// An in-place node whose written storage would not be recreated by recomputation (its
/// chain of in-place producers reaches a saved node or a graph input): its duplicate
/// would write the saved value a second time (e.g. dividing a saved dropout mask again).
bool writes_saved_storage(const ir::Node& node);

/// The storage root of a value: follows views and in-place results to their source.
const ir::Value* storage_root(const ir::Value* v);

void register_ac_passes(check::PassRegistry& registry);

}  // namespace passcheck::passes
