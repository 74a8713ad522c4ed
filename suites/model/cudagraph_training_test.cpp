// Training under the CUDA-graph wrapper (CPU replay backend) equals eager training bit for
// bit over 5 steps for every debug model: on the joint graph, and on the forward and
// backward parts the min-cut partitioner leaves (the backward's saved inputs static,
// since they are the captured forward's outputs). Each step's wrapper phases and copies
// are those of the seed: warm-up, capture, then replays that copy only the batch. A
// parameter re-allocated between steps is refused before the replay with its input index
// and its stale address.
#include "framework/check/pipeline.h"
#include "oracles/training_driver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace passcheck {
namespace {

using ::testing::HasSubstr;

oracles::DriverReport train_with(const std::string& model, const std::string& pipeline,
                                 oracles::OptimizerKind optimizer = oracles::OptimizerKind::SGD,
                                 std::function<void(int, models::TrainingSubject&)> after_step = nullptr) {
  oracles::DriverOptions options;
  options.model = model;
  options.steps = 5;
  options.optimizer = optimizer;
  options.after_step = std::move(after_step);
  options.subject = models::suite_options(model);
  if (model == "llama3") options.subject.seq_len = 32;
  options.transform = [&](trace::TracedProgram& program) {
    oracles::apply_pipeline(program, check::Pipeline::parse(pipeline));
  };
  return oracles::run_traced_vs_eager(options);
}

// Every step bitwise; the wrappers warm up at step 1, capture at step 2 and replay from
// step 3 on, copying at least one input per replay (the batch changes every step).
void expect_captured_training(const oracles::DriverReport& report) {
  ASSERT_EQ(report.steps.size(), 5u) << report.format();
  EXPECT_TRUE(report.equal()) << report.format();
  for (const oracles::StepReport& s : report.steps) {
    ASSERT_FALSE(s.captured.empty()) << "step " << s.step << "\n" << report.format();
    int64_t copies = 0;
    for (const auto& part : s.captured) {
      auto expected = s.step == 1 ? exec::CaptureCall::Phase::WarmUp
                                  : s.step == 2 ? exec::CaptureCall::Phase::Capture : exec::CaptureCall::Phase::Replay;
      EXPECT_EQ(part.call.phase, expected) << part.part << " at step " << s.step;
      copies += part.call.copies;
    }
    if (s.step >= 3) EXPECT_GE(copies, 1) << "step " << s.step << ": the new batch must be copied in";
    else EXPECT_EQ(copies, 0);
  }
  EXPECT_GT(report.steps.back().pool_bytes, 0);
  EXPECT_THAT(report.format(), HasSubstr("cudagraph pool:"));
}

class EveryModel : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryModel, JointGraphUnderTheWrapperTrainsBitwiseForFiveSteps) {
  expect_captured_training(train_with(GetParam(), "cudagraph"));
}

TEST_P(EveryModel, PartitionedForwardAndBackwardUnderTheWrapperTrainBitwise) {
  oracles::DriverReport report = train_with(GetParam(), "partition-min-cut,cudagraph");
  expect_captured_training(report);
  // Whole parts are captured, or, where the sparse MoE dispatch's grouped_mm reads its
  // offsets on the host, the segments around those eager islands of each part.
  bool forward = false, backward = false;
  for (const auto& p : report.steps.back().captured) {
    forward |= p.part == "forward" || p.part.rfind("forward_graph", 0) == 0;
    backward |= p.part == "backward" || p.part.rfind("backward_graph", 0) == 0;
  }
  EXPECT_TRUE(forward && backward) << report.format();
}

INSTANTIATE_TEST_SUITE_P(Cudagraph, EveryModel, ::testing::ValuesIn(models::available_subjects()));

TEST(CudagraphTraining, Llama3WithAdamTrainsBitwise) {
  expect_captured_training(train_with("llama3", "cudagraph", oracles::OptimizerKind::Adam));
}

TEST(CudagraphTraining, TheBackwardCopiesTheBatchAndNoSavedActivation) {
  // Saved activations are the captured forward's outputs, at fixed addresses: static.
  oracles::DriverReport report = train_with("llama3", "partition-min-cut,cudagraph");
  ASSERT_EQ(report.steps.size(), 5u);
  const auto& captured = report.steps.back().captured;
  ASSERT_EQ(captured.size(), 2u) << report.format();
  // Both parts copy the batch (tokens and labels: the backward's embedding gradient reads
  // the tokens, the loss gradient the labels) and nothing else: 2 int64 rows of 32.
  for (const auto& p : captured) {
    EXPECT_EQ(p.call.copies, 2) << p.part << "\n" << report.format();
    EXPECT_EQ(p.call.copy_bytes, 2 * 32 * 8) << p.part;
  }
}

// Re-allocate the first parameter after step 3, as a checkpoint load would: same values,
// new memory. The replay at step 4 would read the old storage; the wrapper refuses it.
void reallocate_first_parameter(int step, models::TrainingSubject& traced) {
  if (step != 3) return;
  at::NoGradGuard no_grad;
  at::Tensor p = traced.module()->parameters(true).at(0);
  p.set_(p.clone());
}

TEST(CudagraphTraining, AReallocatedParameterIsRefusedWithItsIndexAndStaleAddress) {
  oracles::DriverReport report = train_with("two_matmul", "cudagraph", oracles::OptimizerKind::SGD,
                                            reallocate_first_parameter);
  ASSERT_EQ(report.steps.size(), 4u) << report.format();
  EXPECT_TRUE(report.steps[2].equal());
  ASSERT_FALSE(report.steps[3].problems.empty()) << report.format();
  EXPECT_THAT(report.steps[3].problems[0], HasSubstr("input 0 (%"));
  EXPECT_THAT(report.steps[3].problems[0], HasSubstr("is static but moved"));
  EXPECT_THAT(report.steps[3].problems[0], HasSubstr("the replay would read the stale buffer at 0x"));
  EXPECT_FALSE(report.equal());
}

}  // namespace
}  // namespace passcheck
