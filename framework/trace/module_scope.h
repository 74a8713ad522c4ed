// Module boundaries and phases for C++ models. Model code wraps each submodule call in
// call_module(fqn, ...) (or a ModuleScope) so the tracer can stamp recorded nodes with
// the module's FQN, and so an interceptor (the eager-chunked oracle) can take over the
// call. gradients() runs autograd with the backward phase marked.
#pragma once

#include "framework/ir/meta.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace passcheck::trace {

/// While alive, operators recorded on this thread carry `fqn` (and `phase` if given).
class ModuleScope {
 public:
  explicit ModuleScope(std::string fqn, std::optional<ir::Phase> phase = std::nullopt);
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  bool pushed_phase_;
};

/// While alive, operators recorded on this thread get these custom metadata entries
/// (inner scopes override outer ones key by key). Backward nodes inherit the entries of
/// their forward node, keeping any key they already have.
class AnnotationScope {
 public:
  explicit AnnotationScope(std::map<std::string, std::string> entries);
  ~AnnotationScope();
  AnnotationScope(const AnnotationScope&) = delete;
  AnnotationScope& operator=(const AnnotationScope&) = delete;
};

/// The custom entries of every active AnnotationScope on this thread, merged.
std::map<std::string, std::string> current_annotations();

/// FQN of the innermost active module scope on this thread ("" outside any).
const std::string& current_module_fqn();
/// Phase set by the innermost scope that set one, if any.
std::optional<ir::Phase> current_phase();
/// True while gradients() runs (on any thread).
bool in_gradient_computation();

using ModuleForward = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;
/// Replaces a module call: receives the FQN, the inputs and the original forward.
using ModuleInterceptor =
    std::function<std::vector<at::Tensor>(const std::string& fqn, const std::vector<at::Tensor>& inputs,
                                          const ModuleForward& forward)>;

/// Calls `forward(inputs)` inside a ModuleScope for `fqn`, unless an interceptor is
/// installed on this thread and claims the call. An interceptor may call `forward` again
/// after call_module returned (eager activation checkpointing recomputes a region during
/// backward), so `forward` must not capture by reference locals that die with the call.
std::vector<at::Tensor> call_module(const std::string& fqn, const std::vector<at::Tensor>& inputs,
                                    const ModuleForward& forward);
/// Single-tensor convenience form of call_module.
at::Tensor call_module(const std::string& fqn, const at::Tensor& input,
                       const std::function<at::Tensor(const at::Tensor&)>& forward);

/// Installs `interceptor` on this thread for the guard's lifetime. The interceptor
/// decides per FQN; it calls `forward` itself for the calls it does not transform.
class ModuleInterceptorGuard {
 public:
  explicit ModuleInterceptorGuard(ModuleInterceptor interceptor);
  ~ModuleInterceptorGuard();

 private:
  ModuleInterceptor previous_;
};

/// torch::autograd::grad(outputs, inputs) with the backward phase marked, so the
/// tracer tags the seed gradient and the engine's accumulations as backward nodes.
std::vector<at::Tensor> gradients(const std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& inputs);

}  // namespace passcheck::trace
