// partition-min-cut's memory-budget is monotone: a smaller budget never saves more bytes
// (upstream's budgeted partitioner is not, pytorch issue 197838). Checked on random
// graphs (generators/random_graph.h) and on the debug models, and shown to catch, on the
// debug models, the mutant whose fallback, when no cut fits the budget, is the plain
// min-cut (random IR graphs seldom hold a required-forward matmul whose recomputation
// changes the cut, so they do not catch it).
#include "generators/random_graph.h"
#include "oracles/training_driver.h"
#include "passes/partition/budget_monotonicity.h"
#include "passes/partition/partition_passes.h"
#include "suites/support/traced_joint.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <optional>

namespace passcheck {
namespace {

const ir::Graph& traced_model(const std::string& model) { return *testing::traced_joint(model).graph; }

using passes::budget_monotonicity_violation;

check::InjectedFaults fallback_mutant() {
  check::InjectedFaults f;
  f.injected_bugs.insert("budget-fallback-to-plain-cut");
  return f;
}

RC_GTEST_PROP(PartitionBudget, SavedBytesNeverGrowAsTheBudgetShrinksOnRandomGraphs, ()) {
  const std::shared_ptr<ir::Graph> graph = *gen::arbitrary_graph();
  const passes::Classification classes = passes::classify_nodes(*graph);
  bool candidate = false;
  for (const ir::Node* n : graph->nodes())
    candidate = candidate || (classes.class_of(n) == passes::NodeClass::RequiredForward && passes::is_compute_intensive(*n));
  RC_CLASSIFY(candidate, "a matmul the budget may unban");
  const std::optional<std::string> violation = budget_monotonicity_violation(*graph);
  RC_ASSERT(!violation.has_value());
}

TEST(PartitionBudget, SavedBytesNeverGrowAsTheBudgetShrinksOnTheDebugModels) {
  for (const std::string& model : models::available_subjects()) {
    SCOPED_TRACE(model);
    std::optional<std::string> violation = budget_monotonicity_violation(traced_model(model));
    EXPECT_FALSE(violation.has_value()) << *violation;
  }
}

TEST(PartitionBudget, TheFallbackToPlainCutMutantIsCaughtOnTheDebugModels) {
  int caught = 0;
  std::string first;
  for (const std::string& model : models::available_subjects()) {
    std::optional<std::string> violation =
        budget_monotonicity_violation(traced_model(model), fallback_mutant());
    if (violation) {
      ++caught;
      if (first.empty()) first = model + ": " + *violation;
    }
  }
  EXPECT_GT(caught, 0) << "the mutant passed the budget property on every debug model";
  std::cout << "caught on " << caught << " models; e.g. " << first << "\n";
}

}  // namespace
}  // namespace passcheck
