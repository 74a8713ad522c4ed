// Known-buggy variants of the activation-checkpointing passes: each reproduces one
// historical bug of specs/passes.md as a registered pass ("mutant-..."), built from the
// real pass with one fault switched on. The suites must catch every one of them.
#pragma once

#include "framework/check/pass.h"
#include "framework/exec/executor.h"

#include <string>
#include <vector>

namespace passcheck::mutants {

struct MutantInfo {
  std::string pass;         ///< registry name of the buggy pass
  std::string replaces;     ///< the real pass it stands in for
  int historical_bug = 0;   ///< number in specs/passes.md "Historical bugs"
  std::string description;  ///< what goes wrong
};

/// The AC mutants (bugs 1, 2, 3): registered by register_ac_mutants.
const std::vector<MutantInfo>& ac_mutants();
/// Adds every AC mutant pass to `registry`, the decision mutants of the AC passes
/// included (decision_mutants_ac.h).
void register_ac_mutants(check::PassRegistry& registry);
/// The chunking mutants (bugs 9, 10): registered by register_chunk_mutants.
const std::vector<MutantInfo>& chunk_mutants();
/// Adds every chunking mutant to `registry`, the chunk passes' decision mutants included.
void register_chunk_mutants(check::PassRegistry& registry);

/// The built-in passes plus every mutant, built once per process.
const check::PassRegistry& registry_with_mutants();

/// Bug 4: executor options that run the traced graph with autograd recording on.
exec::ExecutorOptions executor_with_autograd_on();

}  // namespace passcheck::mutants
