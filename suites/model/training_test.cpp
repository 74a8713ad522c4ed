// Model suites: traced training equals eager training bit for bit over 5 optimizer
// steps (loss, every gradient, every parameter and buffer after every step), for the
// small programs and llama3 debug, traced on real tensors and on meta. The oracle is
// shown to fail when the traced graph is perturbed.
#include "framework/ir/graph.h"
#include "oracles/training_driver.h"

#include <gtest/gtest.h>

namespace passcheck {
namespace {

oracles::DriverReport train(const std::string& model, oracles::OptimizerKind optimizer, bool meta, int steps = 5) {
  oracles::DriverOptions options;
  options.model = model;
  options.steps = steps;
  options.optimizer = optimizer;
  options.trace_on_meta = meta;
  return oracles::run_traced_vs_eager(options);
}

size_t parameter_count(const std::string& model) {
  return models::make_subject(model)->module()->parameters().size();
}

void expect_bitwise(const oracles::DriverReport& report, size_t params, size_t buffers) {
  ASSERT_EQ(report.steps.size(), 5u);
  for (const auto& step : report.steps) {
    // loss + grads + params + buffers, all compared and all equal.
    EXPECT_EQ(step.comparisons.size(), 1 + 2 * params + buffers);
    EXPECT_TRUE(step.equal()) << report.format();
  }
  EXPECT_TRUE(report.equal());
}

TEST(TracedTraining, MlpSgdFiveStepsBitwise) {
  expect_bitwise(train("mlp", oracles::OptimizerKind::SGD, false), parameter_count("mlp"), 0);
}

TEST(TracedTraining, MlpAdamFiveStepsBitwiseTracedOnMeta) {
  expect_bitwise(train("mlp", oracles::OptimizerKind::Adam, true), parameter_count("mlp"), 0);
}

TEST(TracedTraining, TwoMatmulFiveStepsBitwise) {
  expect_bitwise(train("two_matmul", oracles::OptimizerKind::SGD, false), 2, 0);
}

TEST(TracedTraining, Llama3SgdFiveStepsBitwise) {
  auto report = train("llama3", oracles::OptimizerKind::SGD, false);
  expect_bitwise(report, parameter_count("llama3"), 2);
  EXPECT_GT(report.graph_nodes, 1000u);
}

TEST(TracedTraining, Llama3AdamFiveStepsBitwiseTracedOnMeta) {
  expect_bitwise(train("llama3", oracles::OptimizerKind::Adam, true), parameter_count("llama3"), 2);
}

TEST(TracedTraining, TheOracleCatchesAPerturbedGraph) {
  // Switch gelu to its tanh approximation in the traced graph only: a numerics change
  // a faulty pass could make. The comparison must flag the loss and the gradients.
  oracles::DriverOptions options;
  options.model = "mlp";
  options.steps = 2;
  options.transform = [](trace::TracedProgram& program) {
    for (ir::Node* n : program.mutable_graph().nodes())
      if (n->op() == "aten::gelu") n->set_arg(1, ir::Arg::string("tanh"));
  };
  auto report = oracles::run_traced_vs_eager(options);
  EXPECT_FALSE(report.equal());
  ASSERT_FALSE(report.steps.empty());
  EXPECT_FALSE(report.steps[0].comparisons[0].equal);  // the loss already differs
  EXPECT_NE(report.format().find("MISMATCH"), std::string::npos);
}

TEST(TracedTraining, TheOracleCatchesAGraphThatDropsAGradientContribution) {
  // Replace the last backward mm's first operand by zeros: a gradient goes missing.
  oracles::DriverOptions options;
  options.model = "two_matmul";
  options.steps = 1;
  options.transform = [](trace::TracedProgram& program) {
    ir::Graph& g = program.mutable_graph();
    ir::Node* last = g.last_node();
    ir::Node* zeros = g.create("aten::zeros_like", {ir::Arg::of(last->operand(0)), ir::Arg::none(), ir::Arg::none(),
                                                    ir::Arg::none(), ir::Arg::none(), ir::Arg::none()},
                               last);
    zeros->add_output(ir::ValueType::Tensor, last->operand(0)->meta());
    last->replace_operand(0, zeros->output());
  };
  auto report = oracles::run_traced_vs_eager(options);
  ASSERT_EQ(report.steps.size(), 1u);
  const auto& rows = report.steps[0].comparisons;
  EXPECT_TRUE(rows[0].equal);                    // the loss is untouched
  EXPECT_FALSE(rows[1].equal) << rows[1].describe();  // grad w1 is wrong
  EXPECT_TRUE(rows[2].equal);                    // grad w2 is right
}

}  // namespace
}  // namespace passcheck
