// The seven debug models at their full debug sizes (CTest label zoo_full; configure with
// -DPASSCHECK_FULL_SUITES=ON): traced == eager bit for bit over 5 SGD steps traced on
// real tensors and 5 Adam steps traced on meta; llama4 and gpt_oss also at 512 tokens,
// where their chunked and sliding-window masks matter; qwen3 and qwen3_moe in bf16.
// CI runs the same checks at models::suite_options sizes (suites/model/zoo_test.cpp).
#include "oracles/models/zoo.h"
#include "oracles/training_driver.h"

#include <gtest/gtest.h>

namespace passcheck {
namespace {

oracles::DriverReport train(const std::string& model, oracles::OptimizerKind optimizer, bool meta,
                            models::SubjectOptions subject = {}) {
  oracles::DriverOptions options;
  options.model = model;
  options.subject = subject;
  options.steps = 5;
  options.optimizer = optimizer;
  options.trace_on_meta = meta;
  return oracles::run_traced_vs_eager(options);
}


class FullSize : public ::testing::TestWithParam<std::string> {};

TEST_P(FullSize, SgdTracedOnRealTensorsIsBitwiseOverFiveSteps) {
  oracles::DriverReport report = train(GetParam(), oracles::OptimizerKind::SGD, false);
  ASSERT_EQ(report.steps.size(), 5u);
  EXPECT_TRUE(report.equal()) << report.format();
}

TEST_P(FullSize, AdamTracedOnMetaIsBitwiseOverFiveSteps) {
  oracles::DriverReport report = train(GetParam(), oracles::OptimizerKind::Adam, true);
  ASSERT_EQ(report.steps.size(), 5u);
  EXPECT_TRUE(report.equal()) << report.format();
}

INSTANTIATE_TEST_SUITE_P(Zoo, FullSize, ::testing::ValuesIn(models::debug_models()));

class FullSizeLongSequence : public ::testing::TestWithParam<std::string> {};

TEST_P(FullSizeLongSequence, MasksPast128TokensTrainBitwise) {
  models::SubjectOptions subject;
  subject.batch_size = 1;
  subject.seq_len = 512;
  oracles::DriverReport report = train(GetParam(), oracles::OptimizerKind::Adam, false, subject);
  EXPECT_TRUE(report.equal()) << report.format();
}

INSTANTIATE_TEST_SUITE_P(Zoo, FullSizeLongSequence, ::testing::Values("llama4", "gpt_oss"));

class FullSizeBf16 : public ::testing::TestWithParam<std::string> {};

TEST_P(FullSizeBf16, TracedEqualsEagerInBfloat16) {
  models::SubjectOptions subject;
  subject.dtype = c10::ScalarType::BFloat16;
  oracles::DriverReport report = train(GetParam(), oracles::OptimizerKind::Adam, false, subject);
  EXPECT_TRUE(report.equal()) << report.format();
}

INSTANTIATE_TEST_SUITE_P(Zoo, FullSizeBf16, ::testing::Values("qwen3", "qwen3_moe"));

}  // namespace
}  // namespace passcheck
