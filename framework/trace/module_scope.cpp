// Thread-local module and phase stacks, the interceptor slot, and gradients().
#include "framework/trace/module_scope.h"

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/autograd.h>

#include <atomic>

namespace passcheck::trace {

namespace {
struct ScopeState {
  std::vector<std::string> fqns;
  std::vector<ir::Phase> phases;
  ModuleInterceptor interceptor;
  std::vector<std::map<std::string, std::string>> annotations;
};
thread_local ScopeState tls_scope;
std::atomic<int> g_gradient_depth{0};
const std::string kEmpty;
}  // namespace

ModuleScope::ModuleScope(std::string fqn, std::optional<ir::Phase> phase) : pushed_phase_(phase.has_value()) {
  tls_scope.fqns.push_back(std::move(fqn));
  if (phase) tls_scope.phases.push_back(*phase);
}

ModuleScope::~ModuleScope() {
  tls_scope.fqns.pop_back();
  if (pushed_phase_) tls_scope.phases.pop_back();
}

AnnotationScope::AnnotationScope(std::map<std::string, std::string> entries) {
  tls_scope.annotations.push_back(std::move(entries));
}

AnnotationScope::~AnnotationScope() { tls_scope.annotations.pop_back(); }

std::map<std::string, std::string> current_annotations() {
  std::map<std::string, std::string> merged;
  for (const auto& level : tls_scope.annotations)
    for (const auto& [k, v] : level) merged[k] = v;
  return merged;
}

const std::string& current_module_fqn() { return tls_scope.fqns.empty() ? kEmpty : tls_scope.fqns.back(); }

std::optional<ir::Phase> current_phase() {
  if (tls_scope.phases.empty()) return std::nullopt;
  return tls_scope.phases.back();
}

bool in_gradient_computation() { return g_gradient_depth.load() > 0; }

std::vector<at::Tensor> call_module(const std::string& fqn, const std::vector<at::Tensor>& inputs,
                                    const ModuleForward& forward) {
  if (tls_scope.interceptor) {
    // The interceptor runs without itself installed so nested modules see the original slot.
    ModuleInterceptor interceptor = std::move(tls_scope.interceptor);
    tls_scope.interceptor = nullptr;
    struct Restore {
      ModuleInterceptor& slot;
      ModuleInterceptor& value;
      ~Restore() { slot = std::move(value); }
    } restore{tls_scope.interceptor, interceptor};
    // Everything is captured by value: an interceptor may keep this closure and call it
    // after call_module returned (eager checkpointing recomputes a region in backward).
    ModuleForward nested = [fqn, forward, interceptor](const std::vector<at::Tensor>& in) {
      // Restore the interceptor for submodules called from inside this forward.
      ModuleInterceptorGuard inner(interceptor);
      ModuleScope scope(fqn);
      return forward(in);
    };
    return interceptor(fqn, inputs, nested);
  }
  ModuleScope scope(fqn);
  return forward(inputs);
}

at::Tensor call_module(const std::string& fqn, const at::Tensor& input,
                       const std::function<at::Tensor(const at::Tensor&)>& forward) {
  // `forward` is copied for the same reason as above.
  return call_module(fqn, std::vector<at::Tensor>{input},
                     [forward](const std::vector<at::Tensor>& in) { return std::vector<at::Tensor>{forward(in.at(0))}; })
      .at(0);
}

ModuleInterceptorGuard::ModuleInterceptorGuard(ModuleInterceptor interceptor)
    : previous_(std::move(tls_scope.interceptor)) {
  tls_scope.interceptor = std::move(interceptor);
}

ModuleInterceptorGuard::~ModuleInterceptorGuard() { tls_scope.interceptor = std::move(previous_); }

std::vector<at::Tensor> gradients(const std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& inputs) {
  // Counted only on a thread being traced (the tracer's mode key is on): the count is
  // process-wide because the autograd engine may run the backward on its own threads,
  // and threads training eagerly at the same time (the ranks of a simulated mesh) must
  // not make the tracer think its forward operators run inside a backward.
  struct Depth {
    bool counted = c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::TESTING_ONLY_GenericMode);
    Depth() {
      if (counted) ++g_gradient_depth;
    }
    ~Depth() {
      if (counted) --g_gradient_depth;
    }
  } depth;
  return torch::autograd::grad(outputs, inputs);
}

}  // namespace passcheck::trace
