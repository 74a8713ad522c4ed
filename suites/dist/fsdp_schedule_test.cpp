// The FSDP and scheduling passes on real per-rank graphs: llama3 traced with FSDP on a
// dp=2 sim mesh (2 blocks, 17 parameters, one all_gather + wait per parameter in the
// forward and one reduce_scatter per gradient in the backward). On every rank:
// force-recompute-fsdp-all-gather tags every unshard chain and remat after it keeps the
// training steps bitwise equal to eager with no gathered weight held across the
// boundary, while historical bug 5's mutant leaves the transposed weights saved;
// prefetch-fsdp-all-gathers batches more than 8 compute nodes between reduce_scatters in
// the backward, cap-compute-batch-size brings every run back to at most 8, and both keep
// the steps bitwise equal.
#include "framework/check/distributed_properties.h"
#include "framework/check/pipeline.h"
#include "framework/exec/op_properties.h"
#include "oracles/distributed_driver.h"
#include "passes/fsdp/fsdp_passes.h"
#include "suites/dist/dist_test_support.h"
#include "suites/mutants/mutants.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>

namespace passcheck::testing {
namespace {

// Runs the driver with `transform` on every rank of dp=2; returns the reports.
std::vector<oracles::RankDriverReport> on_every_rank(int steps, const std::function<void(int64_t, ir::Graph&)>& transform) {
  oracles::DriverOptions options = small_parallel("llama3", "fsdp", "dp=2");
  options.steps = steps;
  dist::DeviceMesh mesh = dist::DeviceMesh::parse("dp=2");
  std::vector<oracles::RankDriverReport> reports(mesh.world_size());
  std::string errors = run_ranks("sim", mesh, [&](int64_t rank) {
    oracles::DriverOptions mine = options;
    mine.transform = [&, rank](trace::TracedProgram& program) { transform(rank, program.mutable_graph()); };
    reports[rank] = oracles::run_rank_traced_vs_eager(mine);
  });
  EXPECT_EQ(errors, "");
  return reports;
}

bool is_tagged(const ir::Node& n) {
  return n.meta().recompute == ir::RecomputePolicy::MustRecompute && n.meta().ac_region_id == passes::kFsdpUnshardRegion;
}

// The longest run of compute nodes between two reduce_scatters in the backward.
int64_t longest_backward_compute_run(const ir::Graph& g) {
  int64_t longest = 0, run = 0;
  bool backward = false;
  for (const ir::Node* n : g.nodes()) {
    backward |= n->meta().phase == ir::Phase::Backward;
    if (!backward) continue;
    if (n->op() == "_c10d_functional::reduce_scatter_tensor") run = 0;
    else if (exec::has_flop_formula(*n)) longest = std::max(longest, ++run);
  }
  return longest;
}

TEST(FsdpPasses, ForceRecomputeTagsEveryUnshardAndRematKeepsEveryRankBitwise) {
  std::mutex m;
  std::vector<std::string> problems;
  auto reports = on_every_rank(3, [&](int64_t rank, ir::Graph& g) {
    check::Pipeline::parse("force-recompute-fsdp-all-gather").run(g);
    int64_t waits = 0, transposes = 0;
    std::vector<std::string> mine;
    for (const ir::Node* n : g.nodes()) {
      ir::Node* ag = check::fsdp_all_gather_of(*n);
      if (!ag || n->meta().phase != ir::Phase::Forward) continue;
      ++waits;
      if (!is_tagged(*ag) || !is_tagged(*n)) mine.push_back("untagged unshard %" + n->output(0)->name());
      for (const ir::Use& u : n->output(0)->uses())
        if (u.user && u.user->op() == "aten::t") {
          ++transposes;
          if (!is_tagged(*u.user)) mine.push_back("untagged transpose %" + u.user->output(0)->name());
        }
    }
    if (waits != kLlamaParams) mine.push_back("FSDP waits: " + std::to_string(waits));
    // wqkv, wo, w1, w2, w3 per block and the output projection.
    if (transposes != 5 * 2 + 1) mine.push_back("transposes after a wait: " + std::to_string(transposes));
    check::Pipeline::parse("remat").run(g);
    for (const std::string& v : check::check_gathered_parameters_not_saved(g)) mine.push_back(v);
    std::lock_guard<std::mutex> lock(m);
    for (const std::string& p : mine) problems.push_back("rank " + std::to_string(rank) + ": " + p);
  });
  EXPECT_THAT(problems, ::testing::IsEmpty());
  for (const auto& r : reports) EXPECT_TRUE(r.driver.equal()) << "rank " << r.rank << "\n" << r.driver.format();
}

TEST(FsdpPasses, Bug5MutantLeavesTheTransposedGatheredWeightsSaved) {
  std::mutex m;
  std::vector<std::string> violations;
  on_every_rank(1, [&](int64_t rank, ir::Graph& g) {
    check::Pipeline::parse("mutant-force-recompute-fsdp-tags-only-slice,remat", mutants::registry_with_mutants()).run(g);
    auto mine = check::check_gathered_parameters_not_saved(g);
    std::lock_guard<std::mutex> lock(m);
    if (rank == 0) violations = mine;
  });
  // Each block's five projections and the output projection keep their transpose.
  EXPECT_EQ(violations.size(), 11u) << ::testing::PrintToString(violations);
  ASSERT_FALSE(violations.empty());
  EXPECT_THAT(violations[0], ::testing::MatchesRegex("%t(_[0-9]+)? \\(derived only from the all-gathered parameter "
                                                     "%[a-z0-9_.]+\\) is held from the forward into the backward.*"));
}

TEST(SchedulePasses, PrefetchBatchesComputeAndCapBoundsEveryBackwardRunBitwise) {
  std::mutex m;
  std::vector<int64_t> traced(2), scheduled(2), capped(2);
  std::vector<int64_t> fallbacks(2, -1);
  auto reports = on_every_rank(3, [&](int64_t rank, ir::Graph& g) {
    int64_t t = longest_backward_compute_run(g);
    check::Pipeline::parse("prefetch-fsdp-all-gathers").run(g);
    int64_t s = longest_backward_compute_run(g);
    auto records = check::Pipeline::parse("cap-compute-batch-size").run(g);
    std::lock_guard<std::mutex> lock(m);
    traced[rank] = t;
    scheduled[rank] = s;
    capped[rank] = longest_backward_compute_run(g);
    fallbacks[rank] = records.back().stats.count("cycle_fallbacks") ? records.back().stats.at("cycle_fallbacks") : 0;
  });
  for (int64_t rank = 0; rank < 2; ++rank) {
    std::printf("rank %ld: longest backward compute run traced %ld, after prefetch %ld, after cap %ld\n",
                static_cast<long>(rank), static_cast<long>(traced[rank]), static_cast<long>(scheduled[rank]),
                static_cast<long>(capped[rank]));
    EXPECT_LE(traced[rank], 8);
    EXPECT_GT(scheduled[rank], 8);
    EXPECT_LE(capped[rank], 8);
    EXPECT_EQ(fallbacks[rank], 0);
  }
  for (const auto& r : reports) EXPECT_TRUE(r.driver.equal()) << "rank " << r.rank << "\n" << r.driver.format();
}

}  // namespace
}  // namespace passcheck::testing
