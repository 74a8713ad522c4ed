// Test-only passes that misbehave on purpose, to exercise the fuzzer's crash and
// timeout handling: never in the built-in registry, registered only when asked
// (`passcheck fuzz --test-passes`, or PASSCHECK_TEST_PASSES=1 in the environment).
#pragma once

#include "framework/check/pass.h"

namespace passcheck::mutants {

/// Adds "crash-on-odd" (dereferences null when the graph has an odd number of nodes)
/// and "hang" (loops forever on any graph with a node) to `registry`.
void register_test_passes(check::PassRegistry& registry);

}  // namespace passcheck::mutants
