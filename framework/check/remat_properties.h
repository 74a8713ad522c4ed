// Properties every activation rematerialization must satisfy, checked on the graph
// before and after the pass. Used by the AC suites on real models and by the fuzzer on
// random programs; each violation message says which node breaks which promise.
#pragma once

#include "framework/ir/graph.h"

#include <string>
#include <vector>

namespace passcheck::check {

/// Violations (empty when all hold):
///  - no backward node reads a forward value tagged recomputable (it must read a
///    recomputed duplicate, or the saved original stays alive until the backward);
///  - no forward value is recomputed more than once;
///  - every duplicate is marked backward;
///  - no value produced by a recomputable forward node is held from the forward into
///    the backward (estimate_memory's recomputable_live_at_backward_start is zero).
/// The overall peak is not promised: recomputing a chain can need more temporaries
/// than the one value it replaces; real-model peaks are measured, not asserted.
std::vector<std::string> check_remat_properties(const ir::Graph& before, const ir::Graph& after);

}  // namespace passcheck::check
