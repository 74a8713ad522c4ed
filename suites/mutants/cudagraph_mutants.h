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

/// The one-step graph the wrapper's suites show them on: y = x @ w + b with w a parameter,
/// x an argument, b a buffer, so under the wrapper w and b are static and x is copied.
inline constexpr const char* kLinearStepGraph = R"(graph(
    param %w : f32[3, 3],
    arg %x : f32[2, 3],
    buffer %b : f32[3]):
  %mm : f32[2, 3] = aten::mm(%x, %w)
  %y : f32[2, 3] = aten::add.Tensor(%mm, %b, 1)
  return (%y)
)";

}  // namespace passcheck::mutants
