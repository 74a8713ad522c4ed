// Known-buggy variants of the cudagraph pass and of the wrapper it configures (historical
// bugs 11 and 15): an argument marked static, an input never copied, a static-address check
// skipped, and upstream's check that compares the kept buffers with themselves. Caught by
// the replay property (framework/check/replay_properties.h), the training suites and the
// fuzzer.
#pragma once

#include "suites/mutants/mutants.h"

#include <vector>

namespace passcheck::mutants {

/// The cudagraph mutants, in all_mutants() order.
std::vector<MutantInfo> cudagraph_mutants();

}  // namespace passcheck::mutants
