// Mutants of the cleanup passes, generated from their declarations: for every declared
// guard a variant with that guard disabled ("mutant-<pass>-no-<guard>"), for every
// declared rule a variant with that rule widened beyond its conditions
// ("mutant-<pass>-widened-<rule>"), each the real pass run with one injected fault
// (check::InjectedFaults). A mutant whose fault cannot change any result is excluded
// with its argument (cleanup_mutant_exclusions) instead of kept as noise. Every kept
// one must be caught by the generic pass properties on generated cases
// (cleanup_mutants_test.cpp), not only by a hand-written case.
#pragma once

#include "framework/check/pass.h"
#include "suites/mutants/mutants.h"

#include <string>
#include <vector>

namespace passcheck::mutants {

/// The cleanup passes the mutants are generated for.
const std::vector<std::string>& cleanup_pass_names();

/// A decision whose mutant is not generated, and why it cannot change a result.
struct ExcludedMutant {
  std::string pass;
  std::string kind;      ///< "guard" or "rule"
  std::string decision;
  std::string why;
};
const std::vector<ExcludedMutant>& cleanup_mutant_exclusions();

/// One MutantInfo per kept mutant, with its faults (historical_bug 0: these are not
/// historical bugs). Registered by register_all_mutants (mutants.h).
const std::vector<MutantInfo>& cleanup_mutants();

}  // namespace passcheck::mutants
