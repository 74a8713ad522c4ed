// Registration and kernels of the passcheck:: operators (see passcheck_ops.h). The
// kernels are CompositeExplicitAutograd: they run on any device, and the tracer records
// them as primitives.
#include "framework/exec/passcheck_ops.h"

#include <ATen/ATen.h>
#include <ATen/core/Generator.h>
#include <torch/library.h>

#include <mutex>

namespace passcheck::exec {

namespace {

at::Generator default_generator(const c10::Device& device) {
  return device.is_cpu() || device.is_meta() ? at::detail::getDefaultCPUGenerator()
                                            : at::globalContext().defaultGenerator(device);
}

at::Tensor rng_state(c10::Device device) {
  at::Generator gen = default_generator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

at::Tensor swap_rng_state(const at::Tensor& state, c10::Device device) {
  at::Generator gen = default_generator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  at::Tensor previous = gen.get_state();
  gen.set_state(state);
  return previous;
}

}  // namespace

void ensure_passcheck_ops_registered() {
  // Referencing this function keeps this object file (and its TORCH_LIBRARY blocks)
  // in every binary that links the executor.
}

}  // namespace passcheck::exec

TORCH_LIBRARY(passcheck, m) {
  m.def("rng_state(Device device) -> Tensor");
  m.def("swap_rng_state(Tensor state, Device device) -> Tensor");
}

TORCH_LIBRARY_IMPL(passcheck, CompositeExplicitAutograd, m) {
  m.impl("rng_state", &passcheck::exec::rng_state);
  m.impl("swap_rng_state", &passcheck::exec::swap_rng_state);
}
