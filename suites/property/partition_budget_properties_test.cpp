// partition-min-cut's memory-budget is monotone: a smaller budget never saves more bytes
// (upstream's budgeted partitioner is not, pytorch issue 197838). Checked on random
// graphs (generators/random_graph.h), on the debug models, and shown to catch the mutant
// whose fallback, when no cut fits the budget, is the plain min-cut.
#include "generators/random_graph.h"
#include "suites/support/partition_support.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace passcheck {
namespace {

check::InjectedFaults fallback_mutant() {
  check::InjectedFaults f;
  f.injected_bugs.insert("budget-fallback-to-plain-cut");
  return f;
}

RC_GTEST_PROP(PartitionBudget, SavedBytesNeverGrowAsTheBudgetShrinksOnRandomGraphs, ()) {
  const std::shared_ptr<ir::Graph> graph = *gen::arbitrary_graph();
  const std::optional<std::string> violation = testing::budget_monotonicity_violation(*graph);
  RC_ASSERT(!violation.has_value());
}

TEST(PartitionBudget, SavedBytesNeverGrowAsTheBudgetShrinksOnTheDebugModels) {
  for (const std::string& model : models::available_subjects()) {
    SCOPED_TRACE(model);
    const auto& m = testing::traced_joint(model);
    std::optional<std::string> violation = testing::budget_monotonicity_violation(*m.graph);
    EXPECT_FALSE(violation.has_value()) << *violation;
  }
}

TEST(PartitionBudget, TheFallbackToPlainCutMutantIsCaughtOnTheDebugModels) {
  int caught = 0;
  std::string first;
  for (const std::string& model : models::available_subjects()) {
    std::optional<std::string> violation =
        testing::budget_monotonicity_violation(*testing::traced_joint(model).graph, fallback_mutant());
    if (violation) {
      ++caught;
      if (first.empty()) first = model + ": " + *violation;
    }
  }
  EXPECT_GT(caught, 0) << "the mutant passed the budget property on every debug model";
  std::cout << "caught on " << caught << " models; e.g. " << first << "\n";
}

TEST(PartitionBudget, TheFallbackToPlainCutMutantIsCaughtOnRandomGraphs) {
  int caught = 0, decided = 0;
  for (uint64_t seed = 0; seed < 400 && caught == 0; ++seed) {
    std::shared_ptr<ir::Graph> g = gen::graph_for_seed(seed);
    if (!testing::budget_monotonicity_violation(*g)) ++decided;
    if (testing::budget_monotonicity_violation(*g, fallback_mutant())) ++caught;
  }
  EXPECT_GT(caught, 0) << "no random graph of 400 caught the mutant (" << decided << " decided)";
}

}  // namespace
}  // namespace passcheck
