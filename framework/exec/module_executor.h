// Runs a Module (framework/ir/module.h): its parts in order, each through the graph
// Executor, a part's linked inputs taken from earlier parts' outputs, its other inputs
// from the module's inputs by name. An earlier part's output is held only until the last
// part that reads it has started (or to the end when it is a module result), so the
// live bytes between forward and backward are what the forward saved.
#pragma once

#include "framework/exec/executor.h"
#include "framework/ir/module.h"

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

 private:
  const ir::Module& module_;
  ExecutorOptions options_;
  std::vector<std::unique_ptr<Executor>> executors_;
  ModuleRunStats stats_;
};

}  // namespace passcheck::exec
