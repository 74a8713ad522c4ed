// Static memory estimate of a graph: simulate the executor's lifetimes (values freed
// after their last use) with sizes from TensorMeta, outputs that alias an input (views,
// in-place results) sharing that input's storage. Gives the peak bytes held beyond the
// graph inputs without running anything, so every pass of a pipeline can report how it
// moved the peak.
#pragma once

#include "framework/ir/graph.h"

#include <cstdint>
#include <vector>

namespace passcheck::check {

struct MemoryEstimate {
  int64_t peak_bytes = 0;  ///< peak bytes of storages created by the graph
  const ir::Node* peak_at = nullptr;  ///< node after which the peak is reached
  /// Bytes of forward values still alive when the first backward node runs.
  int64_t live_at_backward_start = 0;
  /// Of those, the bytes of values whose producer is tagged recomputable: what
  /// rematerialization promises to stop holding across the boundary.
  int64_t recomputable_live_at_backward_start = 0;
  /// Bytes held right after each node's outputs are created (before its operands die),
  /// one entry per node in graph order: the memory timeline reports draw.
  std::vector<int64_t> live_bytes_per_node;
};

MemoryEstimate estimate_memory(const ir::Graph& graph);

}  // namespace passcheck::check
