// The cudagraph mutants (historical bugs 11 and 15) are each caught: by the generic pass
// properties (the replay property of framework/check/replay_properties.h) on a small
// graph, and by 5-step training against eager, where a re-allocated parameter shows the
// address-check mutants replaying stale memory. The real pass passes the same checks.
#include "framework/check/pass_properties.h"
#include "framework/ir/text.h"
#include "oracles/training_driver.h"
#include "suites/mutants/cudagraph_mutants.h"

#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace passcheck {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> violations_of(const std::string& pipeline) {
  auto graph = ir::parse_graph(mutants::kLinearStepGraph, "<test>");
  at::manual_seed(11);
  std::vector<c10::IValue> inputs{at::randn({3, 3}), at::randn({2, 3}), at::randn({3})};
  return check::check_pass_properties(*graph, inputs, pipeline, mutants::registry_with_mutants()).violations;
}

TEST(CudagraphMutants, EachIsRegisteredWithItsHistoricalBug) {
  std::map<std::string, int> expected{{"mutant-cudagraph-static-arguments", 11},
                                      {"mutant-cudagraph-skips-a-copy", 11},
                                      {"mutant-cudagraph-unchecked-static-addresses", 11},
                                      {"mutant-cudagraph-self-compared-address-check", 15},
                                      {"mutant-cudagraph-static-per-call-values", 11},
                                      {"mutant-cudagraph-captures-host-scalars", 0},
                                      // Told by its text case (suites/passes_text/passes_text_test.cpp):
                                      // the replay model cannot see a kernel's host read.
                                      {"mutant-cudagraph-captures-grouped-mm-fallback", 0},
                                      // Told by fuzz --pass cudagraph's eager islands and its text case.
                                      {"mutant-cudagraph-captures-dynamic-shape-consumers", 0}};
  ASSERT_EQ(mutants::cudagraph_mutants().size(), expected.size());
  for (const mutants::MutantInfo& m : mutants::cudagraph_mutants()) {
    EXPECT_EQ(m.historical_bug, expected.at(m.pass)) << m.pass;
    EXPECT_TRUE(mutants::registry_with_mutants().contains(m.pass)) << m.pass;
  }
}

TEST(CudagraphMutants, TheRealPassHoldsTheReplayProperty) {
  EXPECT_THAT(violations_of("cudagraph"), ::testing::IsEmpty());
}

TEST(CudagraphMutants, ArgumentsMarkedStaticAreRefusedAtTheFirstReplay) {
  auto v = violations_of("mutant-cudagraph-static-arguments");
  ASSERT_FALSE(v.empty());
  EXPECT_THAT(v[0], HasSubstr("call 3 of the captured module was refused although every static input kept its address"));
  EXPECT_THAT(v[0], HasSubstr("input 1 (%x) is static but moved"));
}

TEST(CudagraphMutants, PerCallValuesMarkedStaticReadPoisonAtTheFirstReplay) {
  // No address check guards them, and whether an allocator would put the next value at the
  // same place does not matter: the replay model poisons the capture call's freed buffer.
  auto v = violations_of("mutant-cudagraph-static-per-call-values");
  ASSERT_FALSE(v.empty());
  EXPECT_THAT(v[0], HasSubstr("call 3 of the captured module differs from the graph"));
}

TEST(CudagraphMutants, AnInputNeverCopiedDiffersFromTheGraphAtTheFirstReplay) {
  auto v = violations_of("mutant-cudagraph-skips-a-copy");
  ASSERT_FALSE(v.empty());
  EXPECT_THAT(v[0], HasSubstr("call 3 of the captured module differs from the graph"));
}

TEST(CudagraphMutants, BothAddressCheckMutantsReplayAMovedParameterFromItsOldStorage) {
  for (const char* mutant : {"mutant-cudagraph-unchecked-static-addresses", "mutant-cudagraph-self-compared-address-check"}) {
    SCOPED_TRACE(mutant);
    auto v = violations_of(mutant);
    ASSERT_FALSE(v.empty());
    EXPECT_THAT(v[0], HasSubstr("static input %w was re-allocated before this call and the captured graph replayed "
                                "without refusing on its old storage"));
  }
}

TEST(CudagraphMutants, CapturingAHostScalarReadFailsAtCapture) {
  const char* with_item = R"(graph(param %w : f32[4, 4], arg %x : f32[3, 4]):
  %mm : f32[3, 4] = aten::mm(%x, %w)
  %sum : f32[] = aten::sum(%mm, None)
  %item : float = aten::_local_scalar_dense(%sum)
  %mul : f32[3, 4] = aten::mul.Scalar(%mm, %item)
  %mm_1 : f32[3, 4] = aten::mm(%mul, %w)
  return (%mm_1)
)";
  auto graph = ir::parse_graph(with_item, "<test>");
  at::manual_seed(5);
  std::vector<c10::IValue> inputs{at::randn({4, 4}), at::randn({3, 4})};
  EXPECT_THAT(check::check_pass_properties(*graph, inputs, "cudagraph").violations, ::testing::IsEmpty());
  auto v = check::check_pass_properties(*graph, inputs, "mutant-cudagraph-captures-host-scalars",
                                        mutants::registry_with_mutants())
               .violations;
  ASSERT_FALSE(v.empty());
  EXPECT_THAT(v[0], HasSubstr("call 2 of the captured module failed"));
  EXPECT_THAT(v[0], HasSubstr("reads tensor data on the host (aten::_local_scalar_dense)"));
}

// Training: two_matmul, 5 steps, its first parameter re-allocated after step 3.
oracles::DriverReport train_with(const std::string& pipeline, bool reallocate) {
  oracles::DriverOptions options;
  options.model = "two_matmul";
  options.steps = 5;
  options.transform = [&](trace::TracedProgram& program) {
    oracles::apply_pipeline(program, check::Pipeline::parse(pipeline, mutants::registry_with_mutants()));
  };
  if (reallocate)
    options.after_step = [](int step, models::TrainingSubject& traced) {
      if (step != 3) return;
      at::NoGradGuard no_grad;
      at::Tensor p = traced.module()->parameters(true).at(0);
      p.set_(p.clone());
    };
  return oracles::run_traced_vs_eager(options);
}

TEST(CudagraphMutants, TrainingCatchesEveryMutant) {
  // The real pass: bitwise without re-allocation; refused, naming the input, with it.
  EXPECT_TRUE(train_with("cudagraph", false).equal());
  auto refused = train_with("cudagraph", true);
  ASSERT_EQ(refused.steps.size(), 4u);
  EXPECT_THAT(refused.steps[3].problems.at(0), HasSubstr("is static but moved"));

  auto static_args = train_with("mutant-cudagraph-static-arguments", false);
  ASSERT_EQ(static_args.steps.size(), 3u) << static_args.format();
  EXPECT_THAT(static_args.steps[2].problems.at(0), HasSubstr("is static but moved"));

  auto skipped = train_with("mutant-cudagraph-skips-a-copy", false);
  EXPECT_TRUE(skipped.steps.at(1).equal());
  EXPECT_FALSE(skipped.steps.at(2).equal()) << skipped.format();

  for (const char* mutant : {"mutant-cudagraph-unchecked-static-addresses", "mutant-cudagraph-self-compared-address-check"}) {
    SCOPED_TRACE(mutant);
    auto silent = train_with(mutant, true);
    ASSERT_EQ(silent.steps.size(), 5u) << silent.format();
    for (const auto& s : silent.steps) EXPECT_TRUE(s.problems.empty()) << "the mutant must not refuse";
    // The re-allocation freed the parameter's old storage: step 4 replays on it, and the
    // replay model, like a GPU allocator that handed the block on, gives it poison.
    EXPECT_TRUE(silent.steps[2].equal()) << silent.format();
    EXPECT_FALSE(silent.steps[3].equal()) << "step 4 reads the freed storage of the re-allocated parameter\n"
                                          << silent.format();
  }

  auto per_call = train_with("mutant-cudagraph-static-per-call-values", false);
  ASSERT_EQ(per_call.steps.size(), 5u) << per_call.format();
  for (const auto& s : per_call.steps) EXPECT_TRUE(s.problems.empty()) << "the mutant must not refuse";
  EXPECT_TRUE(per_call.steps[1].equal()) << per_call.format();
  EXPECT_FALSE(per_call.steps[2].equal()) << "the first replay reads the capture call's freed buffers\n"
                                          << per_call.format();
}

}  // namespace
}  // namespace passcheck
