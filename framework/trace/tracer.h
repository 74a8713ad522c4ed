// The joint-graph tracer, a C++ make_fx: runs a training-step function once under a
// dispatcher mode that records every ATen primitive it reaches — including the ones the
// autograd engine runs to compute gradients — into an ir::Graph. Composite-implicit
// operators are decomposed so only primitives are recorded. Backward nodes are marked
// and take the annotations of their forward node through the autograd sequence number.
#pragma once

#include "framework/trace/traced_program.h"

#include <functional>

namespace passcheck::trace {

/// The function to trace: receives the user arguments, returns a nested result.
using StepFunction = std::function<c10::IValue(const std::vector<c10::IValue>& args)>;

struct TraceOptions {
  /// Calls of the traced program check module FQNs and argument structure.
  bool validate = true;
  /// Record the backward formulas make_fx records (functional, no data decisions; see
  /// docs/tracer-conformance.md). Off only to show that the conformance checks catch a
  /// tracer that records LibTorch's plain CPU formulas (suites/conformance).
  bool make_fx_backward_formulas = true;
  /// Record an in-place update of a temporary nothing else can observe (a value a traced
  /// operation produced, its storage held by no other tensor) as the functional operator
  /// (`mean.add_(eps)` inside rms_norm becomes `aten::add.Scalar`), as functionalization
  /// does for the joint graphs AOTAutograd hands to passes. In-place updates of inputs
  /// (buffers) stay in place. Off only to show what the passes would meet otherwise.
  bool functionalize_temporaries = true;
  /// Trace repeated transformer layers once: after the flat trace, each layer's forward
  /// and backward runs become calls of shared subgraphs (ir::outline_repeated_layers).
  bool deduplicate_layers = false;
};

/// Traces `fn(example_args)`. Module parameters then buffers (by FQN) become the first
/// graph inputs, then the tensor leaves of the arguments. Works with real tensors and
/// with meta tensors (no computation). Only one trace runs at a time per process.
TracedProgram trace_step(std::vector<StateModule> modules, const StepFunction& fn,
                         const std::vector<c10::IValue>& example_args, const TraceOptions& options = {});

/// What the first trace of a process does once (registers the Meta stand-in kernels
/// with the dispatcher; no tensor operation runs), done now: a process that forks
/// tracing workers (a fuzz campaign) pays it once instead of once per worker.
void prepare_tracing();

}  // namespace passcheck::trace
