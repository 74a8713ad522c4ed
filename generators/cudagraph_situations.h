// Hand-made graphs around the cudagraph pass's decisions that traced programs never reach:
// a host read of a tensor (item) in the middle of a step, a data-dependent output shape,
// a symbolic size, an unpinned copy between host and GPU, a host-only op in a CUDA graph,
// a write into a copied input, a bool argument, and a run of views with nothing to launch.
// Few and fixed, so the coverage campaign runs them all in one case. Graphs on `@cuda`,
// with symbols or with data-dependent shapes only go through the pipeline; the others are
// also held to the generic pass properties (the replay property among them).
#pragma once

#include "framework/check/pass.h"

#include <string>
#include <vector>

namespace passcheck::gen {

struct CudagraphSituation {
  std::string decision;  ///< "cudagraph rule|guard name" the graph is built to reach
  std::string text;      ///< graph text
  std::string pipeline;  ///< cudagraph with the options the situation needs
  bool executable = true;
};

/// Every situation, in a fixed order.
const std::vector<CudagraphSituation>& cudagraph_situations();

/// Runs every situation's pipeline with `registry` (the real pass or a mutant); the
/// executable ones are held to check::check_pass_properties. One line per violation.
std::vector<std::string> cudagraph_situation_violations(const check::PassRegistry& registry);

}  // namespace passcheck::gen
