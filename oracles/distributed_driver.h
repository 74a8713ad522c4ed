// The per-rank oracles of parallelized subjects (models/parallelize.h), run on every rank
// thread of a mesh backend: the traced-vs-eager comparison of a rank's own step (traced
// on meta, since tracing is serialized per process and a real trace would run
// collectives while other ranks wait), with the counts of collective nodes in its graph;
// and the comparison of sharded training with the single-rank model trained on the
// global batch.
#pragma once

#include "framework/dist/mesh.h"
#include "oracles/training_driver.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace passcheck::oracles {

/// Collective nodes of a traced graph, by operator.
struct CollectiveCounts {
  int64_t all_gather = 0, reduce_scatter = 0, all_reduce = 0, all_to_all = 0, wait = 0;
  /// "all_gather 24, reduce_scatter 24, all_reduce 0, all_to_all 0, wait_tensor 48".
  std::string str() const;
  bool operator==(const CollectiveCounts& o) const;
};
CollectiveCounts count_collectives(const ir::Graph& graph);

struct RankDriverReport {
  int64_t rank = 0;
  DriverReport driver;
  CollectiveCounts collectives;
  /// Collective nodes (waits included) the tracer attributed to no module: the backward
  /// of a custom autograd Function must still find the module it was applied in.
  int64_t collectives_without_module = 0;
};

/// The joint graph of `rank` of `mesh` for `model` parallelized by `options.parallel`,
/// traced on the meta device under a communicator that runs nothing (no other rank needs
/// to take part), with the placements the model declares recorded on its inputs. Throws
/// what plan resolution and tracing throw.
std::shared_ptr<ir::Graph> trace_rank_graph(const std::string& model, models::SubjectOptions options,
                                            const dist::DeviceMesh& mesh, int64_t rank);

/// run_traced_vs_eager on the calling rank with trace_on_meta forced on; the traced
/// graph carries the mesh, the rank and the model's placements (record_placements) before
/// `options.transform` sees it. After tracing,
/// every rank meets at a barrier over the whole mesh before the first step, so no rank
/// computes gradients while another traces (the tracer's backward marking looks at
/// every thread's gradient computation).
RankDriverReport run_rank_traced_vs_eager(DriverOptions options);

struct ShardedComparison {
  struct Parameter {
    std::string fqn;
    uint64_t max_ulp = 0;
    /// max |sharded - single| / max |single|: the difference relative to the parameter's scale.
    double relative = 0;
    bool same_shape = true;
  };
  std::vector<Parameter> parameters;  ///< filled on rank 0 only
  uint64_t max_ulp = 0;
  double max_relative = 0;
  double tolerance = 0;
  bool ok() const;
  /// One line per parameter and the verdict.
  std::string format() const;
};

/// Tolerance of sharded-vs-single-rank parameters after a few SGD steps, on the relative
/// difference (max ULP is reported too, but near-zero elements make it meaningless as a
/// bound: values of 1e-6 that differ in the last bits are 1e5 ULP apart). Reductions run
/// in another order (gradient sums over ranks, per-rank partial matmuls); the figures
/// measured in suites/dist/parallel_models_test.cpp and the margin to the wrong variants
/// are in docs/distributed-models.md.
constexpr double kShardedTolerance = 1e-5;

/// On every rank: trains `options.subject` (with its parallel plan) eagerly for
/// `options.steps` steps, gathers the full parameters, and on rank 0 trains the
/// single-rank model on the global batch (batch_size * batch slices; deepseek_v3 with
/// ep capacity groups) and compares every parameter. Other ranks return no parameters.
ShardedComparison compare_sharded_with_single_rank(const DriverOptions& options,
                                                   double tolerance = kShardedTolerance);

}  // namespace passcheck::oracles
