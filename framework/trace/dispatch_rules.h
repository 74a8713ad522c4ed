// Dispatcher rules shared by the components that watch operators through a dispatcher
// mode: the tracer (TESTING_ONLY_GenericMode) and the eager checkpoint oracle
// (TESTING_ONLY_GenericWrapper). Both must split the same operators into primitives and
// decompositions, or the eager oracle would checkpoint a different operator stream than
// the one the graph passes see.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DispatchKeySet.h>

namespace passcheck::trace {

/// True when the kernel this call reaches is the CompositeImplicitAutograd one: the op
/// has such a kernel and none for the call's backend (nor an explicit composite one).
/// A mode that sees such a call redispatches it with the mode still on, so the
/// decomposition's primitives come back through the mode.
inline bool runs_composite_implicit_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet ks) {
  if (!op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd)) return false;
  // Some ops (silu_backward, ...) have both a CPU/CUDA kernel and a composite fallback
  // for other backends; those are primitives here.
  if (op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd)) return false;
  // Mode keys are not backends; removing them keeps the rule independent of which
  // modes are on.
  ks = ks.remove(c10::DispatchKey::TESTING_ONLY_GenericMode).remove(c10::DispatchKey::TESTING_ONLY_GenericWrapper);
  c10::DispatchKey backend = c10::highestPriorityBackendTypeId(ks);
  // Meta calls are judged as CPU calls, so tracing on meta records the same graph as
  // tracing on the CPU.
  if (backend == c10::DispatchKey::Meta) backend = c10::DispatchKey::CPU;
  return backend == c10::DispatchKey::Undefined || !op.hasKernelForDispatchKey(backend);
}

}  // namespace passcheck::trace
