// The partition round trip of autoparallel PR 467 (historical bug 8), as one reusable
// function: partition a joint graph with min-cut, tag the saved values (ap_must_save),
// re-import the partitioned module as one graph (join_module: how passcheck "re-traces"
// it), clean it up (dce, then cse with merge-collectives so all_gather chains the backward
// repeats collapse), and partition it again with the tag-replaying save-all partitioner.
// The second partition must make the first's decisions: the same forward all_gather
// count, the same saved set (values compared by what they compute, so a value CSE merged
// into an equal one is the same value) and no higher peak memory (cse may lower it).
#pragma once

#include "framework/check/pass.h"
#include "framework/ir/graph.h"
#include "framework/ir/module.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace passcheck::passes {

/// Which registered passes each stage runs (mutants substitute theirs) and their options.
struct RoundTripOptions {
  std::string first_partition = "partition-min-cut";
  std::map<std::string, std::string> first_options;
  std::string cse = "cse";
  std::string second_partition = "partition-save-all";
  std::map<std::string, std::string> second_options;
  /// Registry the stages come from (null: PassRegistry::global()).
  const check::PassRegistry* registry = nullptr;
};

/// What one partition of the round trip looks like.
struct PartitionSummary {
  /// _c10d_functional::all_gather_into_tensor nodes in the forward part.
  int64_t forward_all_gathers = 0;
  /// The saved values: the forward part's names of the values it hands to the backward.
  std::vector<std::string> saved;
  /// Their structural keys (same key: same computation on the same module inputs).
  std::vector<std::string> saved_keys;
  int64_t saved_bytes = 0;
  /// Static peak: max(forward peak, saved bytes + backward peak), by check::estimate_memory.
  int64_t peak_bytes = 0;
};

struct RoundTripResult {
  ir::Module first;
  ir::Module second;
  PartitionSummary first_summary;
  PartitionSummary second_summary;
  /// One line per difference (all_gather count, a value saved by one partition only, a
  /// second peak above the first by more than `peak_tolerance`), naming the value; empty
  /// when the partitions agree.
  std::vector<std::string> differences;
  bool agree() const { return differences.empty(); }
  std::string report() const;
};

/// Runs the round trip on a copy of `joint`. A second peak above the first by more than
/// `peak_tolerance` (relative) counts as a difference. Throws what the passes throw.
RoundTripResult partition_round_trip(const ir::Graph& joint, const RoundTripOptions& options = {},
                                     double peak_tolerance = 0.01);

/// Summarizes a forward/backward module (part "forward" hands values to later parts).
PartitionSummary summarize_partition(const ir::Module& module);

}  // namespace passcheck::passes
