// The parallelized debug models on the real engine: every rank is a gloo process
// (forked by the local launcher), traces its graph on meta and trains it against eager on
// the same rank for 5 SGD steps, bit for bit, with the collective counts the sim suite
// derives (parallel_models_test.cpp). Each rank checks its own verdict and throws, so
// the launcher reports which rank differed and why.
#include "framework/dist/mesh.h"
#include "oracles/distributed_driver.h"
#include "suites/dist/dist_test_support.h"

#include <gtest/gtest.h>

namespace passcheck::testing {
namespace {

std::string run_on_gloo(const oracles::DriverOptions& options, const oracles::CollectiveCounts& expected) {
  return run_ranks("gloo", dist::DeviceMesh::parse(options.subject.parallel.mesh), [&](int64_t rank) {
    oracles::RankDriverReport r = oracles::run_rank_traced_vs_eager(options);
    if (!r.driver.equal()) throw std::runtime_error("traced differs from eager:\n" + r.driver.format());
    if (r.driver.steps.size() != 5) throw std::runtime_error("ran " + std::to_string(r.driver.steps.size()) + " steps");
    if (!(r.collectives == expected))
      throw std::runtime_error("collectives " + r.collectives.str() + ", expected " + expected.str());
  });
}

TEST(GlooModels, Llama3Fsdp) {
  EXPECT_EQ(run_on_gloo(small_parallel("llama3", "fsdp", "dp=4"), {kLlamaParams, kLlamaParams, 0, 0, 2 * kLlamaParams}), "");
}

TEST(GlooModels, Llama3Tp) { EXPECT_EQ(run_on_gloo(small_parallel("llama3", "tp", "tp=2"), {0, 0, 8, 0, 8}), ""); }

TEST(GlooModels, Llama3FsdpTp) {
  EXPECT_EQ(run_on_gloo(small_parallel("llama3", "fsdp,tp", "dp=2,tp=2"), {kLlamaParams, kLlamaParams, 8, 0, 2 * kLlamaParams + 8}),
            "");
}

TEST(GlooModels, DeepSeekV3Ep) {
  EXPECT_EQ(run_on_gloo(small_parallel("deepseek_v3", "ep", "ep=4"), {0, 0, 24, 4, 28}), "");
}

TEST(GlooModels, AMismatchOnOneRankIsReportedWithItsRank) {
  // The counts expected here are wrong on purpose: every rank must report the difference.
  std::string errors = run_on_gloo(small_parallel("llama3", "tp", "tp=2"), {0, 0, 9, 0, 9});
  EXPECT_NE(errors.find("rank 0: collectives all_gather 0, reduce_scatter 0, all_reduce 8"), std::string::npos) << errors;
  EXPECT_NE(errors.find("rank 1:"), std::string::npos) << errors;
}

}  // namespace
}  // namespace passcheck::testing
