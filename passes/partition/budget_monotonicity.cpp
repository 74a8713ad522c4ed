// The memory-budget monotonicity check of partition-min-cut (see budget_monotonicity.h).
#include "passes/partition/budget_monotonicity.h"

#include "passes/partition/classify.h"
#include "passes/partition/min_cut.h"
#include "passes/partition/partition_passes.h"

namespace passcheck::passes {

namespace {

// The budgets tried, largest first.
constexpr double kBudgetLadder[] = {1.0, 0.9, 0.75, 0.5, 0.25, 0.1, 0.0};

}  // namespace

std::optional<std::string> budget_monotonicity_violation(const ir::Graph& joint, const check::InjectedFaults& faults) {
  const check::PassInfo info = partition_min_cut_pass_info();
  const check::PassOptions options = check::PassOptions(info, {}).with_faults(faults);
  const Classification classes = classify_nodes(joint);
  int64_t previous_bytes = 0;
  double previous_budget = 0;
  for (double budget : kBudgetLadder) {
    check::PassResult scratch;
    check::Decisions d(scratch, options);
    MinCutOptions cut_options;
    cut_options.memory_budget = budget;
    int64_t bytes = 0;
    try {
      bytes = min_cut_saved_values(joint, classes, cut_options, d).saved_bytes;
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

}  // namespace passcheck::passes
