// The historical mutants of the FSDP, placement and scheduling passes are registered
// with their bug numbers and each is caught by a real check that the real pass passes:
// bug 5 by check_gathered_parameters_not_saved after remat (the saved value named),
// bug 12 by check_redirected_reads_wanted (the consumer named), bug 14 by the pipeline
// gate's verifier (the use before its definition named). The llama3 per-rank form of
// bug 5 is in suites/dist/fsdp_schedule_test.cpp.
#include "framework/check/distributed_properties.h"
#include "framework/check/pipeline.h"
#include "framework/ir/text.h"
#include "generators/distributed_situations.h"
#include "suites/mutants/distributed_mutants.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace passcheck {
namespace {

using ::testing::HasSubstr;
using mutants::registry_with_mutants;

std::unique_ptr<ir::Graph> parse_mutant_graph(const std::string& text) { return ir::parse_graph(text, "mutant.graph"); }

void run(const std::string& pipeline, ir::Graph& g) { check::Pipeline::parse(pipeline, registry_with_mutants()).run(g); }

const char* const kJoint = gen::fsdp_joint_graph();

const char* const kThirdPlacement = R"(mesh dp=32, tp=8 rank 0
graph(arg %x : f32[4, 8] placed(S(0), S(0))):
  %a : f32[4, 8] placed(S(0), R) = aten::alias(%x)
  %back : f32[4, 8] = aten::neg(%a)  #{wants=[(S(0), S(0))]}
  %third : f32[4, 8] = aten::relu(%a)  #{wants=[(R, R)]}
  return (%back, %third)
)";

TEST(DistributedMutants, EachIsRegisteredWithItsHistoricalBug) {
  std::map<std::string, int> expected{{"mutant-force-recompute-fsdp-tags-only-slice", 5},
                                      {"mutant-eliminate-alias-rewires-third-placement", 12},
                                      {"mutant-cap-compute-reorders-before-cycle-check", 14}};
  ASSERT_EQ(mutants::distributed_mutants().size(), expected.size());
  for (const mutants::MutantInfo& m : mutants::distributed_mutants()) {
    EXPECT_EQ(m.historical_bug, expected.at(m.pass)) << m.pass;
    ASSERT_TRUE(registry_with_mutants().contains(m.pass)) << m.pass;
    EXPECT_THAT(registry_with_mutants().get(m.pass).info.summary,
                HasSubstr("MUTANT (bug " + std::to_string(m.historical_bug) + ")"));
  }
}

TEST(DistributedMutants, Bug5IsCaughtByTheGatheredParameterProperty) {
  auto real = parse_mutant_graph(kJoint), mutant = parse_mutant_graph(kJoint);
  run("force-recompute-fsdp-all-gather,remat", *real);
  EXPECT_THAT(check::check_gathered_parameters_not_saved(*real), ::testing::IsEmpty());
  run("mutant-force-recompute-fsdp-tags-only-slice,remat", *mutant);
  auto violations = check::check_gathered_parameters_not_saved(*mutant);
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_THAT(violations[0], HasSubstr("%t (derived only from the all-gathered parameter %w) is held from the forward"));
}

TEST(DistributedMutants, Bug12IsCaughtByTheRedirectedReadProperty) {
  auto before = parse_mutant_graph(kThirdPlacement), real = parse_mutant_graph(kThirdPlacement), mutant = parse_mutant_graph(kThirdPlacement);
  run("eliminate-alias-round-trips", *real);
  EXPECT_THAT(check::check_redirected_reads_wanted(*before, *real), ::testing::IsEmpty());
  run("mutant-eliminate-alias-rewires-third-placement", *mutant);
  auto violations = check::check_redirected_reads_wanted(*before, *mutant);
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_THAT(violations[0], HasSubstr("%third (aten::relu) operand 0 wants (R, R) but was redirected from %a to %x"));
}

TEST(DistributedMutants, Bug14IsCaughtByTheGatesVerifier) {
  auto real = parse_mutant_graph(mutants::kReversedRanks);
  run("cap-compute-batch-size{max-consecutive=1}", *real);  // the real pass falls back cleanly
  auto mutant = parse_mutant_graph(mutants::kReversedRanks);
  try {
    run("mutant-cap-compute-reorders-before-cycle-check{max-consecutive=1}", *mutant);
    FAIL() << "the gate accepted a graph out of topological order";
  } catch (const check::PassFailure& e) {
    EXPECT_THAT(e.what(), HasSubstr("operand %mm_1 is used before its definition"));
  }
}

}  // namespace
}  // namespace passcheck
