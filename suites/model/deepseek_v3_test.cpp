// deepseek_v3 debug model (oracles/models/deepseek_v3.h): traced training equals eager
// training bit for bit, MoE load-balancing buffers included; the traced graph carries
// the in-place tokens_per_expert update of every MoE layer; the router's expert bias
// steers the choice of experts but never the gate weights; construction is deterministic
// with the documented FQNs and shapes.
#include "framework/ir/graph.h"
#include "oracles/models/deepseek_v3.h"
#include "oracles/training_driver.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/module.h>
#include <torch/utils.h>

#include <map>
#include <set>

namespace passcheck {
namespace {

constexpr int64_t kExperts = 8;
const std::vector<int> kMoeLayers{1, 2, 3, 4, 5};

std::string moe_buffer(int layer, const std::string& name) {
  return "layers." + std::to_string(layer) + ".moe." + name;
}

at::Tensor buffer_of(const models::TrainingSubject& subject, const std::string& fqn) {
  for (const auto& item : subject.module()->named_buffers(true))
    if (item.key() == fqn) return item.value();
  throw std::invalid_argument("no buffer " + fqn);
}

at::Tensor parameter_of(const models::TrainingSubject& subject, const std::string& fqn) {
  for (const auto& item : subject.module()->named_parameters(true))
    if (item.key() == fqn) return item.value();
  throw std::invalid_argument("no parameter " + fqn);
}

bool bitwise_equal(const at::Tensor& a, const at::Tensor& b) { return check::compare_bitwise("", a, b).equal; }

// A deepseek_v3 subject that records, at each load-balancing update, the token counts
// the step accumulated and the expert bias that results, so a test can see the MoE
// buffers evolve inside run_traced_vs_eager.
class MoeBufferRecorder : public models::TrainingSubject {
 public:
  struct Snapshot {
    std::map<int, at::Tensor> counts, bias;
  };
  MoeBufferRecorder(std::unique_ptr<models::TrainingSubject> inner, std::vector<Snapshot>* snapshots)
      : TrainingSubject(inner->options()), inner_(std::move(inner)), snapshots_(snapshots) {}
  std::string name() const override { return inner_->name(); }
  std::shared_ptr<torch::nn::Module> module() const override { return inner_->module(); }
  std::vector<c10::IValue> batch(int64_t step) const override { return inner_->batch(step); }
  c10::IValue train_step(const std::vector<c10::IValue>& args) override { return inner_->train_step(args); }
  void before_optimizer_step() override {
    Snapshot s;
    for (int layer : kMoeLayers) s.counts[layer] = buffer_of(*inner_, moe_buffer(layer, "tokens_per_expert")).clone();
    inner_->before_optimizer_step();
    for (int layer : kMoeLayers) s.bias[layer] = buffer_of(*inner_, moe_buffer(layer, "expert_bias")).clone();
    snapshots_->push_back(std::move(s));
  }

 private:
  std::unique_ptr<models::TrainingSubject> inner_;
  std::vector<Snapshot>* snapshots_;
};

TEST(DeepSeekV3, TracedTrainingEqualsEagerBitwiseOverThreeSgdStepsBuffersIncluded) {
  // [0] the eager subject, [1] the traced one (the driver builds them in that order).
  std::vector<MoeBufferRecorder::Snapshot> snapshots[2];
  int built = 0;
  oracles::DriverOptions options;
  options.model = "deepseek_v3";  // default batch 4 x 64
  options.steps = 3;
  options.make_subject = [&]() -> std::unique_ptr<models::TrainingSubject> {
    if (built >= 2) throw std::logic_error("the driver built more than two subjects");
    return std::make_unique<MoeBufferRecorder>(models::make_subject("deepseek_v3"), &snapshots[built++]);
  };
  oracles::DriverReport report = oracles::run_traced_vs_eager(options);

  auto subject = models::make_subject("deepseek_v3");
  size_t params = subject->module()->parameters().size();
  size_t buffers = subject->module()->buffers().size();
  EXPECT_EQ(buffers, 2u + 2 * kMoeLayers.size());  // rotary tables + 2 per MoE layer
  ASSERT_EQ(report.steps.size(), 3u);
  for (const auto& step : report.steps) {
    EXPECT_EQ(step.comparisons.size(), 1 + 2 * params + buffers);
    EXPECT_TRUE(step.equal()) << report.format();
    std::set<std::string> compared;
    for (const auto& c : step.comparisons) compared.insert(c.name);
    for (int layer : kMoeLayers) {
      EXPECT_TRUE(compared.count("buffer " + moe_buffer(layer, "expert_bias"))) << layer;
      EXPECT_TRUE(compared.count("buffer " + moe_buffer(layer, "tokens_per_expert"))) << layer;
    }
  }

  // The buffers really moved, identically on both paths: every step routed each of the
  // 256 tokens to 3 experts, and the bias changed after every step.
  ASSERT_EQ(snapshots[0].size(), 3u);
  ASSERT_EQ(snapshots[1].size(), 3u);
  const double routed_slots = 4 * 64 * 3;
  for (size_t step = 0; step < 3; ++step) {
    for (int layer : kMoeLayers) {
      SCOPED_TRACE("step " + std::to_string(step + 1) + ", layer " + std::to_string(layer));
      const at::Tensor& counts = snapshots[0][step].counts.at(layer);
      const at::Tensor& bias = snapshots[0][step].bias.at(layer);
      EXPECT_EQ(counts.sum().item<double>(), routed_slots);
      EXPECT_TRUE(bitwise_equal(counts, snapshots[1][step].counts.at(layer)));
      EXPECT_TRUE(bitwise_equal(bias, snapshots[1][step].bias.at(layer)));
      at::Tensor previous = step == 0 ? at::zeros({kExperts}) : snapshots[0][step - 1].bias.at(layer);
      EXPECT_FALSE(bitwise_equal(bias, previous)) << bias;
    }
  }
}

TEST(DeepSeekV3, TheTracedGraphAddsIntoEveryTokensPerExpertBufferAndNeverWritesTheBias) {
  models::SubjectOptions options;
  options.batch_size = 2;
  options.seq_len = 16;
  auto subject = models::make_subject("deepseek_v3", options);
  trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), false);
  const ir::Graph& graph = program.graph();

  auto writers_of = [&](const ir::Value* buffer) {
    std::vector<std::string> ops;
    for (const ir::Node* n : graph.nodes())
      if (n->num_operands() > 0 && n->operand(0) == buffer && !n->op_base().empty() && n->op_base().back() == '_')
        ops.push_back(n->op());
    return ops;
  };
  std::map<std::string, const ir::Value*> inputs;
  for (const ir::Value* v : graph.inputs()) inputs[v->name()] = v;
  for (int layer : kMoeLayers) {
    SCOPED_TRACE(layer);
    auto counts = inputs.find(moe_buffer(layer, "tokens_per_expert"));
    ASSERT_NE(counts, inputs.end());
    EXPECT_EQ(counts->second->role(), ir::InputRole::Buffer);
    EXPECT_EQ(writers_of(counts->second), std::vector<std::string>{"aten::add_.Tensor"});
    // The bias is read by the router and updated between steps, outside the graph.
    auto bias = inputs.find(moe_buffer(layer, "expert_bias"));
    ASSERT_NE(bias, inputs.end());
    EXPECT_TRUE(bias->second->has_uses());
    EXPECT_TRUE(writers_of(bias->second).empty());
  }
}

TEST(DeepSeekV3, TheOracleCatchesAGraphThatDropsTheTokenCountUpdate) {
  // A pass that deleted the in-place buffer update as dead code (its result is unused)
  // leaves loss and gradients intact; only the buffers, and the bias derived from them
  // before the next step, show it.
  oracles::DriverOptions options;
  options.model = "deepseek_v3";
  options.subject.batch_size = 2;
  options.subject.seq_len = 16;
  options.steps = 1;
  size_t erased = 0;
  options.transform = [&erased](trace::TracedProgram& program) {
    ir::Graph& g = program.mutable_graph();
    for (ir::Node* n : g.nodes())
      if (n->op() == "aten::add_.Tensor" && n->operand(0)->name().find("tokens_per_expert") != std::string::npos) {
        n->output()->replace_all_uses_with(n->operand(0));
        g.erase(n);
        ++erased;
      }
  };
  oracles::DriverReport report = oracles::run_traced_vs_eager(options);
  EXPECT_EQ(erased, kMoeLayers.size());
  ASSERT_EQ(report.steps.size(), 1u);
  EXPECT_TRUE(report.steps[0].comparisons[0].equal);  // the loss does not depend on the counts
  std::set<std::string> differing;
  for (const auto& c : report.steps[0].comparisons)
    if (!c.equal) differing.insert(c.name);
  for (int layer : kMoeLayers)
    EXPECT_TRUE(differing.count("buffer " + moe_buffer(layer, "expert_bias"))) << report.format();
  EXPECT_FALSE(report.equal());
}

TEST(DeepSeekV3, TracingOnMetaRecordsTheSameGraphAsTracingOnTheCpu) {
  // The symbolic and chunked oracles trace named models on the meta device: routing
  // (topk, gather, scatter) and the buffer update must trace there without computing.
  models::SubjectOptions options;
  options.batch_size = 2;
  options.seq_len = 8;
  auto subject = models::make_subject("deepseek_v3", options);
  trace::TracedProgram real = oracles::trace_subject(*subject, subject->batch(0), false);
  trace::TracedProgram meta = oracles::trace_subject(*subject, subject->batch(0), true);
  EXPECT_EQ(meta.graph().print(), real.graph().print());
}

models::RouterConfig top2(double route_scale) {
  return {/*top_k=*/2, models::ScoreFunction::Softmax, /*renormalize=*/false, route_scale};
}

TEST(MoeRouter, RenormalisedAndSigmoidRoutersWeighTheChosenExpertsAsTheirModelsSay) {
  at::Tensor logits = at::tensor({2.0f, 1.0f, 0.5f, 0.0f, 0.0f, 0.3f, 0.2f, 1.5f}).view({2, 4});
  // qwen3_moe / gpt_oss: softmax, top-k weights renormalised over the chosen k.
  models::MoeRouting renormalised =
      models::route_tokens(logits, at::Tensor(), {2, models::ScoreFunction::Softmax, true, 1.0});
  at::Tensor sums = renormalised.combine_weights.sum(-1);
  EXPECT_TRUE(at::allclose(sums, at::ones({2}))) << sums;
  at::Tensor scores = at::softmax(logits, -1);
  at::Tensor top = scores.gather(-1, renormalised.selected);
  at::Tensor expected = at::zeros({2, 4}).scatter(-1, renormalised.selected, top / top.sum(-1, true));
  EXPECT_TRUE(at::allclose(renormalised.combine_weights, expected));
  // llama4: sigmoid scores, top-1, the chosen expert's own sigmoid as its weight.
  models::MoeRouting sigmoid = models::route_tokens(logits, at::Tensor(), {1, models::ScoreFunction::Sigmoid, false, 1.0});
  EXPECT_TRUE(at::equal(sigmoid.selected, at::tensor({0, 3}, at::kLong).view({2, 1})));
  EXPECT_TRUE(bitwise_equal(sigmoid.combine_weights.sum(-1), at::sigmoid(at::tensor({2.0f, 1.5f}))));
}

TEST(DeepSeekV3, TheExpertBiasChangesWhichExpertsAreChosenButNotTheGateWeights) {
  // Two tokens, four experts, top-2.
  at::Tensor logits = at::tensor({2.0f, 1.0f, 0.5f, 0.0f, 0.0f, 0.3f, 0.2f, 1.5f}).view({2, 4});
  at::Tensor scores = at::softmax(logits, -1);
  models::MoeRouting plain = models::route_tokens(logits, at::zeros({4}), top2(1.0));
  models::MoeRouting biased = models::route_tokens(logits, at::tensor({0.0f, 0.0f, 1.0f, 0.0f}), top2(1.0));

  EXPECT_TRUE(at::equal(plain.selected, at::tensor({0, 1, 3, 1}, at::kLong).view({2, 2})));
  EXPECT_TRUE(at::equal(biased.selected, at::tensor({2, 0, 2, 3}, at::kLong).view({2, 2})));
  // Gate weights are the unbiased softmax scores of whichever experts were chosen,
  // scattered into zeros.
  EXPECT_TRUE(bitwise_equal(biased.scores, scores));
  for (const models::MoeRouting* r : {&plain, &biased}) {
    at::Tensor expected = at::zeros({2, 4}).scatter(-1, r->selected, scores.gather(-1, r->selected));
    EXPECT_TRUE(bitwise_equal(r->combine_weights, expected)) << r->combine_weights << expected;
  }
  EXPECT_TRUE(at::equal(biased.chosen, at::tensor({1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f, 1.0f, 1.0f}).view({2, 4})));
  EXPECT_TRUE(at::equal(models::expert_token_counts(biased), at::tensor({1.0f, 0.0f, 2.0f, 1.0f})));
  // route_scale scales the gate weights only.
  models::MoeRouting scaled = models::route_tokens(logits, at::zeros({4}), top2(2.5));
  EXPECT_TRUE(at::equal(scaled.selected, plain.selected));
  EXPECT_TRUE(at::allclose(scaled.combine_weights, plain.combine_weights * 2.5));
}

TEST(DeepSeekV3, TheModelRoutesByTheBiasedScores) {
  // A large bias on experts 5 and 6 of layer 1 makes every token pick both.
  models::SubjectOptions options;
  options.batch_size = 1;
  options.seq_len = 8;
  auto layer1_counts = [&](bool biased) {
    auto subject = models::make_subject("deepseek_v3", options);
    if (biased) {
      torch::NoGradGuard no_grad;
      buffer_of(*subject, moe_buffer(1, "expert_bias")).index_fill_(0, at::tensor({5, 6}, at::kLong), 10.0);
    }
    oracles::eager_step(*subject, subject->batch(0));
    return buffer_of(*subject, moe_buffer(1, "tokens_per_expert")).clone();
  };
  at::Tensor unbiased = layer1_counts(false), biased = layer1_counts(true);
  EXPECT_EQ(unbiased.sum().item<float>(), 8.0f * 3) << unbiased;
  EXPECT_FALSE(unbiased[5].item<float>() == 8.0f && unbiased[6].item<float>() == 8.0f) << unbiased;
  EXPECT_EQ(biased[5].item<float>(), 8.0f) << biased;
  EXPECT_EQ(biased[6].item<float>(), 8.0f) << biased;
  EXPECT_EQ(biased.sum().item<float>(), 8.0f * 3) << biased;
}

TEST(DeepSeekV3, LoadBalancingRaisesTheBiasOfUnderusedExpertsAndClearsTheCounts) {
  at::Tensor bias = at::zeros({4});
  at::Tensor counts = at::tensor({4.0f, 0.0f, 1.0f, 1.0f});  // mean 1.5
  models::update_expert_bias(bias, counts, 1e-3);
  // sign(1.5 - counts) = [-1, 1, 1, 1], mean 0.5, so delta = 1e-3 * [-1.5, 0.5, 0.5, 0.5].
  EXPECT_TRUE(at::allclose(bias, at::tensor({-1.5e-3f, 0.5e-3f, 0.5e-3f, 0.5e-3f}), 0, 1e-9)) << bias;
  EXPECT_TRUE(at::equal(counts, at::zeros({4})));
  // Balanced counts leave the bias alone.
  at::Tensor before = bias.clone();
  counts.fill_(2.0);
  models::update_expert_bias(bias, counts, 1e-3);
  EXPECT_TRUE(bitwise_equal(bias, before));
}

TEST(DeepSeekV3, BuildsDeterministicallyWithTheDocumentedFqnsAndShapes) {
  auto a = models::make_subject("deepseek_v3");
  auto b = models::make_subject("deepseek_v3");
  models::SubjectOptions reseeded;
  reseeded.seed = 1;
  auto c = models::make_subject("deepseek_v3", reseeded);

  std::map<std::string, std::vector<int64_t>> expected{
      {"tok_embeddings.weight", {2048, 256}},
      // Multi-head latent attention: q 256 -> 16 x (128 + 64); kv latent 256 -> 512 + 64;
      // 512 -> 16 x (128 + 128) keys and values; wo 16 x 128 -> 256.
      {"layers.0.attention.wq.weight", {3072, 256}},
      {"layers.0.attention.wkv_a.weight", {576, 256}},
      {"layers.0.attention.kv_norm.weight", {512}},
      {"layers.0.attention.wkv_b.weight", {4096, 512}},
      {"layers.0.attention.wo.weight", {256, 2048}},
      {"layers.0.feed_forward.w1.weight", {1024, 256}},
      {"layers.0.feed_forward.w2.weight", {256, 1024}},
      {"layers.0.attention_norm.weight", {256}},
      {"layers.0.ffn_norm.weight", {256}},
      {"layers.3.moe.router.gate.weight", {8, 256}},
      {"layers.3.moe.experts.w1", {8, 256, 256}},
      {"layers.3.moe.experts.w2", {8, 256, 256}},
      {"layers.3.moe.experts.w3", {8, 256, 256}},
      {"layers.3.moe.shared_expert.w1.weight", {512, 256}},
      {"layers.3.moe.shared_expert.w2.weight", {256, 512}},
      {"layers.5.ffn_norm.weight", {256}},
      {"norm.weight", {256}},
      {"output.weight", {2048, 256}}};
  for (const auto& [fqn, sizes] : expected) EXPECT_EQ(parameter_of(*a, fqn).sizes().vec(), sizes) << fqn;
  for (const auto& item : a->module()->named_parameters(true)) {
    EXPECT_EQ(item.key().find("layers.0.moe"), std::string::npos) << item.key();
    EXPECT_EQ(item.key().find("layers.1.feed_forward"), std::string::npos) << item.key();
  }
  EXPECT_TRUE(bitwise_equal(buffer_of(*a, "layers.1.moe.expert_bias"), at::zeros({kExperts})));
  EXPECT_EQ(buffer_of(*a, "freqs_cos").sizes().vec(), (std::vector<int64_t>{2048, 32})) << "rope head dim 64";
  models::SubjectOptions mha;
  mha.attention = "mha";
  EXPECT_EQ(parameter_of(*models::make_subject("deepseek_v3", mha), "layers.0.attention.wqkv.weight").sizes().vec(),
            (std::vector<int64_t>{768, 256}));

  auto pa = a->module()->parameters(), pb = b->module()->parameters(), pc = c->module()->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(bitwise_equal(pa[i], pb[i])) << i;
  EXPECT_FALSE(bitwise_equal(parameter_of(*a, "layers.3.moe.experts.w1"), parameter_of(*c, "layers.3.moe.experts.w1")));

  // Batches: [4, 64] by default, the same per step, different across steps; sizes follow the options.
  auto batch = a->batch(2);
  EXPECT_EQ(batch.at(0).toTensor().sizes().vec(), (std::vector<int64_t>{4, 64}));
  EXPECT_TRUE(at::equal(batch.at(0).toTensor(), b->batch(2).at(0).toTensor()));
  EXPECT_FALSE(at::equal(batch.at(0).toTensor(), a->batch(3).at(0).toTensor()));
  models::SubjectOptions small;
  small.batch_size = 2;
  small.seq_len = 16;
  EXPECT_EQ(models::make_subject("deepseek_v3", small)->batch(0).at(1).toTensor().sizes().vec(),
            (std::vector<int64_t>{2, 16}));
}

}  // namespace
}  // namespace passcheck
