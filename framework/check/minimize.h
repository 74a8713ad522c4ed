// Graph minimizer: shrinks a failing graph while a caller-supplied predicate ("the same
// property still fails") keeps holding, delta-debugging style. Two reductions keep the
// graph executable: dropping graph outputs, and cutting a node loose by turning its
// outputs into fresh graph inputs with the same type and metadata, after which every
// node that became dead is erased. Big chunks are tried first, then smaller ones, to a
// fixpoint. Every accepted candidate prints and parses back, so the result can go into
// a repro file.
#pragma once

#include "framework/ir/graph.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace passcheck::check {

/// True when the candidate still shows the failure being minimized.
using StillFails = std::function<bool(const ir::Graph&)>;

struct MinimizeOptions {
  /// Stop trying new candidates after this long (the best graph so far is returned).
  double max_seconds = 60;
  /// Called after every accepted reduction with the new node count (progress output).
  std::function<void(size_t nodes)> on_progress;
};

struct MinimizeResult {
  std::unique_ptr<ir::Graph> graph;
  size_t nodes_before = 0;
  size_t nodes_after = 0;
  int candidates_tried = 0;
  int candidates_accepted = 0;
  bool timed_out = false;
};

/// Shrinks `graph` while `still_fails` holds. `still_fails(graph)` should hold on entry;
/// if it does not, the graph comes back unchanged.
MinimizeResult minimize_graph(const ir::Graph& graph, const StillFails& still_fails, const MinimizeOptions& options = {});

/// Erases nodes with no users that neither write their inputs, draw random numbers nor
/// have side effects, until none is left. Returns how many were erased.
size_t erase_dead_nodes(ir::Graph& graph);

/// A violation message with value names, quoted node text and numbers blanked, cut at
/// its first ':' — two violations of the same kind share it ("failed after remat").
std::string violation_signature(const std::string& violation);

}  // namespace passcheck::check
