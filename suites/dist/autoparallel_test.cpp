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
#include "framework/dist/communicator.h"
#include "framework/dist/mesh.h"
#include "oracles/distributed_driver.h"
#include "passes/partition/round_trip.h"
#include "suites/dist/dist_test_support.h"
#include "suites/mutants/mutants.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <mutex>
#include <set>

namespace passcheck::testing {
namespace {

using dist::DeviceMesh;
using oracles::CollectiveCounts;
using oracles::DriverOptions;

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

// The step-8 pipeline in upstream's order: tag the FSDP gathers for recompute, drop alias
// round trips, partition with min-cut, then on each part fuse the dp -> tp gather chains
// onto the column-major group, prefetch the gathers and cap the compute batches.
const char* const kAutoparallelPipeline =
    "force-recompute-fsdp-all-gather,eliminate-alias-round-trips,partition-min-cut,"
    "fuse-chained-allgathers{subgroup-order=\"dp,tp\",column-major-group=tp_dp},prefetch-fsdp-all-gathers,"
    "cap-compute-batch-size";

CollectiveCounts counts_of(const ir::Module& module) {
  CollectiveCounts total;
  for (const ir::ModulePart& part : module.parts) {
    CollectiveCounts c = oracles::count_collectives(*part.graph);
    total.all_gather += c.all_gather;
    total.reduce_scatter += c.reduce_scatter;
    total.all_reduce += c.all_reduce;
    total.all_to_all += c.all_to_all;
    total.wait += c.wait;
  }
  return total;
}

TEST(Autoparallel, TheFullPipelineKeepsEveryRankBitwiseEqualToEager) {
  DriverOptions options = small_parallel("llama3", "fsdp2d", "dp=2,tp=2");
  const check::Pipeline pipeline = check::Pipeline::parse(kAutoparallelPipeline);
  std::mutex mu;
  std::map<int64_t, std::pair<CollectiveCounts, int64_t>> after;  // rank -> collectives, saved bytes
  options.transform = [&](trace::TracedProgram& program) {
    oracles::apply_pipeline(program, pipeline, {}, [&](const ir::Module& module) {
      ASSERT_EQ(module.parts.size(), 2u);
      std::lock_guard<std::mutex> lock(mu);
      after[dist::current_rank().rank] = {counts_of(module), module.linked_bytes(0)};
    });
  };
  for (const auto& r : on_every_rank(options)) {
    EXPECT_TRUE(r.driver.equal()) << "rank " << r.rank << "\n" << r.driver.format();
    const auto& [counts, saved] = after.at(r.rank);
    // Each chain of two gathers is one gather over tp_dp now, in the forward (17) and in
    // the backward's recomputation of the gathered weights (16: all but the embedding).
    EXPECT_EQ(counts.all_gather, kLlamaParams + kLlamaParams - 1) << "rank " << r.rank << ": " << counts.str();
    EXPECT_GT(saved, 0) << "rank " << r.rank;
    std::printf("rank %lld: traced %s; after the pipeline %s, saved %lld bytes\n", static_cast<long long>(r.rank),
                r.collectives.str().c_str(), counts.str().c_str(), static_cast<long long>(saved));
  }
}

// The named pipeline "autoparallel" is the order above, and it runs on a 1-D FSDP mesh
// (no dp -> tp chains: fuse-chained-allgathers has nothing to fuse) keeping every rank's
// partitioned step bitwise equal to its eager step, with the weights gathered again in
// the backward.
TEST(Autoparallel, TheNamedPipelineIsTheStep8OrderAndHoldsOnAOneDimensionalFsdpMesh) {
  EXPECT_EQ(check::Pipeline::parse("autoparallel").str(), check::Pipeline::parse(kAutoparallelPipeline).str());
  DriverOptions options = small_parallel("llama3", "fsdp", "dp=2");
  options.steps = 2;
  const check::Pipeline pipeline = check::Pipeline::parse("autoparallel");
  std::mutex mu;
  std::map<int64_t, CollectiveCounts> after;
  options.transform = [&](trace::TracedProgram& program) {
    oracles::apply_pipeline(program, pipeline, {}, [&](const ir::Module& module) {
      ASSERT_EQ(module.parts.size(), 2u);
      std::lock_guard<std::mutex> lock(mu);
      after[dist::current_rank().rank] = counts_of(module);
    });
  };
  for (const auto& r : on_every_rank(options)) {
    EXPECT_TRUE(r.driver.equal()) << "rank " << r.rank << "\n" << r.driver.format();
    // One gather per parameter in the forward, again in the backward for all but the embedding.
    EXPECT_EQ(after.at(r.rank).all_gather, kLlamaParams + kLlamaParams - 1) << "rank " << r.rank;
  }
}

// Historical bug 8 (seed 467): the second partition of the re-imported first partition
// must save exactly what the first saved and gather as often in its forward.
passes::RoundTripResult round_trip_of_rank(int64_t rank, const passes::RoundTripOptions& options) {
  models::SubjectOptions subject = small_parallel("llama3", "fsdp2d", "dp=2,tp=2").subject;
  std::shared_ptr<ir::Graph> graph =
      oracles::trace_rank_graph("llama3", subject, DeviceMesh::parse("dp=2,tp=2"), rank);
  check::Pipeline::parse("force-recompute-fsdp-all-gather").run(*graph);
  return passes::partition_round_trip(*graph, options);
}

TEST(Autoparallel, TheSecondPartitionRecomputesWhatTheFirstDidOnEveryRank) {
  for (int64_t rank = 0; rank < 4; ++rank) {
    passes::RoundTripResult r = round_trip_of_rank(rank, {});
    EXPECT_TRUE(r.agree()) << "rank " << rank << "\n" << r.report();
    EXPECT_EQ(r.first_summary.forward_all_gathers, r.second_summary.forward_all_gathers) << "rank " << rank;
    EXPECT_EQ(std::set<std::string>(r.first_summary.saved_keys.begin(), r.first_summary.saved_keys.end()),
              std::set<std::string>(r.second_summary.saved_keys.begin(), r.second_summary.saved_keys.end()))
        << "rank " << rank;
    EXPECT_GT(r.first_summary.forward_all_gathers, 0);
    std::printf("rank %lld: %s\n", static_cast<long long>(rank), r.report().c_str());
  }
}

TEST(Autoparallel, TheRoundTripCatchesASecondPartitionThatRecomputesDifferently) {
  // Bug 8 through the save-all partitioner: it makes the second partition save less than
  // the first on a real rank graph. (Bug 16, CSE dropping a duplicate's ap_must_save, needs
  // a later duplicate that alone carries the tag; the rank graphs have none, so its mutant
  // is shown caught on a graph built for it in suites/unit/partition_mutants_test.cpp.)
  passes::RoundTripOptions options;
  options.registry = &mutants::registry_with_mutants();
  options.second_partition = "mutant-partition-save-all-ignores-multi-output-tags";
  passes::RoundTripResult r = round_trip_of_rank(0, options);
  ASSERT_FALSE(r.agree()) << "the bug-8 mutant went unnoticed:\n" << r.report();
  std::printf("bug 8 caught: %s\n", r.differences.front().c_str());
}

}  // namespace
}  // namespace passcheck::testing
