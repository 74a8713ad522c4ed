// The test-side library of known-buggy pass variants, and its one entry point. Like
// MLIR's test passes (test/lib, registered into mlir-opt explicitly), the mutants are
// never in the built-in registry: a caller that wants them asks register_all_mutants (or
// registry_with_mutants) for them, as `passcheck opt|equiv|fuzz --mutants` and the
// mutant suite do. Each mutant is the real pass called with per-call faults
// (check::InjectedFaults in its options): a guard disabled, a rule widened, or a
// historical bug the pass declares in PassInfo::injectable_bugs. The passes keep no
// state of their own, so a mutant and its real pass may run at the same time.
#pragma once

#include "framework/check/pass.h"

#include <string>
#include <vector>

namespace passcheck::mutants {

/// One known-buggy variant of a real pass.
struct MutantInfo {
  std::string pass;              ///< registry name of the buggy pass, "mutant-..."
  std::string replaces;          ///< the real pass it stands in for
  int historical_bug = 0;        ///< number in specs/passes.md "Historical bugs"; 0: a generated decision mutant
  std::string description;       ///< what goes wrong
  check::InjectedFaults faults;  ///< what it injects into every call of the real pass
};

/// The faults of a mutant that reproduces the historical bug `name` its pass declares in
/// PassInfo::injectable_bugs.
inline check::InjectedFaults injected_bug(const std::string& name) {
  check::InjectedFaults faults;
  faults.injected_bugs.insert(name);
  return faults;
}

/// The faults of a mutant whose pass never refuses where its declared `guard` would.
inline check::InjectedFaults disabled_guard(const std::string& guard) {
  check::InjectedFaults faults;
  faults.disabled_guards.insert(guard);
  return faults;
}

/// Every mutant: the historical ones (bugs 1-3, 9, 10, then 6, 7, 13 of the collectives,
/// then 5, 12, 14 of the FSDP, placement and scheduling passes), then the decision mutants
/// of the AC and chunk passes, then those of the cleanup passes (excluded decisions left out),
/// then the partitioner mutants (bugs 8, 16) and the cudagraph mutants (bugs 11, 15).
const std::vector<MutantInfo>& all_mutants();

/// Adds every mutant of all_mutants() to `registry`, which must hold the real passes.
/// Throws check::PassConfigError when a mutant's fault names a guard, rule or injectable
/// bug its pass does not declare.
void register_all_mutants(check::PassRegistry& registry);

/// The built-in passes plus every mutant, built once per process.
const check::PassRegistry& registry_with_mutants();

/// The listing `passcheck passes --mutants` prints after the real passes: one line per
/// mutant with the pass it corrupts, its historical bug and its description.
std::string mutant_catalogue();

}  // namespace passcheck::mutants
