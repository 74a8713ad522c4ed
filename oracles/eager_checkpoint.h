// Eager activation checkpointing for the C++ models: the "eager with the same AC" oracle
// that graph rematerialization is compared against (numerics and peak memory). While an
// EagerCheckpointGuard is alive, each module call that is a checkpoint region (by
// default "layers.N") runs its forward without keeping activations, inside a custom
// autograd function whose backward recomputes the region. Selective AC follows the same
// AcPolicy as the graph tagging pass: during the forward a dispatcher mode stores the
// outputs of the operators the policy saves, and the recomputation takes those stored
// outputs instead of running the operators again (what torch.utils.checkpoint's
// selective checkpoint contexts do). The generator state is restored around the
// recomputation so random operators reproduce the forward's values.
#pragma once

#include "framework/check/ac_policy.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace passcheck::check {
class Pipeline;
class PassRegistry;
}

namespace torch::nn {
class Module;
}

namespace passcheck::trace {
class ModuleInterceptorGuard;
}

namespace passcheck::oracles {

/// True for "layers.N" (each child of `layers` is one region, as in the graph passes).
bool is_layer_region(const std::string& fqn);

/// Parameters of the submodule of `root` named `fqn` (through named_modules()); throws
/// std::invalid_argument when there is no such submodule.
std::function<std::vector<at::Tensor>(const std::string& fqn)> module_parameters(
    std::shared_ptr<torch::nn::Module> root);

struct EagerCheckpointConfig {
  check::AcPolicyKind policy = check::AcPolicyKind::Default;
  /// Selectors of the full policy ("FQN_PATTERN::OP"); with none, full AC saves nothing
  /// but random operators.
  std::vector<check::OpSelector> selectors;
  /// Which module calls are checkpoint regions.
  std::function<bool(const std::string& fqn)> is_region = is_layer_region;
  /// The parameters a region reads. They become inputs of the checkpoint function, so a
  /// gradient computed with torch::autograd::grad(loss, params) reaches them; a region
  /// reading a tensor that requires grad and is neither an input nor one of these is an
  /// error. run_traced_vs_eager fills it from the subject's module tree when empty.
  std::function<std::vector<at::Tensor>(const std::string& fqn)> region_parameters;
  /// Restore the generator state around recomputation (torch.utils.checkpoint's
  /// preserve_rng_state). Turning it off exists to show that it matters.
  bool preserve_rng_state = true;
};

/// "policy default" / "policy full, 2 selectors" (+ ", generator state NOT restored").
std::string describe(const EagerCheckpointConfig& config);

/// What one checkpointed region call did.
struct RegionStats {
  std::string fqn;
  int64_t forward_ops = 0;                     ///< primitive operators the forward ran
  int64_t saved_ops = 0;                       ///< of which the outputs were stored (MUST_SAVE / PREFER_SAVE)
  int64_t saved_bytes = 0;                     ///< storage bytes the stored outputs keep alive
  std::map<std::string, int64_t> saved_by_op;  ///< operator base name -> stored count
  bool recomputed = false;                     ///< the backward recomputed the region
  int64_t replayed_ops = 0;                    ///< stored outputs handed back during the recomputation
  int64_t rerun_ops = 0;                       ///< operators run again during the recomputation
};

struct EagerCheckpointStats {
  std::vector<RegionStats> regions;  ///< in call order
  int64_t saved_ops() const;
  int64_t saved_bytes() const;
  int64_t replayed_ops() const;
  int64_t rerun_ops() const;
};

/// Checkpoints the region module calls (trace::call_module) made on this thread while
/// alive. Install one guard per training step: the policy's counters (the op policy's
/// global mm counter) start with the guard. Gradients may be computed after the guard
/// is gone.
class EagerCheckpointGuard {
 public:
  explicit EagerCheckpointGuard(EagerCheckpointConfig config);
  ~EagerCheckpointGuard();
  EagerCheckpointGuard(const EagerCheckpointGuard&) = delete;
  EagerCheckpointGuard& operator=(const EagerCheckpointGuard&) = delete;

  /// The regions checkpointed so far (recomputation counts fill in during backward).
  EagerCheckpointStats stats() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::unique_ptr<trace::ModuleInterceptorGuard> interceptor_;
};

/// The checkpointing the eager oracle applies for a run: "none", a policy name
/// (default, eager, full, op), or "auto": mirror the AC passes of `pipeline` (sac-tag's
/// policy and selectors, or apply-ac's mode; their options read with `registry`'s
/// declarations), none when it has neither.
std::optional<EagerCheckpointConfig> eager_checkpoint_for(const std::string& choice,
                                                          const std::optional<check::Pipeline>& pipeline,
                                                          const check::PassRegistry& registry);

}  // namespace passcheck::oracles
