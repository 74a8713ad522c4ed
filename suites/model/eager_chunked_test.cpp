// Eager chunking (oracles/eager_chunked.h), the oracle graph chunking is compared
// against: FQN patterns, how inputs are split and outputs joined, gradients through
// both chunks, the errors for what cannot be chunked, and on deepseek_v3 (batch chunking
// of the transformer blocks, sequence chunking of the MoE layers) the numerics against
// the unchunked model, the MoE token counts and the determinism of the chunked run.
#include "framework/check/compare.h"
#include "framework/trace/module_scope.h"
#include "oracles/eager_chunked.h"
#include "oracles/training_driver.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/module.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <cstdio>
#include <optional>

namespace passcheck {
namespace {

using oracles::EagerChunkConfig;
using oracles::EagerChunkGuard;
using oracles::fqn_matches_pattern;

bool tensors_bitwise_equal(const at::Tensor& a, const at::Tensor& b) { return check::compare_bitwise("", a, b).equal; }

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(EagerChunked, PatternsMatchOneComponentPerStar) {
  struct Row {
    const char* fqn;
    const char* pattern;
    bool matches;
  };
  const Row table[] = {
      {"layers.3", "layers.*", true},
      {"layers.12", "layers.*", true},
      {"layers.3.moe", "layers.*", false},
      {"layers", "layers.*", false},
      {"layers.3.moe", "layers.*.moe", true},
      {"layers.3.moe.experts", "layers.*.moe", false},
      {"layers.3.attention", "layers.*.moe", false},
      {"layers.3.moe", "layers.3.moe", true},
      {"layers.3.moe", "layers.4.moe", false},
      {"layers.3.moe", "*.*.moe", true},
      {"norm", "*", true},
      {"layers.3", "*", false},
      {"layer.3", "layers.*", false},
      {"layers.3", "layers.3*", false},
  };
  for (const Row& r : table) EXPECT_EQ(fqn_matches_pattern(r.fqn, r.pattern), r.matches) << r.fqn << " ~ " << r.pattern;
}

TEST(EagerChunked, SplitsEveryInputOfTheSplitExtentRunsBothChunksInOrderAndConcatenates) {
  at::Tensor x = at::arange(8.0).view({4, 2});
  at::Tensor mask = at::arange(4.0);
  at::Tensor table = at::arange(3.0);  // another extent: shared by both chunks
  std::vector<std::vector<at::Tensor>> seen;
  EagerChunkGuard guard({{"block.*"}, 0});
  auto body = [&seen](const std::vector<at::Tensor>& in) {
    seen.push_back(in);
    return std::vector<at::Tensor>{in[0] * 2, in[1] + in[2].sum()};
  };
  std::vector<at::Tensor> out = trace::call_module("block.0", {x, mask, table}, body);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(at::equal(seen[0][0], x.narrow(0, 0, 2)));
  EXPECT_TRUE(at::equal(seen[1][0], x.narrow(0, 2, 2)));
  EXPECT_TRUE(at::equal(seen[0][1], mask.narrow(0, 0, 2)));
  EXPECT_TRUE(at::equal(seen[1][1], mask.narrow(0, 2, 2)));
  EXPECT_TRUE(at::equal(seen[0][2], table));
  EXPECT_TRUE(at::equal(seen[1][2], table));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(at::equal(out[0], x * 2));
  EXPECT_TRUE(at::equal(out[1], mask + 3));

  // Other FQNs, the pattern's parent and its children, run once, unsplit.
  seen.clear();
  trace::call_module("block", {x, mask, table}, body);
  trace::call_module("block.0.inner", {x, mask, table}, body);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(at::equal(seen[0][0], x));
  EXPECT_TRUE(at::equal(seen[1][0], x));
  EXPECT_EQ(guard.stats().chunked_calls, std::vector<std::string>{"block.0"});
}

TEST(EagerChunked, ParameterGradientsAccumulateOverBothChunks) {
  at::Tensor w = at::tensor({1.0f, -2.0f, 3.0f}).requires_grad_();
  at::Tensor x = at::arange(12.0f).view({4, 3}).requires_grad_();
  auto gradients = [&](bool chunked) {
    std::optional<EagerChunkGuard> guard;
    if (chunked) guard.emplace(EagerChunkConfig{{"block.*"}, 0});
    at::Tensor y = trace::call_module("block.0", x, [w](const at::Tensor& in) { return in * w; });
    return torch::autograd::grad({(y * y).sum()}, {w, x});
  };
  // Small integers: every sum is exact, so both orders of accumulation agree bit for bit.
  auto plain = gradients(false), chunked = gradients(true);
  EXPECT_TRUE(tensors_bitwise_equal(chunked[0], plain[0])) << chunked[0] << plain[0];
  EXPECT_TRUE(tensors_bitwise_equal(chunked[1], plain[1]));
}

TEST(EagerChunked, RejectsWhatCannotBeSplitOrJoinedNamingTheModule) {
  EagerChunkGuard guard({{"block.*"}, 1});
  auto identity = [](const at::Tensor& in) { return in; };
  std::string odd = error_of([&] { trace::call_module("block.2", at::zeros({4, 3}), identity); });
  EXPECT_NE(odd.find("eager chunking of 'block.2' on dim 1: input 0 has size 3 at dim 1; it must be even and at "
                     "least 2"),
            std::string::npos)
      << odd;
  std::string tiny = error_of([&] { trace::call_module("block.2", at::zeros({4, 1}), identity); });
  EXPECT_NE(tiny.find("input 0 has size 1 at dim 1"), std::string::npos) << tiny;
  std::string no_dim = error_of([&] { trace::call_module("block.2", at::zeros({4}), identity); });
  EXPECT_NE(no_dim.find("'block.2'"), std::string::npos) << no_dim;
  EXPECT_NE(no_dim.find("has no dim 1"), std::string::npos) << no_dim;
  std::string reduced = error_of([&] {
    trace::call_module("block.7", {at::zeros({2, 4})}, [](const std::vector<at::Tensor>& in) {
      return std::vector<at::Tensor>{in[0], in[0].sum(1)};
    });
  });
  EXPECT_NE(reduced.find("eager chunking of 'block.7' on dim 1: output 1 of a chunk has sizes [2]"), std::string::npos)
      << reduced;
  EXPECT_NE(reduced.find("only outputs that carry the split dimension can be concatenated"), std::string::npos);
  EXPECT_NE(error_of([] { EagerChunkGuard none(EagerChunkConfig{}); }).find("no module pattern"), std::string::npos);
}

// ---------------------------------------------------------------------------------
// deepseek_v3

models::SubjectOptions deepseek_options(int64_t batch, int64_t seq) {
  models::SubjectOptions o;
  o.batch_size = batch;
  o.seq_len = seq;
  return o;
}

struct EagerStep {
  std::vector<at::Tensor> outputs;  // loss, then gradients
  std::vector<at::Tensor> token_counts;  // tokens_per_expert of layers 1-5 after the step
  oracles::EagerChunkStats chunking;
};

EagerStep eager_deepseek_step(const models::SubjectOptions& options, const std::optional<EagerChunkConfig>& config) {
  auto subject = models::make_subject("deepseek_v3", options);
  EagerStep result;
  {
    std::optional<EagerChunkGuard> guard;
    if (config) guard.emplace(*config);
    result.outputs = oracles::eager_step(*subject, subject->batch(1));
    if (guard) result.chunking = guard->stats();
  }
  for (const auto& item : subject->module()->named_buffers(true))
    if (item.key().find("tokens_per_expert") != std::string::npos) result.token_counts.push_back(item.value().clone());
  return result;
}

// Chunking changes the order of floating-point sums, so the chunked model is close to
// the unchunked one but not bit for bit: each weight gradient is the sum of two
// per-chunk matrix products instead of one product over all rows, and the GEMM kernels
// may block (and vectorize) a product over half the rows differently. Routing decisions
// are unaffected unless two scores tie within those few ULPs, so the token counts, which
// are small integers, must match exactly.
void expect_close_to_unchunked(const EagerStep& chunked, const EagerStep& plain, const std::string& label) {
  ASSERT_EQ(chunked.outputs.size(), plain.outputs.size());
  double loss_diff = std::abs(chunked.outputs[0].item<double>() - plain.outputs[0].item<double>());
  double worst_grad = 0;
  for (size_t i = 1; i < plain.outputs.size(); ++i) {
    check::ToleranceReport t = check::compare_tolerance(plain.outputs[i], chunked.outputs[i]);
    worst_grad = std::max(worst_grad, t.max_abs);
  }
  std::printf("[ %s ] loss %.9g unchunked, |chunked - unchunked| = %.3g; largest gradient difference %.3g\n",
              label.c_str(), plain.outputs[0].item<double>(), loss_diff, worst_grad);
  EXPECT_LT(loss_diff, 1e-5);
  EXPECT_LT(worst_grad, 1e-5);
  ASSERT_EQ(chunked.token_counts.size(), 5u);
  for (size_t i = 0; i < plain.token_counts.size(); ++i) {
    EXPECT_TRUE(tensors_bitwise_equal(chunked.token_counts[i], plain.token_counts[i]))
        << "layer " << i + 1 << ": " << chunked.token_counts[i] << " vs " << plain.token_counts[i];
    EXPECT_GT(plain.token_counts[i].sum().item<double>(), 0);
  }
}

TEST(EagerChunkedDeepSeekV3, BatchChunkedBlocksAreCloseToUnchunkedWithExactTokenCounts) {
  auto options = deepseek_options(4, 32);
  EagerStep plain = eager_deepseek_step(options, std::nullopt);
  EagerStep chunked = eager_deepseek_step(options, EagerChunkConfig{{"layers.*"}, 0});
  EXPECT_EQ(chunked.chunking.chunked_calls,
            (std::vector<std::string>{"layers.0", "layers.1", "layers.2", "layers.3", "layers.4", "layers.5"}));
  expect_close_to_unchunked(chunked, plain, "deepseek_v3 4x32, layers.* on batch");
}

TEST(EagerChunkedDeepSeekV3, SequenceChunkedMoeLayersAreCloseToUnchunkedWithExactTokenCounts) {
  auto options = deepseek_options(2, 32);
  EagerStep plain = eager_deepseek_step(options, std::nullopt);
  EagerStep chunked = eager_deepseek_step(options, EagerChunkConfig{{"layers.*.moe"}, 1});
  EXPECT_EQ(chunked.chunking.chunked_calls, (std::vector<std::string>{"layers.1.moe", "layers.2.moe", "layers.3.moe",
                                                                     "layers.4.moe", "layers.5.moe"}));
  expect_close_to_unchunked(chunked, plain, "deepseek_v3 2x32, layers.*.moe on seq");
}

TEST(EagerChunkedDeepSeekV3, AnOddBatchIsAnErrorNamingTheBlockTheSizeAndTheDim) {
  auto subject = models::make_subject("deepseek_v3", deepseek_options(3, 8));
  EagerChunkGuard guard({{"layers.*"}, 0});
  std::string message = error_of([&] { oracles::eager_step(*subject, subject->batch(0)); });
  EXPECT_NE(message.find("eager chunking of 'layers.0' on dim 0: input 0 has size 3 at dim 0"), std::string::npos)
      << message;
}

TEST(EagerChunkedDeepSeekV3, TwoChunkedTrainingRunsAreBitwiseEqual) {
  // Two SGD steps with the load-balancing update in between, twice from scratch.
  auto train = [] {
    auto subject = models::make_subject("deepseek_v3", deepseek_options(2, 32));
    std::vector<at::Tensor> params = subject->module()->parameters(true);
    torch::optim::SGD optimizer(params, torch::optim::SGDOptions(1e-2).momentum(0.9));
    std::vector<at::Tensor> record;
    for (int step = 1; step <= 2; ++step) {
      std::vector<at::Tensor> out;
      {
        EagerChunkGuard guard({{"layers.*"}, 0});
        out = oracles::eager_step(*subject, subject->batch(step));
        EXPECT_EQ(guard.stats().intercepted_calls(), 6);
      }
      record.push_back(out[0].detach().clone());
      for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = out.at(i + 1).detach();
      subject->before_optimizer_step();
      optimizer.step();
      for (auto& p : params) p.mutable_grad() = at::Tensor();
    }
    for (const auto& p : subject->module()->parameters(true)) record.push_back(p.detach().clone());
    for (const auto& b : subject->module()->named_buffers(true)) {
      record.push_back(b.value().clone());
      // The load-balancing update ran, so the comparison covers a moved bias.
      if (b.key().find("expert_bias") != std::string::npos) {
        EXPECT_GT(b.value().abs().sum().item<double>(), 0) << b.key();
      }
    }
    return record;
  };
  std::vector<at::Tensor> first = train(), second = train();
  ASSERT_EQ(first.size(), second.size());
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(tensors_bitwise_equal(first[i], second[i])) << "tensor " << i;
}

TEST(EagerChunkedDeepSeekV3, TheDriverRunsTheEagerPathChunkedAndReportsTheCalls) {
  oracles::DriverOptions options;
  options.model = "deepseek_v3";
  options.subject = deepseek_options(2, 16);
  options.steps = 1;
  options.eager_chunking = EagerChunkConfig{{"layers.*.moe"}, 1};
  oracles::DriverReport report = oracles::run_traced_vs_eager(options);
  ASSERT_EQ(report.steps.size(), 1u);
  EXPECT_EQ(report.steps[0].eager_chunking.intercepted_calls(), 5);
  EXPECT_NE(report.format().find("eager chunking (last step): 5 module calls split in two chunks"), std::string::npos)
      << report.format();

  options.eager_checkpoint = oracles::EagerCheckpointConfig{};
  EXPECT_NE(error_of([&] { oracles::run_traced_vs_eager(options); }).find("cannot be combined"), std::string::npos);
}

}  // namespace
}  // namespace passcheck
