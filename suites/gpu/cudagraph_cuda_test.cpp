// GPU suite: training under real CUDA graphs (backend=cuda) equals eager training bit for
// bit over 5 steps, on the joint graph and on the partitioned forward and backward, with
// the seed's phases and copies; a re-allocated parameter is refused. Skipped without a
// CUDA device.
#include "framework/check/pipeline.h"
#include "oracles/training_driver.h"

#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace passcheck {
namespace {

class CudaGraphs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  }
};

oracles::DriverReport train_through_cudagraph(const std::string& model, const std::string& pipeline,
                                    std::function<void(int, models::TrainingSubject&)> after_step = nullptr) {
  oracles::DriverOptions options;
  options.model = model;
  options.steps = 5;
  options.subject.device = c10::Device(c10::DeviceType::CUDA, 0);
  options.after_step = std::move(after_step);
  options.transform = [&](trace::TracedProgram& program) {
    oracles::apply_pipeline(program, check::Pipeline::parse(pipeline));
  };
  return oracles::run_traced_vs_eager(options);
}

TEST_F(CudaGraphs, EveryModelTrainsBitwiseUnderRealCudaGraphs) {
  for (const std::string& model : models::available_subjects()) {
    for (const char* pipeline : {"cudagraph{backend=cuda}", "partition-min-cut,cudagraph{backend=cuda}"}) {
      SCOPED_TRACE(model + " " + pipeline);
      oracles::DriverReport report = train_through_cudagraph(model, pipeline);
      EXPECT_TRUE(report.equal()) << report.format();
      ASSERT_EQ(report.steps.size(), 5u);
      ASSERT_FALSE(report.steps.back().captured.empty());
      for (const auto& part : report.steps.back().captured)
        EXPECT_EQ(part.call.phase, exec::CaptureCall::Phase::Replay) << part.part;
      std::printf("%s", report.format_footer().c_str());
    }
  }
}

TEST_F(CudaGraphs, AReallocatedParameterIsRefused) {
  oracles::DriverReport report = train_through_cudagraph("two_matmul", "cudagraph{backend=cuda}", [](int step, models::TrainingSubject& s) {
    if (step != 3) return;
    at::NoGradGuard no_grad;
    at::Tensor p = s.module()->parameters(true).at(0);
    p.set_(p.clone());
  });
  ASSERT_EQ(report.steps.size(), 4u) << report.format();
  EXPECT_THAT(report.steps[3].problems.at(0), ::testing::HasSubstr("is static but moved"));
}

}  // namespace
}  // namespace passcheck
