// Every AC-related historical bug (specs/passes.md 1-4), as a mutant of the real pass,
// is caught by the same checks the AC suites run, with a message pointing at the bug.
#include "framework/check/pipeline.h"
#include "framework/check/remat_properties.h"
#include "oracles/training_driver.h"
#include "suites/mutants/ac_mutants.h"

#include <gtest/gtest.h>

namespace passcheck {
namespace {

using mutants::registry_with_mutants;

// Traces `model`, applies `pipeline` (mutants allowed), returns the property violations.
std::vector<std::string> remat_violations(const std::string& model, const std::string& pipeline,
                                          models::SubjectOptions options = {}) {
  auto subject = models::make_subject(model, options);
  trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), false);
  ir::Graph& g = program.mutable_graph();
  auto before = g.clone();
  check::Pipeline::parse(pipeline, registry_with_mutants()).run(g);
  return check::check_remat_properties(*before, g);
}

bool any_contains(const std::vector<std::string>& messages, const std::string& needle) {
  for (const auto& m : messages)
    if (m.find(needle) != std::string::npos) return true;
  return false;
}

models::SubjectOptions small_llama() { return {0, c10::Device(c10::DeviceType::CPU), 1, 16}; }

TEST(AcMutants, EveryMutantIsRegisteredWithItsBug) {
  for (const auto& m : mutants::ac_mutants()) {
    ASSERT_TRUE(registry_with_mutants().contains(m.pass)) << m.pass;
    EXPECT_NE(registry_with_mutants().get(m.pass).info.summary.find("MUTANT (bug"), std::string::npos);
  }
}

TEST(AcMutants, RealRematSatisfiesTheProperties) {
  EXPECT_TRUE(remat_violations("llama3", "ac-regions,sac-tag{policy=default},remat", small_llama()).empty());
}

TEST(AcMutants, Bug1IgnoringPreferRecomputeIsCaught) {
  auto v = remat_violations("llama3", "ac-regions,sac-tag{policy=default},mutant-remat-ignores-prefer-recompute",
                            small_llama());
  ASSERT_FALSE(v.empty());
  EXPECT_TRUE(any_contains(v, "tagged prefer_recompute: the original stays alive until the backward")) << v.front();
}

TEST(AcMutants, Bug1TwoMatmulHasFiveMmInsteadOfSix) {
  auto subject = models::make_subject("two_matmul");
  trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), false);
  ir::Graph& g = program.mutable_graph();
  for (ir::Node* n : g.nodes())
    if (n->meta().phase == ir::Phase::Forward && n->meta().module_fqn == "layer")
      n->mutable_meta().recompute = n->op() == "aten::mm" ? ir::RecomputePolicy::PreferRecompute : ir::RecomputePolicy::MustSave;
  auto before = g.clone();
  check::Pipeline::parse("mutant-remat-ignores-prefer-recompute", registry_with_mutants()).run(g);
  int mm = 0;
  for (const ir::Node* n : g.nodes()) mm += n->op() == "aten::mm";
  EXPECT_EQ(mm, 5);  // the pytorch 178935 symptom
  EXPECT_TRUE(any_contains(check::check_remat_properties(*before, g), "reads forward value %mm tagged prefer_recompute"));
}

TEST(AcMutants, Bug2FreshRandomnessInTheBackwardIsCaughtBitwise) {
  oracles::DriverOptions driver;
  driver.model = "dropout_mlp";
  driver.steps = 1;
  driver.transform = [](trace::TracedProgram& program) {
    check::Pipeline::parse("ac-regions,sac-tag{policy=default},mutant-remat-fresh-rng{rng=replay}",
                           registry_with_mutants())
        .run(program.mutable_graph());
  };
  auto report = oracles::run_traced_vs_eager(driver);
  EXPECT_FALSE(report.equal()) << report.format();
  ASSERT_EQ(report.steps.size(), 1u);
  EXPECT_TRUE(report.steps[0].comparisons[0].equal);  // the forward loss is still right...
  bool a_gradient_differs = false;
  for (size_t i = 1; i < report.steps[0].comparisons.size(); ++i)
    a_gradient_differs |= report.steps[0].comparisons[i].name.rfind("grad ", 0) == 0 && !report.steps[0].comparisons[i].equal;
  EXPECT_TRUE(a_gradient_differs) << report.format();  // ...the gradients are not
}

TEST(AcMutants, Bug3OriginalLeftAliveIsCaught) {
  auto v = remat_violations("llama3", "ac-regions,sac-tag{policy=default},mutant-remat-keeps-original", small_llama());
  EXPECT_TRUE(any_contains(v, "the original stays alive until the backward")) << (v.empty() ? "" : v.front());
}

TEST(AcMutants, Bug3RecomputingTwiceIsCaught) {
  auto v = remat_violations("llama3", "ac-regions,sac-tag{policy=default},mutant-remat-recomputes-twice", small_llama());
  EXPECT_TRUE(any_contains(v, "is recomputed more than once")) << (v.empty() ? "" : v.front());
}

TEST(AcMutants, Bug4ExecutingWithAutogradOnIsCaught) {
  oracles::DriverOptions driver;
  driver.model = "mlp";
  driver.steps = 1;
  driver.executor = mutants::executor_with_autograd_on();
  auto report = oracles::run_traced_vs_eager(driver);
  EXPECT_FALSE(report.equal());
  ASSERT_EQ(report.steps.size(), 1u);
  ASSERT_FALSE(report.steps[0].problems.empty()) << report.format();
  EXPECT_NE(report.steps[0].problems[0].find("carries autograd history"), std::string::npos)
      << report.steps[0].problems[0];
}

}  // namespace
}  // namespace passcheck
