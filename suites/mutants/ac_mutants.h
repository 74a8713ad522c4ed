// The historical mutants of the activation-checkpointing and chunking passes: each
// reproduces one historical bug of specs/passes.md as a pass ("mutant-..."), the real
// pass with one injected fault (usually a bug the pass declares in
// PassInfo::injectable_bugs). Registered by register_all_mutants (mutants.h); the
// suites must catch every one of them.
#pragma once

#include "framework/check/pass.h"
#include "framework/exec/executor.h"
#include "suites/mutants/mutants.h"

#include <string>
#include <vector>

namespace passcheck::mutants {

/// The AC mutants (bugs 1, 2, 3), with their faults.
const std::vector<MutantInfo>& ac_mutants();
/// The chunking mutants (bugs 9, 10), with their faults.
const std::vector<MutantInfo>& chunk_mutants();

/// Bug 4: executor options that run the traced graph with autograd recording on.
exec::ExecutorOptions executor_with_autograd_on();

}  // namespace passcheck::mutants
