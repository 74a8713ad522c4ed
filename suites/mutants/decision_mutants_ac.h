// Decision mutants of the AC and chunk passes: for every declared guard of ac-regions,
// sac-tag, apply-ac, remat, chunk and concretize a variant with that guard disabled
// ("mutant-<pass>-no-<guard>"), and for every declared rule one with the rule widened
// ("mutant-<pass>-widened-<rule>"), built from the real pass with
// check::InjectedFaults. A fault no result can reveal is listed as excluded with the
// reason instead of being registered; register_all_mutants (mutants.h) registers the rest.
#pragma once

#include "framework/check/pass.h"

#include <string>
#include <vector>

namespace passcheck::mutants {

struct DecisionMutant {
  std::string pass;      ///< registry name: mutant-<pass>-no-<guard> / -widened-<rule>
  std::string replaces;  ///< the real pass
  std::string decision;  ///< the guard disabled or the rule widened
  bool guard = true;     ///< guard disabled (true) or rule widened (false)
  /// Non-empty: not registered, and why (no observable effect, or unreachable).
  std::string excluded;
};

/// One entry per declared guard and rule of the six passes, registered or excluded.
const std::vector<DecisionMutant>& ac_chunk_decision_mutants();

}  // namespace passcheck::mutants
