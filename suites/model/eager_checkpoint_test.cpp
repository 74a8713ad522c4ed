// Eager activation checkpointing (oracles/eager_checkpoint.h), the oracle graph
// rematerialization is compared against: for every policy, llama3 debug trained with
// eager AC is bit for bit the traced training without AC while holding less memory; the
// selective mode stores exactly the operators the graph policy would save (cross-checked
// against the traced graph) and hands every one of them back during recomputation;
// dropout inside a region reproduces its mask (generator state restored, or the mask
// stored under the full policy); and the misuse cases the mechanism cannot make right
// are errors rather than silently wrong gradients.
#include "framework/check/ac_policy.h"
#include "framework/exec/op_properties.h"
#include "framework/ir/graph.h"
#include "framework/trace/module_scope.h"
#include "oracles/eager_checkpoint.h"
#include "oracles/models/layers.h"
#include "oracles/training_driver.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/utils.h>

#include <iostream>
#include <map>

namespace passcheck {
namespace {

using oracles::EagerCheckpointConfig;
using oracles::EagerCheckpointGuard;

EagerCheckpointConfig config_for(check::AcPolicyKind policy, std::vector<check::OpSelector> selectors = {}) {
  EagerCheckpointConfig c;
  c.policy = policy;
  c.selectors = std::move(selectors);
  return c;
}

std::string mib(int64_t bytes) { return std::to_string(static_cast<double>(bytes) / (1024.0 * 1024.0)) + " MiB"; }

// ---------------------------------------------------------------------------------
// llama3: eager AC vs traced without AC, every policy

class EagerCheckpointLlama3 : public ::testing::TestWithParam<const char*> {
 protected:
  static int64_t baseline_peak() {
    // Eager without AC on the same configuration (first step's peak).
    static int64_t peak = [] {
      oracles::DriverOptions options;
      options.model = "llama3";
      options.steps = 1;
      return oracles::run_traced_vs_eager(options).steps.at(0).eager_peak_bytes;
    }();
    return peak;
  }
};

TEST_P(EagerCheckpointLlama3, ThreeStepsBitwiseEqualToTracedWithoutAcAndLowerPeak) {
  check::AcPolicyKind policy = check::parse_ac_policy(GetParam());
  oracles::DriverOptions options;
  options.model = "llama3";  // debug size, batch 2 x 128
  options.steps = 3;
  options.eager_checkpoint = config_for(policy);
  oracles::DriverReport report = oracles::run_traced_vs_eager(options);
  ASSERT_EQ(report.steps.size(), 3u);
  size_t params = models::make_subject("llama3")->module()->parameters().size();
  for (const auto& step : report.steps) {
    EXPECT_EQ(step.comparisons.size(), 1 + 2 * params + 2);  // loss, grads, params, 2 rotary buffers
    EXPECT_TRUE(step.equal()) << report.format();
    // Every layer was checkpointed and recomputed, every stored output handed back.
    ASSERT_EQ(step.eager_checkpoint.regions.size(), 6u);
    for (const auto& r : step.eager_checkpoint.regions) {
      EXPECT_TRUE(r.recomputed) << r.fqn;
      EXPECT_EQ(r.replayed_ops, r.saved_ops) << r.fqn;
      EXPECT_EQ(r.replayed_ops + r.rerun_ops, r.forward_ops) << r.fqn;
    }
  }
  int64_t with_ac = report.steps[0].eager_peak_bytes;
  int64_t without_ac = baseline_peak();
  std::cout << "[ llama3 2x128 ] eager peak without AC " << without_ac << " B (" << mib(without_ac) << "), with "
            << GetParam() << " AC " << with_ac << " B (" << mib(with_ac) << "), stored "
            << report.steps[0].eager_checkpoint.saved_ops() << " outputs ("
            << mib(report.steps[0].eager_checkpoint.saved_bytes()) << ")\n";
  RecordProperty("eager_peak_without_ac_bytes", std::to_string(without_ac));
  RecordProperty("eager_peak_with_ac_bytes", std::to_string(with_ac));
  EXPECT_LT(with_ac, without_ac);
}

INSTANTIATE_TEST_SUITE_P(Policies, EagerCheckpointLlama3, ::testing::Values("default", "eager", "full", "op"));

TEST(EagerCheckpoint, PeakMemoryOrdersFullBelowSelectiveBelowNone) {
  auto peak = [](std::optional<EagerCheckpointConfig> config) {
    oracles::DriverOptions options;
    options.model = "llama3";
    options.steps = 1;
    options.eager_checkpoint = std::move(config);
    return oracles::run_traced_vs_eager(options).steps.at(0).eager_peak_bytes;
  };
  int64_t none = peak(std::nullopt);
  int64_t full = peak(config_for(check::AcPolicyKind::Full));
  int64_t selective = peak(config_for(check::AcPolicyKind::Default));
  std::cout << "[ llama3 2x128 ] eager peak: no AC " << mib(none) << ", default SAC " << mib(selective) << ", full AC "
            << mib(full) << "\n";
  // Storing the matmul outputs costs memory that full AC does not spend.
  EXPECT_LT(full, selective);
  EXPECT_LT(selective, none);
}

// ---------------------------------------------------------------------------------
// The stored operators are exactly those the graph policy saves

struct LayerCounts {
  int64_t forward_ops = 0;
  std::map<std::string, int64_t> saved_by_op;
};

// Feeds the traced graph's forward nodes of the layers, in graph order, to a fresh policy
// (as the graph tagging pass does) and counts per layer what it saves.
std::map<std::string, LayerCounts> graph_policy_counts(const ir::Graph& g, check::AcPolicyKind kind,
                                                       std::vector<check::OpSelector> selectors) {
  check::AcPolicy policy(kind, std::move(selectors));
  std::map<std::string, LayerCounts> out;
  for (const ir::Node* n : g.nodes()) {
    if (n->meta().phase != ir::Phase::Forward) continue;
    const std::string& fqn = n->meta().module_fqn;
    std::optional<int64_t> layer = check::layer_of(fqn);
    if (!layer) continue;
    // Wrapped numbers the tracer materializes are not operator calls eager code makes.
    if (n->op() == "aten::scalar_tensor") continue;
    LayerCounts& counts = out["layers." + std::to_string(*layer)];
    ++counts.forward_ops;
    ir::RecomputePolicy d = policy.decide(n->op_base(), fqn, layer, exec::is_random(*n));
    if (d == ir::RecomputePolicy::MustSave || d == ir::RecomputePolicy::PreferSave) ++counts.saved_by_op[n->op_base()];
  }
  return out;
}

void expect_eager_matches_graph_policy(check::AcPolicyKind kind, std::vector<check::OpSelector> selectors,
                                       int64_t expected_saved_per_layer_min) {
  models::SubjectOptions so;
  auto traced = models::make_subject("llama3", so);
  trace::TracedProgram program = oracles::trace_subject(*traced, traced->batch(0), false);
  std::map<std::string, LayerCounts> expected = graph_policy_counts(program.graph(), kind, selectors);
  ASSERT_EQ(expected.size(), 6u);

  auto eager = models::make_subject("llama3", so);
  EagerCheckpointConfig config = config_for(kind, selectors);
  config.region_parameters = oracles::module_parameters(eager->module());
  oracles::EagerCheckpointStats stats;
  {
    EagerCheckpointGuard guard(config);
    oracles::eager_step(*eager, eager->batch(0));
    stats = guard.stats();
  }
  ASSERT_EQ(stats.regions.size(), 6u);
  for (const auto& r : stats.regions) {
    SCOPED_TRACE(r.fqn);
    ASSERT_TRUE(expected.count(r.fqn));
    // The mode sees the operator stream the tracer records, and saves what the policy
    // saves on the graph.
    EXPECT_EQ(r.forward_ops, expected[r.fqn].forward_ops);
    EXPECT_EQ(r.saved_by_op, expected[r.fqn].saved_by_op);
    EXPECT_GE(r.saved_ops, expected_saved_per_layer_min);
    EXPECT_TRUE(r.recomputed);
    EXPECT_EQ(r.replayed_ops, r.saved_ops);
    EXPECT_EQ(r.rerun_ops, r.forward_ops - r.saved_ops);
  }
}

TEST(EagerCheckpointStores, DefaultPolicyStoresEachLayersMatmulsAsTheGraphPolicyDoes) {
  // Per layer: 5 projections (mm) and the attention kernel.
  expect_eager_matches_graph_policy(check::AcPolicyKind::Default, {}, 6);
}

TEST(EagerCheckpointStores, EagerPolicyStoresEveryOtherMmPerLayer) {
  expect_eager_matches_graph_policy(check::AcPolicyKind::Eager, {}, 4);  // mm 1, 3, 5 + attention
}

TEST(EagerCheckpointStores, OpPolicyCountsMmsAcrossLayers) {
  expect_eager_matches_graph_policy(check::AcPolicyKind::Op, {}, 4);  // 2 or 3 mm + attention + first add
}

TEST(EagerCheckpointStores, FullPolicyStoresOnlySelectedOps) {
  expect_eager_matches_graph_policy(check::AcPolicyKind::Full, {}, 0);
  expect_eager_matches_graph_policy(check::AcPolicyKind::Full,
                                    {check::OpSelector::parse("layers.*.feed_forward.w?::mm"),
                                     check::OpSelector::parse("layers.*.attention::_scaled_dot_product_flash_attention_for_cpu")},
                                    4);
}

TEST(EagerCheckpointStores, LayerCountsAreTheExpectedNumbers) {
  // Independent of the graph: default stores 5 mm + the attention kernel in every layer; the op policy
  // alternates 3 and 2 mms (global odd counter over 5 mms per layer) plus the attention
  // kernel and the first add.
  auto eager = models::make_subject("llama3");
  auto run = [&](check::AcPolicyKind kind) {
    EagerCheckpointConfig config = config_for(kind);
    config.region_parameters = oracles::module_parameters(eager->module());
    EagerCheckpointGuard guard(config);
    oracles::eager_step(*eager, eager->batch(0));
    return guard.stats();
  };
  oracles::EagerCheckpointStats d = run(check::AcPolicyKind::Default);
  for (const auto& r : d.regions) EXPECT_EQ(r.saved_by_op, (std::map<std::string, int64_t>{{"_scaled_dot_product_flash_attention_for_cpu", 1}, {"mm", 5}}));
  oracles::EagerCheckpointStats op = run(check::AcPolicyKind::Op);
  ASSERT_EQ(op.regions.size(), 6u);
  for (size_t i = 0; i < op.regions.size(); ++i)
    EXPECT_EQ(op.regions[i].saved_by_op, (std::map<std::string, int64_t>{
                  {"_scaled_dot_product_flash_attention_for_cpu", 1}, {"add", 1}, {"mm", i % 2 == 0 ? 3 : 2}}))
        << op.regions[i].fqn;
  oracles::EagerCheckpointStats full = run(check::AcPolicyKind::Full);
  EXPECT_EQ(full.saved_ops(), 0);
  EXPECT_EQ(full.saved_bytes(), 0);
  EXPECT_EQ(full.replayed_ops(), 0);
}

// ---------------------------------------------------------------------------------
// Dropout inside a checkpointed region

class DropoutNet : public torch::nn::Module {
 public:
  DropoutNet() {
    layers = register_module("layers", torch::nn::ModuleList());
    block = std::make_shared<torch::nn::Module>();
    fc1 = block->register_module("fc1", std::make_shared<models::LinearImpl>(16, 32, at::TensorOptions()));
    fc2 = block->register_module("fc2", std::make_shared<models::LinearImpl>(32, 16, at::TensorOptions()));
    layers->push_back(block);
    models::init_parameters(*this, 7);
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = trace::call_module("layers.0", x, [this](const at::Tensor& in) {
      at::Tensor h = fc1->forward(in);
      h = at::dropout(h, 0.5, /*train=*/true);
      return fc2->forward(at::gelu(h));
    });
    return at::tanh(y);
  }
  torch::nn::ModuleList layers;
  std::shared_ptr<torch::nn::Module> block;
  std::shared_ptr<models::LinearImpl> fc1, fc2;
};

struct DropoutTrace {
  std::vector<at::Tensor> losses, grads, params;
  oracles::EagerCheckpointStats last_stats;
};

// Trains a fresh DropoutNet for `steps` SGD steps from a fixed generator seed.
DropoutTrace train_dropout(std::optional<EagerCheckpointConfig> config, int steps = 3) {
  at::manual_seed(1234);
  auto net = std::make_shared<DropoutNet>();
  std::vector<at::Tensor> params = net->parameters();
  DropoutTrace out;
  for (int step = 0; step < steps; ++step) {
    at::Tensor x = models::seeded_normal(100 + step, {8, 16}, c10::Device(c10::DeviceType::CPU));
    std::optional<EagerCheckpointGuard> guard;
    if (config) {
      EagerCheckpointConfig c = *config;
      c.region_parameters = oracles::module_parameters(net);
      guard.emplace(c);
    }
    at::AutoGradMode grad_on(true);
    at::Tensor loss = net->forward(x).pow(2).sum();
    // An unrelated draw between forward and backward (data sampling, say): after the
    // recomputation the generator must continue from here, not from the region's state.
    out.losses.push_back(at::rand({2}));
    std::vector<at::Tensor> grads = trace::gradients({loss}, params);
    if (guard) out.last_stats = guard->stats();
    out.losses.push_back(loss.detach().clone());
    for (const auto& g : grads) out.grads.push_back(g.clone());
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < params.size(); ++i) params[i].sub_(grads[i] * 0.1);
  }
  for (const auto& p : params) out.params.push_back(p.detach().clone());
  // A draw after training: the generator must end where it would without AC.
  out.params.push_back(at::rand({4}));
  return out;
}

bool bitwise_equal(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!at::equal(a[i], b[i])) return false;
  return true;
}

class DropoutRegion : public ::testing::TestWithParam<const char*> {};

TEST_P(DropoutRegion, GradientsAndTrainingEqualNoAcBitwise) {
  DropoutTrace plain = train_dropout(std::nullopt);
  check::AcPolicyKind kind = check::parse_ac_policy(GetParam());
  DropoutTrace ac = train_dropout(config_for(kind));
  EXPECT_TRUE(bitwise_equal(plain.losses, ac.losses));
  EXPECT_TRUE(bitwise_equal(plain.grads, ac.grads));
  EXPECT_TRUE(bitwise_equal(plain.params, ac.params));
  ASSERT_EQ(ac.last_stats.regions.size(), 1u);
  const oracles::RegionStats& r = ac.last_stats.regions[0];
  EXPECT_TRUE(r.recomputed);
  // The full policy saves the random op (its mask is stored and handed back); the
  // others recompute it from the restored generator state.
  int64_t stored_masks = r.saved_by_op.count("bernoulli_") ? r.saved_by_op.at("bernoulli_") : 0;
  EXPECT_EQ(stored_masks, kind == check::AcPolicyKind::Full ? 1 : 0);
  EXPECT_EQ(r.replayed_ops, r.saved_ops);
}

INSTANTIATE_TEST_SUITE_P(Policies, DropoutRegion, ::testing::Values("default", "eager", "full", "op"));

TEST(DropoutRegionRng, WithoutRestoringTheGeneratorTheRecomputedMaskDiffers) {
  // The control: if the generator state were not restored, the recomputation would draw
  // a fresh mask and the gradients would be wrong.
  DropoutTrace plain = train_dropout(std::nullopt, 1);
  EagerCheckpointConfig broken = config_for(check::AcPolicyKind::Default);
  broken.preserve_rng_state = false;
  DropoutTrace ac = train_dropout(broken, 1);
  EXPECT_TRUE(bitwise_equal(plain.losses, ac.losses));  // the forward (and the draw after it) is unaffected
  EXPECT_FALSE(bitwise_equal(plain.grads, ac.grads));
}

TEST(DropoutRegionRng, AStoredMaskNeedsNoGeneratorState) {
  // Under the full policy the mask is stored, not recomputed: even without restoring the
  // generator the gradients are right. This fails if stored outputs were recomputed.
  DropoutTrace plain = train_dropout(std::nullopt, 1);
  EagerCheckpointConfig no_rng = config_for(check::AcPolicyKind::Full);
  no_rng.preserve_rng_state = false;
  DropoutTrace ac = train_dropout(no_rng, 1);
  EXPECT_TRUE(bitwise_equal(plain.grads, ac.grads));
}

// ---------------------------------------------------------------------------------
// Misuse the mechanism refuses instead of producing wrong gradients

std::string backward_error(const std::function<at::Tensor()>& forward, const std::vector<at::Tensor>& wrt,
                           EagerCheckpointConfig config) {
  EagerCheckpointGuard guard(std::move(config));
  at::AutoGradMode grad_on(true);
  at::Tensor loss = forward().sum();
  try {
    trace::gradients({loss}, wrt);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(EagerCheckpointErrors, ARegionReadingAnUndeclaredTensorThatRequiresGrad) {
  at::Tensor w = at::randn({4, 4}).requires_grad_(true);
  at::Tensor x = at::randn({2, 4}).requires_grad_(true);
  EagerCheckpointConfig config = config_for(check::AcPolicyKind::Full);
  config.region_parameters = [](const std::string&) { return std::vector<at::Tensor>{}; };  // forgets w
  std::string error = backward_error(
      [&] { return trace::call_module("layers.0", x, [w](const at::Tensor& in) { return at::mm(in, w); }); }, {x, w},
      config);
  EXPECT_NE(error.find("region 'layers.0'"), std::string::npos) << error;
  EXPECT_NE(error.find("neither one of its inputs nor one of its parameters"), std::string::npos) << error;
}

TEST(EagerCheckpointErrors, ARecomputationThatRunsDifferentOperators) {
  at::Tensor x = at::randn({2, 4}).requires_grad_(true);
  EagerCheckpointConfig config = config_for(check::AcPolicyKind::Default);
  config.region_parameters = [](const std::string&) { return std::vector<at::Tensor>{}; };
  auto calls = std::make_shared<int>(0);
  std::string error = backward_error(
      [&] {
        return trace::call_module("layers.0", x,
                                  [calls](const at::Tensor& in) { return ++*calls == 1 ? at::sin(in) : at::cos(in); });
      },
      {x}, config);
  EXPECT_NE(error.find("diverged from the forward at operator #0"), std::string::npos) << error;
  EXPECT_NE(error.find("aten::sin"), std::string::npos) << error;
  EXPECT_NE(error.find("aten::cos"), std::string::npos) << error;
}

TEST(EagerCheckpointErrors, AStoredOutputWrittenInPlaceLater) {
  at::Tensor x = at::randn({2, 4}).requires_grad_(true);
  at::Tensor w = at::randn({4, 4}).requires_grad_(true);
  EagerCheckpointConfig config = config_for(check::AcPolicyKind::Default);  // saves mm
  config.region_parameters = [w](const std::string&) { return std::vector<at::Tensor>{w}; };
  std::string error = backward_error(
      [&] {
        return trace::call_module("layers.0", x, [w](const at::Tensor& in) {
          at::Tensor y = at::mm(in, w);
          y.mul_(2);  // would silently change the stored mm result
          return at::tanh(y);
        });
      },
      {x, w}, config);
  EXPECT_NE(error.find("stored output of aten::mm"), std::string::npos) << error;
  EXPECT_NE(error.find("modified in place"), std::string::npos) << error;
}

TEST(EagerCheckpoint, OnlyRegionCallsAreCheckpointedAndNoGradCallsRunPlainly) {
  at::Tensor x = at::randn({2, 4}).requires_grad_(true);
  EagerCheckpointConfig config = config_for(check::AcPolicyKind::Default);
  config.region_parameters = [](const std::string&) { return std::vector<at::Tensor>{}; };
  EagerCheckpointGuard guard(config);
  at::AutoGradMode grad_on(true);
  at::Tensor a = trace::call_module("layers.0.attention", x, [](const at::Tensor& in) { return in.sin(); });
  at::Tensor b = trace::call_module("norm", x, [](const at::Tensor& in) { return in.sin(); });
  {
    at::NoGradGuard no_grad;
    trace::call_module("layers.1", x, [](const at::Tensor& in) { return in.sin(); });
  }
  EXPECT_TRUE(guard.stats().regions.empty());
  at::Tensor c = trace::call_module("layers.2", x, [](const at::Tensor& in) { return in.sin(); });
  ASSERT_EQ(guard.stats().regions.size(), 1u);
  EXPECT_EQ(guard.stats().regions[0].fqn, "layers.2");
  EXPECT_EQ(c.grad_fn()->name().find("CheckpointFunction") != std::string::npos, true) << c.grad_fn()->name();
  // The checkpointed value and its gradient equal the plain ones.
  EXPECT_TRUE(at::equal(a, c));
  std::vector<at::Tensor> ga = trace::gradients({a.sum()}, {x}), gc = trace::gradients({c.sum()}, {x});
  EXPECT_TRUE(at::equal(ga[0], gc[0]));
  EXPECT_TRUE(guard.stats().regions[0].recomputed);
}

}  // namespace
}  // namespace passcheck
