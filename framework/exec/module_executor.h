// Runs a Module (framework/ir/module.h): its parts in order, each through the graph
// Executor, a part's linked inputs taken from earlier parts' outputs, its other inputs
// from the module's inputs by name. An earlier part's output is held only until the last
// part that reads it has started (or to the end when it is a module result), so the
// live bytes between forward and backward are what the forward saved. A part with a
// CaptureSpec runs under the CUDA-graph wrapper (captured_graph.h); every wrapper of the
// module shares one CapturePool, torn down with the executor or by teardown().
#pragma once

#include "framework/exec/captured_graph.h"
#include "framework/exec/executor.h"
#include "framework/ir/module.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace passcheck::exec {

struct ModuleRunStats {
  /// Per part: the graph Executor's statistics.
  std::vector<ExecutionStats> parts;
  /// Peak live bytes over the whole run: a part's own peak plus what it does not hold
  /// itself but must stay alive for later parts or results (each storage once).
  int64_t peak_live_bytes = 0;
  /// Bytes the parts hand to later parts (Module::linked_bytes summed): for a
  /// forward/backward module, the saved activations.
  int64_t linked_bytes = 0;
  /// Per captured part, in part order: its name and what its wrapper did in this run.
  struct CapturedPart {
    std::string part;
    CaptureCall call;
  };
  std::vector<CapturedPart> captured;
  /// With captured parts: the shared pool's bytes and the argument buffers kept.
  int64_t pool_bytes = 0;
  int64_t unshared_pool_bytes = 0;
  int64_t kept_input_bytes = 0;
  /// Inputs copied into kept buffers in this run, over every captured part, and their bytes.
  int64_t copies() const;
  int64_t copy_bytes() const;
};

/// Plans every part once (operators resolved, arguments checked; ExecError on a bad one)
/// and runs the module on inputs given in Module::input_names order.
class ModuleExecutor {
 public:
  explicit ModuleExecutor(const ir::Module& module, ExecutorOptions options = {});
  ~ModuleExecutor();
  /// Returns the module's results, in Module::outputs order.
  std::vector<c10::IValue> run(std::vector<c10::IValue> inputs);
  const ModuleRunStats& last_stats() const { return stats_; }
  /// Tears the capture pool down (graphs, pool, stream); a warning when it already was,
  /// nullopt otherwise (also when no part is captured). The destructor does it too.
  std::optional<std::string> teardown();
  /// The shared pool, or null when no part is captured.
  const CapturePool* capture_pool() const { return pool_.get(); }

 private:
  const ir::Module& module_;
  ExecutorOptions options_;
  std::vector<std::unique_ptr<Executor>> executors_;
  std::shared_ptr<CapturePool> pool_;
  /// Per part: its wrapper, or null when it runs eagerly.
  std::vector<std::unique_ptr<CapturedGraph>> wrappers_;
  ModuleRunStats stats_;
};

}  // namespace passcheck::exec
