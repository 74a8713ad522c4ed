// The training-step benchmark (`passcheck bench --model M`): eager training-step time,
// traced-graph step time, tracing time (real and meta), joint-graph size and per-node
// executor overhead, measured side by side in one process. Eager and traced runs
// alternate so drift in machine speed hits both alike; figures are medians.
#pragma once

#include "oracles/models/subject.h"

#include <cstdint>
#include <string>
#include <vector>

namespace passcheck::bench {

struct TrainingStepFigures {
  double eager_s = 0, traced_s = 0;          ///< one training step
  double trace_real_s = 0, trace_meta_s = 0; ///< tracing it, real tensors and meta
  size_t nodes = 0;                          ///< the joint graph's
  double overhead_per_node_s = 0;            ///< run time outside operator calls, per node
  double kernel_share = 0;                   ///< share of the traced step inside operator calls
};

/// Measures `model` built with `subject` (warm-up runs first, then `repeats` timed runs).
TrainingStepFigures measure_training_step(const std::string& model, const models::SubjectOptions& subject, int warmup,
                                          int repeats);

/// Peak memory of one step under an activation-checkpointing policy.
struct AcPeak {
  std::string policy;              ///< "none", or default, eager, full, op
  int64_t traced_peak_bytes = 0;   ///< the traced graph (after ac-regions, sac-tag, remat)
  int64_t eager_peak_bytes = 0;    ///< eager with the same checkpointing (0 for "none")
  bool bitwise = true;             ///< traced + remat equal to eager with the same AC
};

/// The traced graph's peak without AC, then per policy traced + remat against eager with
/// the same checkpointing (one step each).
std::vector<AcPeak> measure_ac_peaks(const std::string& model, const models::SubjectOptions& subject);

}  // namespace passcheck::bench
