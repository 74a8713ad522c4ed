// GPU suite: the model suites on a CUDA device (skipped when none is available), and
// the CUDA memory instrument.
#include "framework/exec/memory.h"
#include "oracles/training_driver.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace passcheck {
namespace {

oracles::DriverReport train_on_cuda(const std::string& model, bool meta) {
  oracles::DriverOptions options;
  options.model = model;
  options.steps = 5;
  options.trace_on_meta = meta;
  options.subject.device = c10::Device(c10::DeviceType::CUDA, 0);
  return oracles::run_traced_vs_eager(options);
}

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(Cuda, MlpFiveStepsBitwise) {
  auto report = train_on_cuda("mlp", false);
  EXPECT_TRUE(report.equal()) << report.format();
}

TEST_F(Cuda, Llama3FiveStepsBitwise) {
  auto report = train_on_cuda("llama3", false);
  EXPECT_TRUE(report.equal()) << report.format();
  EXPECT_EQ(report.steps.size(), 5u);
}

TEST_F(Cuda, Llama3TracedOnMetaFiveStepsBitwise) {
  auto report = train_on_cuda("llama3", true);
  EXPECT_TRUE(report.equal()) << report.format();
}

TEST_F(Cuda, PeakMemoryScopeMeasuresAnAllocation) {
  exec::PeakMemoryScope scope(c10::Device(c10::DeviceType::CUDA, 0));
  {
    at::Tensor t = at::empty({1 << 20}, at::TensorOptions().device(at::kCUDA).dtype(at::kFloat));
  }
  EXPECT_GE(scope.peak_above_start(), 4 << 20);
}

}  // namespace
}  // namespace passcheck
