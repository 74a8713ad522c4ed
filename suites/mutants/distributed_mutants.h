// The historical mutants of the FSDP, placement and scheduling passes (bugs 5, 12, 14 of
// specs/passes.md): each the real pass with the historical bug it declares in
// PassInfo::injectable_bugs injected. Registered by register_all_mutants (mutants.h);
// suites/mutants/distributed_mutants_test.cpp and suites/dist/fsdp_schedule_test.cpp
// show each caught.
#pragma once

#include "suites/mutants/mutants.h"

#include <vector>

namespace passcheck::mutants {

/// Bug 5 (force-recompute-fsdp-all-gather), 12 (eliminate-alias-round-trips), 14
/// (cap-compute-batch-size).
const std::vector<MutantInfo>& distributed_mutants();

}  // namespace passcheck::mutants
