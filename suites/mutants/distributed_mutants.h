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

/// Recorded schedule ranks reversed along a data chain: the chunk order cap-compute-batch-size
/// reads contradicts the data (bug 14's cycle).
inline constexpr const char* kReversedRanks = R"(graph(arg %x : f32[4, 4]):
  %mm : f32[4, 4] = aten::mm(%x, %x)  #{custom={"schedule_rank": "2", "schedule_rs_before": ""}}
  %mm_1 : f32[4, 4] = aten::mm(%mm, %x)  #{custom={"schedule_rank": "1", "schedule_rs_before": ""}}
  %mm_2 : f32[4, 4] = aten::mm(%mm_1, %x)  #{custom={"schedule_rank": "0", "schedule_rs_before": ""}}
  return (%mm_2)
)";

}  // namespace passcheck::mutants
