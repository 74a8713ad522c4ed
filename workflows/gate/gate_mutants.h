// The gate's last resort for a mutant its text cases and subject properties did not
// catch: generated cases, in process, from the generators built around the passes'
// decisions (decision situations for every family, cleanup situations, chunk cases, AC
// coverage programs), until one shows the mutant violating a property the real pass
// holds on the same case, or the time budget runs out.
#pragma once

#include "framework/check/pass.h"

#include <cstdint>
#include <string>

namespace passcheck::gate {

/// What caught `mutant` (a registered stand-in for the real pass `real` of `family`)
/// within `seconds`: "generate_cleanup_situation(123): <violation>"; "" when nothing did.
std::string catch_mutant_on_generated_cases(const std::string& mutant, const std::string& real,
                                            const std::string& family, const check::PassRegistry& registry,
                                            uint64_t seed, double seconds);

}  // namespace passcheck::gate
