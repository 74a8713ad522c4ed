// Known-buggy incremental verifiers: check::verify_changes handed a change set with a
// touched node left out, the way an incremental verifier that forgets a kind of change
// would behave. The incremental verifier's property (suites/property/
// incremental_verifier_property_test.cpp) and the gate's Checked mode must catch each.
#pragma once

#include "framework/check/verifier.h"

#include <functional>
#include <string>
#include <vector>

namespace passcheck::mutants {

struct VerifierMutant {
  std::string name;
  std::string description;
  std::function<std::vector<check::VerifierIssue>(const ir::Graph&, const check::ChangeSet&)> verify_changes;
};

/// verifier-skips-last-touched, verifier-ignores-moves, verifier-ignores-use-lists,
/// verifier-ignores-arguments.
const std::vector<VerifierMutant>& verifier_mutants();

}  // namespace passcheck::mutants
