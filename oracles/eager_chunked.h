// The eager-chunked oracle (specs/passes.md, "Chunking passes"): what graph chunking
// must reproduce. While an EagerChunkGuard is alive, each module call (trace::call_module)
// whose FQN matches one of the configured patterns runs as two chunks: its first input is
// split in two halves on `dim`, every other input with the same extent on `dim` (positions,
// masks) is split alongside, the original forward runs on chunk 0 and then on chunk 1 (so
// in-place buffer updates such as the MoE's tokens_per_expert.add_ run twice, in order),
// and each output is the concatenation of the two chunk outputs on `dim`. Splitting and
// concatenation go through autograd, so the parameter gradients of the two chunks
// accumulate as they would for any tensor used twice.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace passcheck::trace {
class ModuleInterceptorGuard;
}

namespace passcheck::oracles {

struct EagerChunkConfig {
  /// FQN patterns of the modules to chunk ("layers.*", "layers.*.moe").
  std::vector<std::string> module_patterns;
  /// Dimension to split (0 batch, 1 sequence for [batch, seq, ...] inputs).
  int64_t dim = 0;
};

/// Component-wise match of dotted names: '*' stands for exactly one component, so
/// "layers.*" matches "layers.3" but neither "layers" nor "layers.3.moe".
bool fqn_matches_pattern(const std::string& fqn, const std::string& pattern);

/// "layers.*.moe on dim 1".
std::string describe(const EagerChunkConfig& config);

struct EagerChunkStats {
  /// FQNs of the module calls that were split, in call order.
  std::vector<std::string> chunked_calls;
  int64_t intercepted_calls() const { return static_cast<int64_t>(chunked_calls.size()); }
};

/// Chunks the matching module calls made on this thread while alive. Errors
/// (std::invalid_argument) name the FQN: a first input whose extent on `dim` is odd or
/// below 2, a first input without `dim`, an output whose size on `dim` is not the chunk
/// extent (only concatenable outputs are supported). Nested matches chunk again inside
/// each chunk.
class EagerChunkGuard {
 public:
  explicit EagerChunkGuard(EagerChunkConfig config);
  ~EagerChunkGuard();
  EagerChunkGuard(const EagerChunkGuard&) = delete;
  EagerChunkGuard& operator=(const EagerChunkGuard&) = delete;

  EagerChunkStats stats() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::unique_ptr<trace::ModuleInterceptorGuard> interceptor_;
};

}  // namespace passcheck::oracles
