// Activation checkpointing on traced graphs: policy tagging + rematerialization keep
// training bit for bit equal to eager, recompute exactly what the policy says (the
// two-matmul case of pytorch issue 178935), lower the memory held across the
// forward/backward boundary, and treat random ops as the spec requires.
#include "framework/check/memory_estimate.h"
#include "framework/check/pipeline.h"
#include "framework/check/remat_properties.h"
#include "framework/ir/text.h"
#include "oracles/eager_checkpoint.h"
#include "oracles/training_driver.h"

#include <gtest/gtest.h>

namespace passcheck {
namespace {

// The seed's SAC policy: mm PREFER_RECOMPUTE, everything else in the layer MUST_SAVE.
void tag_mm_prefer_recompute(ir::Graph& g) {
  for (ir::Node* n : g.nodes()) {
    if (n->meta().phase != ir::Phase::Forward || n->meta().module_fqn != "layer") continue;
    n->mutable_meta().recompute = n->op() == "aten::mm" ? ir::RecomputePolicy::PreferRecompute : ir::RecomputePolicy::MustSave;
  }
}

int count_op(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const ir::Node* node : g.nodes()) n += node->op() == op;
  return n;
}

trace::TracedProgram trace_model(const std::string& model, models::SubjectOptions options = {}) {
  auto subject = models::make_subject(model, options);
  return oracles::trace_subject(*subject, subject->batch(0), false);
}

TEST(Remat, TwoMatmulPreferRecomputeMmIsRecomputedLikeVanillaAc) {
  trace::TracedProgram program = trace_model("two_matmul");
  ir::Graph& g = program.mutable_graph();
  ASSERT_EQ(count_op(g, "aten::mm"), 5);
  auto before = g.clone();
  tag_mm_prefer_recompute(g);
  check::Pipeline::parse("remat").run(g);
  EXPECT_EQ(count_op(g, "aten::mm"), 6) << g.print();  // vanilla AC also has 6
  const ir::Node* gelu_backward = nullptr;
  for (const ir::Node* n : g.nodes())
    if (n->op() == "aten::gelu_backward") gelu_backward = n;
  ASSERT_NE(gelu_backward, nullptr);
  const ir::Node* read = gelu_backward->operand(1)->producer();
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->output()->name(), "mm_recomputed");
  EXPECT_EQ(read->meta().phase, ir::Phase::Backward);
  EXPECT_EQ(read->meta().custom.at("recomputed_from"), "mm");
  EXPECT_TRUE(check::check_remat_properties(*before, g).empty());
}

TEST(Remat, TwoMatmulRematIsBitwiseEqualAndHoldsLessAcrossTheBoundary) {
  models::SubjectOptions options;
  options.batch_size = 256;  // make the activations dominate the parameters
  oracles::DriverOptions driver;
  driver.model = "two_matmul";
  driver.subject = options;
  int64_t boundary_before = 0, boundary_after = 0, peak_before = 0, peak_after = 0;
  driver.transform = [&](trace::TracedProgram& program) {
    ir::Graph& g = program.mutable_graph();
    check::MemoryEstimate before = check::estimate_memory(g);
    tag_mm_prefer_recompute(g);
    check::Pipeline::parse("remat").run(g);
    check::MemoryEstimate after = check::estimate_memory(g);
    boundary_before = before.live_at_backward_start;
    boundary_after = after.live_at_backward_start;
    peak_before = before.peak_bytes;
    peak_after = after.peak_bytes;
  };
  auto report = oracles::run_traced_vs_eager(driver);
  EXPECT_TRUE(report.equal()) << report.format();
  // The forward mm [256, 8] no longer waits for the backward: 8 KiB less held there.
  EXPECT_EQ(boundary_before - boundary_after, 256 * 8 * 4);
  // The overall peak is at gelu_backward, where the recomputed mm is live as the saved
  // one was: it must not grow.
  EXPECT_LE(peak_after, peak_before);
}

struct PolicyCase {
  const char* policy;
};

class Llama3Policies : public ::testing::TestWithParam<const char*> {};

TEST_P(Llama3Policies, TracedRematMatchesEagerWithTheSameAcAndUsesLessMemory) {
  std::string pipeline = std::string("ac-regions,sac-tag{policy=") + GetParam() + "},remat";
  oracles::DriverOptions driver;
  driver.model = "llama3";
  oracles::EagerCheckpointConfig eager_ac;
  eager_ac.policy = check::parse_ac_policy(GetParam());
  driver.eager_checkpoint = eager_ac;  // the oracle checkpoints its layers the same way
  std::vector<std::string> violations;
  std::vector<check::PassRecord> records;
  int64_t boundary_before = 0, boundary_after = 0;
  driver.transform = [&](trace::TracedProgram& program) {
    ir::Graph& g = program.mutable_graph();
    auto before = g.clone();
    records = check::Pipeline::parse(pipeline).run(g);
    violations = check::check_remat_properties(*before, g);
    boundary_before = check::estimate_memory(*before).live_at_backward_start;
    boundary_after = check::estimate_memory(g).live_at_backward_start;
  };
  auto with_remat = oracles::run_traced_vs_eager(driver);
  EXPECT_TRUE(with_remat.equal()) << with_remat.format();  // 5 steps, bit for bit
  EXPECT_TRUE(violations.empty()) << violations.front();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_GT(records[2].stats.at("recomputed_nodes"), 0);
  // Originals keep their forward readers; what changes is how long they live.
  EXPECT_LT(boundary_after, boundary_before);

  oracles::DriverOptions plain;
  plain.model = "llama3";
  plain.steps = 1;
  auto without_remat = oracles::run_traced_vs_eager(plain);
  int64_t remat_peak = with_remat.steps[0].traced_peak_bytes;
  int64_t eager_ac_peak = with_remat.steps[0].eager_peak_bytes;
  int64_t plain_peak = without_remat.steps[0].traced_peak_bytes;
  std::cout << "[ llama3 " << GetParam() << " ] traced+remat peak " << remat_peak << " B, eager with the same AC "
            << eager_ac_peak << " B (ratio " << static_cast<double>(remat_peak) / static_cast<double>(eager_ac_peak)
            << "), traced without remat " << plain_peak << " B\n";
  EXPECT_LE(remat_peak, eager_ac_peak);
  EXPECT_LT(remat_peak, plain_peak);
}

INSTANTIATE_TEST_SUITE_P(Policies, Llama3Policies, ::testing::Values("default", "eager", "full", "op"));

TEST(Remat, ApplyAcFullEveryLayerIsBitwise) {
  oracles::DriverOptions driver;
  driver.model = "llama3";
  driver.subject.batch_size = 1;
  driver.subject.seq_len = 32;
  driver.steps = 2;
  driver.transform = [](trace::TracedProgram& program) {
    check::Pipeline::parse("ac-regions,apply-ac{mode=selective,option=2},remat").run(program.mutable_graph());
  };
  auto report = oracles::run_traced_vs_eager(driver);
  EXPECT_TRUE(report.equal()) << report.format();
}

TEST(Remat, RandomOpInARecomputeRegionIsAnErrorByDefault) {
  trace::TracedProgram program = trace_model("dropout_mlp");
  ir::Graph& g = program.mutable_graph();
  try {
    check::Pipeline::parse("ac-regions,sac-tag{policy=default},remat").run(g);
    FAIL() << "expected the remat pass to refuse";
  } catch (const check::PassFailure& failure) {
    std::string msg = failure.what();
    EXPECT_EQ(failure.pass(), "remat");
    EXPECT_NE(msg.find("is a random op tagged recomputable; RNG ops cannot be recomputed"), std::string::npos) << msg;
    EXPECT_NE(msg.find("aten::bernoulli_"), std::string::npos) << msg;
  }
}

TEST(Remat, RandomOpReplaysItsGeneratorStateBitwise) {
  oracles::DriverOptions driver;
  driver.model = "dropout_mlp";
  int64_t replays = 0;
  driver.transform = [&](trace::TracedProgram& program) {
    auto records = check::Pipeline::parse("ac-regions,sac-tag{policy=default},remat{rng=replay}").run(program.mutable_graph());
    replays = records.back().stats.at("rng_replays");
  };
  auto report = oracles::run_traced_vs_eager(driver);
  EXPECT_EQ(replays, 1);
  EXPECT_TRUE(report.equal()) << report.format();
}

TEST(Remat, MoreThanOneBackwardRegionNeedingRecomputationIsAnError) {
  // Two backward runs separated by a forward-phase node, both reading a recomputable value.
  auto g = ir::parse_graph(R"(graph(param %w : f32[4, 4], arg %x : f32[4, 4]):
  %a : f32[4, 4] = aten::mm(%x, %w)  #{recompute=prefer_recompute}
  %s : f32[] = aten::sum(%a, None)  #{phase=loss, fqn="loss"}
  %b1 : f32[4, 4] = aten::mul.Tensor(%a, %a)  #{phase=backward}
  %f : f32[4, 4] = aten::neg(%x)  #{phase=optimizer}
  %b2 : f32[4, 4] = aten::mul.Tensor(%a, %f)  #{phase=backward}
  return (%s, %b1, %b2)
)");
  try {
    check::PipelineOptions no_verify;
    no_verify.verify_each = false;
    check::Pipeline::parse("remat").run(*g, no_verify);
    FAIL() << "expected an error";
  } catch (const check::PassFailure& failure) {
    EXPECT_NE(std::string(failure.what()).find("2 disjoint backward regions need recomputation"), std::string::npos)
        << failure.what();
  }
}

TEST(Remat, NothingRecomputableLeavesTheGraphUnchanged) {
  trace::TracedProgram program = trace_model("two_matmul");
  uint64_t hash = program.graph().hash();
  auto records = check::Pipeline::parse("remat").run(program.mutable_graph());
  EXPECT_FALSE(records[0].changed);
  EXPECT_EQ(program.graph().hash(), hash);
}

TEST(Remat, IsIdempotent) {
  trace::TracedProgram program = trace_model("llama3", {0, c10::Device(c10::DeviceType::CPU), 1, 16});
  ir::Graph& g = program.mutable_graph();
  check::Pipeline::parse("ac-regions,sac-tag{policy=eager},remat").run(g);
  uint64_t hash = g.hash();
  auto records = check::Pipeline::parse("remat").run(g);
  EXPECT_FALSE(records[0].changed);
  EXPECT_EQ(g.hash(), hash);
}

}  // namespace
}  // namespace passcheck
