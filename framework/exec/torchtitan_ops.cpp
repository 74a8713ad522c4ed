// Operators torchtitan registers from Python (torch.library.custom_op) that appear in the
// graphs its tracer produces, defined here with the same schema and the same kernel so
// passcheck runs those graphs without importing torchtitan:
//   torchtitan::deterministic_scatter_add(Tensor out, Tensor index, Tensor src) -> Tensor
//       out.scatter_add(0, index, src) under deterministic algorithms (the MoE combine of
//       torchtitan's deepseek_v3 and qwen3 models). Its backward is traced as gather and
//       identity, so no autograd kernel is needed here.
#include "framework/exec/passcheck_ops.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <torch/library.h>

namespace passcheck::exec {
namespace {

at::Tensor deterministic_scatter_add(const at::Tensor& out, const at::Tensor& index, const at::Tensor& src) {
  // torchtitan switches deterministic algorithms on around the call (errors, not
  // warnings) and restores the caller's setting; so does this kernel.
  at::Context& context = at::globalContext();
  const bool was_deterministic = context.deterministicAlgorithms();
  const bool was_warn_only = context.deterministicAlgorithmsWarnOnly();
  context.setDeterministicAlgorithms(true, false);
  struct Restore {
    at::Context& context;
    bool deterministic, warn_only;
    ~Restore() { context.setDeterministicAlgorithms(deterministic, warn_only); }
  } restore{context, was_deterministic, was_warn_only};
  return out.scatter_add(0, index, src);
}

at::Tensor deterministic_scatter_add_meta(const at::Tensor& out, const at::Tensor& /*index*/,
                                          const at::Tensor& /*src*/) {
  return at::empty_like(out);
}

}  // namespace

void ensure_torchtitan_ops_registered() {
  // Referencing this function keeps this object file (and its TORCH_LIBRARY blocks) in
  // every binary that links the executor.
}

}  // namespace passcheck::exec

TORCH_LIBRARY(torchtitan, m) {
  m.def("deterministic_scatter_add(Tensor out, Tensor index, Tensor src) -> Tensor");
}

TORCH_LIBRARY_IMPL(torchtitan, CPU, m) {
  m.impl("deterministic_scatter_add", &passcheck::exec::deterministic_scatter_add);
}

TORCH_LIBRARY_IMPL(torchtitan, CUDA, m) {
  m.impl("deterministic_scatter_add", &passcheck::exec::deterministic_scatter_add);
}

TORCH_LIBRARY_IMPL(torchtitan, Meta, m) {
  m.impl("deterministic_scatter_add", &passcheck::exec::deterministic_scatter_add_meta);
}
