// The property of a module whose parts run under the CUDA-graph wrapper: called again and
// again like a training step, it computes what its joint graph computes, at every call.
// One call shows nothing (it is the warm-up); the captured graph's hazards show from the
// third call on, and only when inputs change between calls. So the check runs the module
// five times beside the graph, each call with new argument tensors holding other values and
// the state (parameters, buffers) updated in place between calls, as an optimizer does; then
// a second sequence re-allocates a static state input before a replay (as a checkpoint load
// does), which the wrapper must refuse rather than replay on the old storage.
#pragma once

#include "framework/ir/graph.h"
#include "framework/ir/module.h"

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace passcheck::check {

/// True when some part of `module` runs under the CUDA-graph wrapper.
bool has_captured_parts(const ir::Module& module);

/// Runs `module` (made from `graph` by `pipeline`, named in messages) and `graph` side by
/// side over several calls as described above, on copies of `inputs`; returns one line per
/// violation: a call whose outputs or state differ, a moved static input replayed silently,
/// a hazard raised where none exists.
std::vector<std::string> check_captured_replays(const ir::Graph& graph, const ir::Module& module,
                                                const std::vector<c10::IValue>& inputs, const std::string& pipeline);

}  // namespace passcheck::check
