// Known-buggy passes that keep every value bit for bit and break only the aliasing of a
// graph's results, which the generic properties check (check::aliasing_changes): never
// in the built-in registry, registered with the mutants (`passcheck fuzz --mutants`).
#pragma once

#include "framework/check/pass.h"

namespace passcheck::mutants {

/// Adds "mutant-copy-view-outputs" (a graph output computed by a view of an input,
/// t/transpose/permute/view/alias/detach, is returned as a clone: the output no longer
/// aliases the input) and "mutant-share-equal-outputs" (of two graph outputs computed by
/// the same operator on the same arguments, the second returns the first's value: two
/// distinct outputs now share storage) to `registry`.
void register_alias_mutants(check::PassRegistry& registry);

}  // namespace passcheck::mutants
