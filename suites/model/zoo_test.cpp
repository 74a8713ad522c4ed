// The model zoo (oracles/models/zoo.h) against its oracles: each of qwen3, qwen3_moe,
// llama4 and gpt_oss trains traced == eager bit for bit (SGD traced on real tensors,
// Adam traced on meta), and every pipeline family holds on it against the oracle it
// must match: cleanup, each AC policy + remat against eager with the same AC, cudagraph
// replay, the min-cut partition (also under cudagraph), and graph chunking of the MoE
// layers against eager chunking. CI sizes: models::suite_options (two blocks, qwen3_moe
// one; 16 tokens), 2 steps for the pipelines and 1 at 512 tokens; the full debug sizes train in
// `passcheck check --model M --steps 5` and in the zoo_full suite.
#include "framework/check/ac_policy.h"
#include "framework/trace/tracer.h"
#include "oracles/chunked_training.h"
#include "oracles/models/zoo.h"
#include "oracles/training_driver.h"
#include "suites/mutants/mutants.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

namespace passcheck {
namespace {

using ::testing::HasSubstr;

oracles::DriverOptions zoo_driver(const std::string& model, int steps) {
  oracles::DriverOptions options;
  options.model = model;
  options.subject = models::suite_options(model);
  options.steps = steps;
  return options;
}

oracles::DriverReport train_with_pipeline(oracles::DriverOptions options, const std::string& pipeline) {
  options.transform = [pipeline](trace::TracedProgram& program) {
    oracles::apply_pipeline(program, check::Pipeline::parse(pipeline));
  };
  return oracles::run_traced_vs_eager(options);
}

bool has_moe(const std::string& model) { return model != "qwen3"; }

class ZooModel : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooModel, TracedOnRealTensorsEqualsEagerOverFiveSgdSteps) {
  oracles::DriverReport report = oracles::run_traced_vs_eager(zoo_driver(GetParam(), 5));
  ASSERT_EQ(report.steps.size(), 5u);
  EXPECT_TRUE(report.equal()) << report.format();
}

TEST_P(ZooModel, TracedOnMetaEqualsEagerOverFiveAdamSteps) {
  oracles::DriverOptions options = zoo_driver(GetParam(), 5);
  options.optimizer = oracles::OptimizerKind::Adam;
  options.trace_on_meta = true;
  oracles::DriverReport report = oracles::run_traced_vs_eager(options);
  ASSERT_EQ(report.steps.size(), 5u);
  EXPECT_TRUE(report.equal()) << report.format();
}

// cudagraph (joint and partitioned) trains every model in suites/model/cudagraph_training_test.cpp,
// and the default pipeline's AC is the "default" policy below.
TEST_P(ZooModel, CleanupAndPartitionPipelinesTrainBitwise) {
  for (const char* pipeline : {"cleanup", "partition-min-cut"}) {
    SCOPED_TRACE(pipeline);
    oracles::DriverReport report = train_with_pipeline(zoo_driver(GetParam(), 2), pipeline);
    EXPECT_TRUE(report.equal()) << report.format();
  }
}

TEST_P(ZooModel, EveryAcPolicyWithRematMatchesEagerWithTheSameAc) {
  for (const char* policy : {"default", "eager", "full", "op"}) {
    SCOPED_TRACE(policy);
    oracles::DriverOptions options = zoo_driver(GetParam(), 2);
    oracles::EagerCheckpointConfig eager_ac;
    eager_ac.policy = check::parse_ac_policy(policy);
    options.eager_checkpoint = eager_ac;
    oracles::DriverReport report =
        train_with_pipeline(options, std::string("ac-regions,sac-tag{policy=") + policy + "},remat");
    EXPECT_TRUE(report.equal()) << report.format();
    EXPECT_LE(report.steps.at(0).traced_peak_bytes, report.steps.at(0).eager_peak_bytes) << report.format();
  }
}

TEST_P(ZooModel, GraphChunkingOfTheMoeLayersMatchesEagerChunking) {
  if (!has_moe(GetParam())) GTEST_SKIP() << GetParam() << " has no MoE layer";
  oracles::ChunkedTrainingOptions options;
  options.model = GetParam();
  options.subject = models::suite_options(GetParam());
  options.subject.batch_size = 2;  // two chunks of one sequence
  options.steps = 3;
  options.modules = "layers.*.moe";
  options.registry = &mutants::registry_with_mutants();
  oracles::ChunkedTrainingReport report = oracles::run_graph_chunked_vs_eager_chunked(options);
  EXPECT_TRUE(report.equal()) << report.format();
  EXPECT_TRUE(report.proofs.all_proved()) << report.proofs.format();
  EXPECT_GT(report.passes.front().stats.at("regions"), 0);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooModel, ::testing::ValuesIn(models::zoo_models()));

// ---- tied weights ------------------------------------------------------------------------

TEST(ZooTiedWeights, Qwen3LiftsBothFqnsAsInputsEachWithItsOwnUses) {
  models::SubjectOptions options = models::suite_options("qwen3");
  auto subject = models::make_subject("qwen3", options);
  trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), false);
  const ir::Graph& g = program.graph();
  const ir::Value* embedding = nullptr;
  const ir::Value* output = nullptr;
  for (const ir::Value* v : g.inputs()) {
    if (v->name() == "tok_embeddings.weight") embedding = v;
    if (v->name() == "output.weight") output = v;
  }
  ASSERT_NE(embedding, nullptr);
  ASSERT_NE(output, nullptr);
  EXPECT_FALSE(embedding->uses().empty());
  EXPECT_FALSE(output->uses().empty());
}

TEST(ZooTiedWeights, TheOptimizerStepsTheTiedParameterOnceWithTheSumOfBothGradients) {
  models::SubjectOptions options = models::suite_options("qwen3");
  auto subject = models::make_subject("qwen3", options);
  torch::nn::Module& module = *subject->module();
  std::vector<at::Tensor> all = module.parameters(true);
  std::vector<at::Tensor> stepped = oracles::optimizer_parameters(module);
  ASSERT_EQ(stepped.size() + 1, all.size()) << "one FQN shares the embedding's storage";

  at::Tensor before = subject->module()->named_parameters(true)["tok_embeddings.weight"].detach().clone();
  auto out = subject->train_step(subject->batch(0)).toTensorList().vec();
  size_t embedding_index = 0, output_index = 0;
  size_t i = 0;
  for (const auto& item : module.named_parameters(true)) {
    if (item.key() == "tok_embeddings.weight") embedding_index = i;
    if (item.key() == "output.weight") output_index = i;
    ++i;
  }
  const double lr = 1e-2;
  auto optimizer = oracles::make_optimizer(oracles::OptimizerKind::SGD, stepped, lr);
  std::vector<at::Tensor> params = oracles::assign_gradients(module, out);
  optimizer->step();
  oracles::drop_gradients(params);

  at::Tensor g_embedding = out.at(embedding_index + 1), g_output = out.at(output_index + 1);
  ASSERT_FALSE(at::equal(g_embedding, g_output)) << "each FQN's gradient covers its own uses";
  // SGD's first step with momentum is p.add_(grad, -lr): one step with the summed gradient.
  at::Tensor once = before.add(g_embedding + g_output, -lr);
  // A per-FQN optimizer would step the storage twice, once with each gradient.
  at::Tensor twice = before.add(g_embedding, -lr).add(g_output, -lr);
  auto named = module.named_parameters(true);
  const at::Tensor& embedding = named["tok_embeddings.weight"];
  const at::Tensor& output = named["output.weight"];
  EXPECT_TRUE(at::equal(embedding, once));
  EXPECT_FALSE(at::equal(twice, once)) << "the check must tell one step from two";
  EXPECT_EQ(embedding.data_ptr(), output.data_ptr()) << "the tie survives the step";
}

TEST(ZooTiedWeights, ATensorRegisteredUnderTwoFqnsBindsItsUsesToTheFirst) {
  // The same tensor object under two names (a module that cannot tell its two uses
  // apart): the second FQN is lifted as an unused input and gets the same gradient.
  struct Twice : torch::nn::Module {
    Twice() {
      w = register_parameter("a", at::ones({2, 2}));
      register_parameter("b", w);
    }
    at::Tensor w;
  };
  auto m = std::make_shared<Twice>();
  trace::TracedProgram program = trace::trace_step(
      {{"", m}},
      [&](const std::vector<c10::IValue>& args) -> c10::IValue {
        at::Tensor loss = (at::mm(args[0].toTensor(), m->w)).sum();
        return models::loss_and_gradients(*m, loss);
      },
      {at::ones({3, 2})});
  const ir::Graph& g = program.graph();
  ASSERT_GE(g.inputs().size(), 2u);
  EXPECT_EQ(g.inputs()[0]->name(), "a");
  EXPECT_EQ(g.inputs()[1]->name(), "b");
  EXPECT_FALSE(g.inputs()[0]->uses().empty());
  EXPECT_TRUE(g.inputs()[1]->uses().empty());
  auto out = program({at::ones({3, 2})}).toTensorList().vec();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(at::equal(out[1], out[2]));
  std::vector<at::Tensor> stepped = oracles::assign_gradients(*m, out);
  ASSERT_EQ(stepped.size(), 1u);
  EXPECT_TRUE(at::equal(stepped[0].grad(), out[1])) << "the same tensor's gradient counts once";
}

// ---- masks that matter past 128 tokens ---------------------------------------------------

TEST(ZooMasks, ChunkedAndSlidingMasksMaskMoreThanCausalOnlyPastTheirWindow) {
  const int64_t s = 512;
  at::Tensor causal = models::attention_mask(s, models::AttentionMask::Causal, 0, at::kCPU);
  at::Tensor chunked = models::attention_mask(s, models::AttentionMask::ChunkedCausal, 256, at::kCPU);
  at::Tensor sliding = models::attention_mask(s, models::AttentionMask::SlidingWindow, 128, at::kCPU);
  // Query 300 sees keys 256..300 in its chunk, and 173..300 in its window.
  EXPECT_TRUE(chunked[300][255].item<bool>());
  EXPECT_FALSE(chunked[300][256].item<bool>());
  EXPECT_TRUE(sliding[300][172].item<bool>());
  EXPECT_FALSE(sliding[300][173].item<bool>());
  EXPECT_FALSE(causal[300][0].item<bool>());
  // At 128 tokens neither masks more than causal: the reason for the 512-token runs.
  EXPECT_TRUE(at::equal(models::attention_mask(128, models::AttentionMask::ChunkedCausal, 256, at::kCPU),
                        models::attention_mask(128, models::AttentionMask::Causal, 0, at::kCPU)));
  EXPECT_TRUE(at::equal(models::attention_mask(128, models::AttentionMask::SlidingWindow, 128, at::kCPU),
                        models::attention_mask(128, models::AttentionMask::Causal, 0, at::kCPU)));
  EXPECT_EQ(chunked.sum().item<int64_t>() - causal.sum().item<int64_t>(), 256 * 256);
}

class LongSequence : public ::testing::TestWithParam<std::string> {};

TEST_P(LongSequence, TracedEqualsEagerWithA512TokenSequence) {
  oracles::DriverOptions options = zoo_driver(GetParam(), 1);
  options.subject.seq_len = 512;
  oracles::DriverReport report = oracles::run_traced_vs_eager(options);
  EXPECT_TRUE(report.equal()) << report.format();
}

INSTANTIATE_TEST_SUITE_P(Zoo, LongSequence, ::testing::Values("llama4", "gpt_oss"));

// ---- bf16 --------------------------------------------------------------------------------

class Bf16 : public ::testing::TestWithParam<std::string> {};

TEST_P(Bf16, TracedEqualsEagerBitwiseInBfloat16) {
  oracles::DriverOptions options = zoo_driver(GetParam(), 5);
  options.subject.dtype = c10::ScalarType::BFloat16;
  oracles::DriverReport report = oracles::run_traced_vs_eager(options);
  ASSERT_EQ(report.steps.size(), 5u);
  EXPECT_TRUE(report.equal()) << report.format();
  auto subject = models::make_subject(GetParam(), options.subject);
  for (const auto& item : subject->module()->named_parameters(true))
    EXPECT_EQ(item.value().scalar_type(), c10::ScalarType::BFloat16) << item.key();
}

INSTANTIATE_TEST_SUITE_P(Zoo, Bf16, ::testing::Values("qwen3", "qwen3_moe"));

TEST(ZooOptions, BadOptionsAreClearErrors) {
  models::SubjectOptions options;
  options.dtype = c10::ScalarType::BFloat16;
  EXPECT_THAT([&] { models::make_subject("llama3", options); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("float32 only")));
  options = {};
  options.attention = "mha";
  EXPECT_THAT([&] { models::make_subject("qwen3", options); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("is for deepseek_v3")));
  options = {};
  options.seq_len = 4096;
  EXPECT_THAT([&] { models::make_subject("gpt_oss", options); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("exceeds the rotary tables")));
}

}  // namespace
}  // namespace passcheck
