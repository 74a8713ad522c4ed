// Splitting a joint graph into a forward and a backward part at a chosen saved set
// (PyTorch's _extract_fwd_bwd_modules): part "forward" computes the forward results and
// the saved values (its outputs: forward results, then saved values); part "backward"
// receives the saved values as linked inputs plus the module inputs it reads, recomputes
// every forward node it needs that was not saved (a clone placed right before its first
// backward reader, phase backward, custom "recomputed_from" = the original's first output
// name, as the remat pass does), and returns the backward results. Running the two parts
// in order equals running the joint graph bit for bit. join_module() is the inverse.
#pragma once

#include "framework/ir/graph.h"
#include "framework/ir/module.h"
#include "passes/partition/classify.h"

#include <memory>
#include <string>
#include <vector>

namespace passcheck::passes {

/// A split joint graph and what the split decided.
struct SplitResult {
  ir::Module module;
  /// The saved values the backward really reads (graph inputs and unread values of the
  /// requested set dropped), in graph order; names are the joint's.
  std::vector<std::string> saved;
  /// Forward nodes the backward recomputes.
  int64_t recomputed_nodes = 0;
};

/// A graph input of `to` copying `from` (name, type, metadata, placements) with `role`.
ir::Value* copy_input(ir::Graph& to, const ir::Value* from, ir::InputRole role);
/// Copies what a part graph shares with the graph it was cut from: symbols, claims, mesh
/// and source name.
void copy_graph_context(const ir::Graph& from, ir::Graph& to);

/// A forward node the backward must never run again: it draws random numbers, writes
/// memory or has other side effects, or reads a storage written after it.
/// Returns the reason ("random", "mutating", "side-effects", "reads-value-written-later")
/// or null when the node may be recomputed.
const char* unsafe_to_recompute(const ir::Node& node);

/// Splits `joint` saving `saved` (forward values of `joint`; graph inputs are ignored,
/// the backward reads module inputs directly). Throws check::RefusedInput naming the
/// value when a saved value is a backward value, or when the backward needs a forward node
/// that unsafe_to_recompute() refuses and that is not saved.
SplitResult split_joint(const ir::Graph& joint, const std::vector<const ir::Value*>& saved,
                        const Classification& classes);
SplitResult split_joint(const ir::Graph& joint, const std::vector<const ir::Value*>& saved);
/// split_joint consuming the joint graph, which becomes the forward part: its forward
/// nodes stay where they are, the backward's nodes move into the backward part
/// (ir::Graph::adopt), only recomputed nodes are copied, and what neither part runs is
/// erased; `joint` is left null. The partitioner passes split this way: copying a
/// million-node graph and freeing the original cost more than the rest of the pass. The
/// module is the one split_joint gives (the same text). A refusal is thrown before
/// anything changes, leaving `joint` as it was; any other failure leaves an empty graph
/// with the same symbols, claims and mesh.
SplitResult split_joint_consuming(std::unique_ptr<ir::Graph>& joint, const std::vector<const ir::Value*>& saved,
                                  const Classification& classes);
class WrittenStorage;
/// The same with the joint graph's WrittenStorage (op_facts.h) already built by the
/// partitioner that chose `saved`.
SplitResult split_joint_consuming(std::unique_ptr<ir::Graph>& joint, const std::vector<const ir::Value*>& saved,
                                  const Classification& classes, const WrittenStorage& written);

/// join_module: the inverse of a split (how passcheck "re-traces" a partitioned module):
/// one graph taking the module's inputs, each part's nodes inlined in part order (linked
/// inputs replaced by the producing part's values), returning the module's results.
/// Every node keeps its metadata (recompute tags, recomputed_from, ap_must_save).
std::unique_ptr<ir::Graph> join_module(const ir::Module& module);

/// Custom metadata keys of the saved-set replay (framework/ir/meta.h lists them).
inline const char* ap_must_save_key() { return "ap_must_save"; }
inline const char* ap_save_outputs_key() { return "ap_save_outputs"; }
inline const char* recomputed_from_key() { return "recomputed_from"; }

}  // namespace passcheck::passes
