// partition-min-cut's memory-budget is monotone: a smaller budget never saves more bytes
// (upstream's budgeted partitioner is not, pytorch issue 197838). Checked on random
// graphs (generators/random_graph.h) and on the debug models, and shown to catch, on the
// debug models, the mutant whose fallback, when no cut fits the budget, is the plain
// min-cut (random IR graphs seldom hold a required-forward matmul whose recomputation
// changes the cut, so they do not catch it).
#include "generators/random_graph.h"
#include "oracles/training_driver.h"
#include "passes/partition/partition_passes.h"
#include "suites/support/traced_joint.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <optional>

namespace passcheck {
namespace {

const ir::Graph& traced_model(const std::string& model) { return *testing::traced_joint(model).graph; }

/// The budgets the monotonicity property tries, largest first.
const std::vector<double>& budget_ladder() {
  static const std::vector<double> ladder = {1.0, 0.9, 0.75, 0.5, 0.25, 0.1, 0.0};
  return ladder;
}

/// The partition-min-cut memory-budget property: along budget_ladder(), the saved bytes
/// never grow as the budget shrinks. Returns the violation (both budgets and their
/// bytes) or nullopt; nullopt too when min-cut refuses the graph. `faults` make a mutant.
std::optional<std::string> budget_monotonicity_violation(const ir::Graph& joint,
                                                                const check::InjectedFaults& faults = {}) {
  const check::PassInfo info = passes::partition_min_cut_pass_info();
  const check::PassOptions options = check::PassOptions(info, {}).with_faults(faults);
  const passes::Classification classes = passes::classify_nodes(joint);
  int64_t previous_bytes = 0;
  double previous_budget = 0;
  for (double budget : budget_ladder()) {
    check::PassResult scratch;
    check::Decisions d(scratch, options);
    passes::MinCutOptions cut_options;
    cut_options.memory_budget = budget;
    int64_t bytes = 0;
    try {
      bytes = passes::min_cut_saved_values(joint, classes, cut_options, d).saved_bytes;
    } catch (const check::RefusedInput&) {
      return std::nullopt;
    }
    if (budget < 1.0 && bytes > previous_bytes)
      return "memory-budget " + std::to_string(budget) + " saves " + std::to_string(bytes) + " bytes, more than the " +
             std::to_string(previous_bytes) + " bytes of budget " + std::to_string(previous_budget);
    previous_bytes = bytes;
    previous_budget = budget;
  }
  return std::nullopt;
}

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
