// Min-cut rematerialization (PyTorch's min_cut_rematerialization_partition, rules in
// specs/distributed.md "Partitioners"): which forward values to save for the backward so
// that the bytes saved, weighted towards values near the backward, are least, given
// which forward nodes may be recomputed. Each node X becomes an edge X_in -> X_out whose
// capacity is the bytes it would save; a cut separating the source (graph inputs and
// banned nodes: they run only in the forward) from the sink (the backward, and nodes
// that must be recomputed) is a saved set; Boost.Graph's Boykov-Kolmogorov max-flow
// finds the least one.
#pragma once

#include "framework/check/pass.h"
#include "framework/ir/graph.h"
#include "passes/partition/classify.h"

#include <string>
#include <vector>

namespace passcheck::passes {

struct MinCutOptions {
  /// Fraction of the plain min-cut's saved bytes the cut should fit in (1: plain min-cut).
  /// Below 1, compute-intensive nodes become recomputable one at a time in graph order
  /// until the saved bytes fit (see min_cut_saved_values).
  double memory_budget = 1.0;
};

/// Why a forward node is banned from recomputation (fed from the source); null when it
/// is not. `dist_from_backward` as PyTorch computes it.
const char* ban_reason(const ir::Node& node, NodeClass cls, int64_t dist_from_backward);

/// Compute-intensive operators (mm, bmm, addmm, convolution, attention with the CPU flash
/// kernel, _scaled_mm, _grouped_mm): banned, and the
/// candidates a memory budget below 1 unbans.
bool is_compute_intensive(const ir::Node& node);

struct MinCutResult {
  /// The cut values (graph inputs excluded: the backward reads module inputs), in graph
  /// order.
  std::vector<const ir::Value*> saved;
  /// Bytes of `saved` by their metadata.
  int64_t saved_bytes = 0;
  /// Bytes the plain (budget 1) cut saves.
  int64_t unbudgeted_bytes = 0;
  /// Compute-intensive nodes made recomputable to meet the budget.
  int64_t unbanned = 0;
  /// Max-flow value of the chosen cut.
  int64_t cut_capacity = 0;
};

/// Chooses the saved set of `joint`. With a budget below 1: for k = 0, 1, ... the first k
/// compute-intensive candidates (graph order) are unbanned; the result is the first k
/// whose saved bytes fit budget x unbudgeted bytes, or, when none fits, the k with the
/// fewest saved bytes (first on ties). Hence saved bytes never grow as the budget
/// shrinks. Counts ban guards and rules into `d`. Throws check::RefusedInput when no
/// finite cut exists.
MinCutResult min_cut_saved_values(const ir::Graph& joint, const Classification& classes, const MinCutOptions& options,
                                  check::Decisions& d);
class WrittenStorage;
/// The same with the joint graph's WrittenStorage (op_facts.h) built by the caller, who
/// hands it on to the split.
MinCutResult min_cut_saved_values(const ir::Graph& joint, const Classification& classes, const MinCutOptions& options,
                                  check::Decisions& d, const WrittenStorage& written);

/// partition-min-cut: module pass on a one-part module; leaves parts forward and backward.
check::PassResult partition_min_cut_pass(ir::Module& module, const check::PassOptions& options);
check::PassInfo partition_min_cut_pass_info();

}  // namespace passcheck::passes
