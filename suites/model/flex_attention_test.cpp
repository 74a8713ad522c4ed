// The seventh model test of torchtitan's graph trainer (flex_attention_annotations):
// llama3 with FlexAttention's computation annotated {compile_with_inductor:
// flex_attention}, traced == eager bit for bit over 5 steps, and the annotation on every
// node of the attention core, forward and backward, and on nothing else.
#include "framework/ir/graph.h"
#include "framework/trace/tracer.h"
#include "oracles/models/subject.h"
#include "oracles/training_driver.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace passcheck {
namespace {

constexpr const char* kKey = "compile_with_inductor";
constexpr const char* kValue = "flex_attention";

oracles::DriverOptions flex_llama3(int steps) {
  oracles::DriverOptions options;
  options.model = "llama3";
  options.subject.attention = "flex";
  options.subject.n_layers = 2;
  options.steps = steps;
  return options;
}

bool annotated(const ir::Node& n) {
  auto it = n.meta().custom.find(kKey);
  return it != n.meta().custom.end() && it->second == kValue;
}

// Violations of "the annotation is on the attention core's nodes, forward and backward,
// and on nothing else": every annotated node sits in an attention module, and the
// attention's softmax and tanh have annotated backward counterparts.
std::vector<std::string> annotation_violations(const ir::Graph& g) {
  std::vector<std::string> problems;
  std::set<std::string> annotated_forward_ops, annotated_backward_ops;
  for (const ir::Node* n : g.nodes()) {
    if (!annotated(*n)) continue;
    if (n->meta().module_fqn.find(".attention") == std::string::npos)
      problems.push_back("annotated outside the attention: " + n->op() + " in '" + n->meta().module_fqn + "'");
    (n->meta().phase == ir::Phase::Backward ? annotated_backward_ops : annotated_forward_ops).insert(n->op());
  }
  for (const char* op : {"aten::_softmax", "aten::tanh", "aten::masked_fill.Scalar"})
    if (!annotated_forward_ops.count(op)) problems.push_back(std::string("forward ") + op + " not annotated");
  for (const char* op : {"aten::_softmax_backward_data", "aten::tanh_backward"})
    if (!annotated_backward_ops.count(op)) problems.push_back(std::string("backward ") + op + " not annotated");
  return problems;
}

TEST(FlexAttentionAnnotations, TracedEqualsEagerOverFiveStepsBitwise) {
  oracles::DriverReport report = oracles::run_traced_vs_eager(flex_llama3(5));
  ASSERT_EQ(report.steps.size(), 5u);
  EXPECT_TRUE(report.equal()) << report.format();
}

TEST(FlexAttentionAnnotations, TheAnnotationCoversTheAttentionForwardAndBackward) {
  oracles::DriverOptions options = flex_llama3(1);
  std::vector<std::string> problems;
  size_t annotated_nodes = 0;
  options.transform = [&](trace::TracedProgram& program) {
    problems = annotation_violations(program.graph());
    for (const ir::Node* n : program.graph().nodes()) annotated_nodes += annotated(*n);
  };
  oracles::run_traced_vs_eager(options);
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_GT(annotated_nodes, 20u);
}

TEST(FlexAttentionAnnotations, TheCheckFailsWhenTheBackwardLosesTheAnnotation) {
  // A tracer (or pass) that drops inherited metadata from backward nodes: the check must
  // name the missing backward annotations.
  oracles::DriverOptions options = flex_llama3(1);
  std::vector<std::string> problems;
  options.transform = [&](trace::TracedProgram& program) {
    for (ir::Node* n : program.mutable_graph().nodes())
      if (n->meta().phase == ir::Phase::Backward) n->mutable_meta().custom.erase(kKey);
    problems = annotation_violations(program.graph());
  };
  oracles::run_traced_vs_eager(options);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems.front().find("backward"), std::string::npos) << problems.front();
}

TEST(FlexAttentionAnnotations, ScaledDotProductAttentionIsTheDefault) {
  // Without --attention flex nothing is annotated and the attention is sdpa's kernel.
  oracles::DriverOptions options = flex_llama3(1);
  options.subject.attention.clear();
  size_t annotated_nodes = 0, sdpa = 0;
  options.transform = [&](trace::TracedProgram& program) {
    for (const ir::Node* n : program.graph().nodes()) {
      annotated_nodes += annotated(*n);
      sdpa += n->op().find("_scaled_dot_product") != std::string::npos;
    }
  };
  oracles::run_traced_vs_eager(options);
  EXPECT_EQ(annotated_nodes, 0u);
  EXPECT_GT(sdpa, 0u);
}

}  // namespace
}  // namespace passcheck
