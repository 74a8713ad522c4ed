// The cudagraph pass family (specs/distributed.md "CUDA-graph wrapper", torchtitan PR
// 2050): `cudagraph` puts every part of a module under the CUDA-graph wrapper
// (framework/exec/captured_graph.h), cutting a part at the nodes a CUDA graph cannot
// capture (capturable.h) into captured segments and eager islands (segments.h), and
// marks as static the inputs whose address is fixed from capture on.
#pragma once

#include "framework/check/pass.h"
#include "passes/cudagraph/capturable.h"
#include "passes/cudagraph/segments.h"

namespace passcheck::passes {

check::PassInfo cudagraph_pass_info();
/// The module pass `cudagraph` (docs/passes.md "cudagraph").
check::PassResult cudagraph_pass(ir::Module& module, const check::PassOptions& options);

/// Registers every pass of the cudagraph family.
void register_cudagraph_passes(check::PassRegistry& registry);

}  // namespace passcheck::passes
