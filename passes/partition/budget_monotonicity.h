// partition-min-cut's memory-budget promise as a check: a smaller budget never saves more
// bytes (upstream's budgeted partitioner breaks it, pytorch issue 197838). The property
// suite (suites/property/partition_budget_properties_test.cpp) and `passcheck gate` (for
// the partition family's mutants, which the generic properties cannot tell apart) use it.
#pragma once

#include "framework/check/pass.h"
#include "framework/ir/graph.h"

#include <optional>
#include <string>

namespace passcheck::passes {

/// Along the budgets 1.0, 0.9, 0.75, 0.5, 0.25, 0.1, 0.0, the bytes partition-min-cut saves
/// on `joint` never grow as the budget shrinks. Returns the violation (both budgets and
/// their bytes), or nullopt; nullopt too when min-cut refuses the graph. `faults` make a
/// mutant of the pass.
std::optional<std::string> budget_monotonicity_violation(const ir::Graph& joint,
                                                         const check::InjectedFaults& faults = {});

}  // namespace passcheck::passes
