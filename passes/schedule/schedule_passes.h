// The scheduling family (specs/distributed.md "cap_compute_batch_size + stable
// topological sort"): passes that only reorder nodes.
//   prefetch-fsdp-all-gathers  issue every FSDP all_gather (with its single-input chain)
//                              at the top of the graph and the reduce_scatters in buckets,
//                              recording the compute order first
//   cap-compute-batch-size     cut runs of more than N compute nodes between
//                              reduce_scatters into chunks ordered after the recorded
//                              reduce_scatters, with the stable topological sort
#pragma once

#include "framework/check/pass.h"

namespace passcheck::passes {

/// Custom metadata keys of the recorded order (framework/ir/meta.h documents them).
constexpr const char* kScheduleRankKey = "schedule_rank";
constexpr const char* kScheduleReduceScatterKey = "schedule_rs_before";

/// Records on every compute node (exec::has_flop_formula) its rank among the compute
/// nodes and the output name of the nearest reduce_scatter before it, unless some node
/// already carries a recording (the first recording is the order before scheduling).
/// Returns how many nodes it recorded.
int64_t record_compute_order(ir::Graph& graph);

/// Whether a node is a _c10d_functional::reduce_scatter_tensor.
bool is_reduce_scatter(const ir::Node& node);

check::PassResult prefetch_fsdp_all_gathers_pass(ir::Graph& graph, const check::PassOptions& options);
check::PassResult cap_compute_batch_size_pass(ir::Graph& graph, const check::PassOptions& options);

void register_schedule_passes(check::PassRegistry& registry);

}  // namespace passcheck::passes
