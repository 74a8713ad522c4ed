// One rank of a parallelized model, checked and timed (the work behind
// `passcheck check|bench --parallel`): the rank's graph traced on meta with its
// placements, optionally rewritten by a pipeline, trained against eager on the same rank
// bit for bit; or its meta trace and traced step timed. Which ranks run where (threads on
// sim, processes on gloo) is the caller's choice: these run on the rank the calling
// thread or process is.
#pragma once

#include "oracles/distributed_driver.h"
#include "oracles/training_driver.h"

#include <cstdint>
#include <optional>
#include <string>

namespace passcheck::distributed {

/// What one rank's check produced.
struct RankCheck {
  int64_t rank = 0;
  bool ran = false;
  oracles::DriverReport report;
  size_t traced_nodes = 0;
  oracles::CollectiveCounts collectives;
  /// With a pipeline: nodes and collectives after it (over every part of a partitioned
  /// module) and the bytes the forward part saves for the backward (0 without a partition).
  std::optional<size_t> nodes_after;
  oracles::CollectiveCounts collectives_after;
  int64_t saved_bytes = 0;
  std::string error;
  /// Rank 0's sharded-vs-single-rank comparison, when asked for.
  std::optional<oracles::ShardedComparison> single_rank;
  bool equal() const {
    return ran && error.empty() && report.equal() && (!single_rank || single_rank->parameters.empty() || single_rank->ok());
  }
};

struct RankCheckOptions {
  /// Model, steps, optimizer, subject (with its parallel plan and mesh) and eager AC.
  oracles::DriverOptions driver;
  std::string pipeline;        ///< "" : none
  std::string dump_dir;        ///< "" : none; else rank<N>-traced.graph, rank<N>-after-pipeline.*
  bool compare_single_rank = false;
};

/// Checks rank `rank`: traced vs eager over the steps, with the pipeline applied to the
/// traced graph. Throws what the driver throws (bad input, a pass that fails its gate).
RankCheck check_rank(const RankCheckOptions& options, int64_t rank);

/// Medians of the meta-trace time and the traced step time of one rank (or of the
/// unsharded model, when `subject` has no parallel plan).
struct RankBench {
  double trace_meta_ms = 0;
  double step_ms = 0;
  size_t nodes = 0;
};
RankBench bench_rank_steps(const std::string& model, const models::SubjectOptions& subject, int warmup, int repeats);

}  // namespace passcheck::distributed
