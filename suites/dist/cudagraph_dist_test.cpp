// The CUDA-graph wrapper on an FSDP run of the sim mesh: every rank's graph (its
// all_gathers and reduce_scatters inside the captured parts) trains bitwise like eager for
// 5 steps under the replay backend, on the joint graph and on the min-cut partition's
// forward and backward, with the seed's phases and copies on every rank.
#include "dist_test_support.h"

#include "framework/check/pipeline.h"
#include "oracles/distributed_driver.h"

#include <gtest/gtest.h>

namespace passcheck::testing {
namespace {

void expect_every_rank_captured_and_bitwise(const std::string& model, const std::string& pipeline) {
  oracles::DriverOptions options = small_parallel(model, "fsdp", "dp=2");
  const check::Pipeline parsed = check::Pipeline::parse(pipeline);
  options.transform = [&](trace::TracedProgram& program) { oracles::apply_pipeline(program, parsed); };
  dist::DeviceMesh mesh = dist::DeviceMesh::parse(options.subject.parallel.mesh);
  std::vector<oracles::RankDriverReport> reports(mesh.world_size());
  std::string errors =
      run_ranks("sim", mesh, [&](int64_t rank) { reports[rank] = oracles::run_rank_traced_vs_eager(options); });
  ASSERT_EQ(errors, "");
  for (const oracles::RankDriverReport& r : reports) {
    const oracles::DriverReport& d = r.driver;
    EXPECT_TRUE(d.equal()) << "rank " << r.rank << "\n" << d.format();
    ASSERT_EQ(d.steps.size(), 5u);
    EXPECT_GT(r.collectives.all_gather, 0) << "an FSDP graph gathers its parameters";
    for (const oracles::StepReport& s : d.steps) {
      ASSERT_FALSE(s.captured.empty()) << "rank " << r.rank << " step " << s.step;
      for (const auto& part : s.captured)
        EXPECT_EQ(part.call.phase, s.step == 1   ? exec::CaptureCall::Phase::WarmUp
                                   : s.step == 2 ? exec::CaptureCall::Phase::Capture
                                                 : exec::CaptureCall::Phase::Replay)
            << "rank " << r.rank << " " << part.part << " step " << s.step;
    }
  }
}

TEST(CudagraphDist, Llama3FsdpJointGraphUnderTheWrapperIsBitwiseOnEveryRank) {
  expect_every_rank_captured_and_bitwise("llama3", "cudagraph");
}

TEST(CudagraphDist, Llama3FsdpPartitionedUnderTheWrapperIsBitwiseOnEveryRank) {
  expect_every_rank_captured_and_bitwise("llama3", "partition-min-cut,cudagraph");
}

}  // namespace
}  // namespace passcheck::testing
