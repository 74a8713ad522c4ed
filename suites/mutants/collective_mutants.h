// The collective-fusion mutants: the real fuse-chained-allgathers with one historical
// fault injected each (bugs 6, 7 and 13 of specs/passes.md).
#pragma once

#include "suites/mutants/mutants.h"

namespace passcheck::mutants {

/// mutant-fuse-chained-allgathers-{swapped-groups, skips-identity-proof, shape-stride-identity}.
const std::vector<MutantInfo>& collective_mutants();

}  // namespace passcheck::mutants
