// Executor: runs a Graph through the ATen dispatcher (boxed calls), under no-grad,
// releasing each value right after its last use, optionally checking every output
// against its recorded TensorMeta and accounting the live bytes it holds.
#pragma once

#include "framework/exec/memory.h"
#include "framework/ir/graph.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace passcheck::exec {

/// A failure to prepare or run a graph; the message names the node and its line.
class ExecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ExecutorOptions {
  /// Track live bytes of the values held (peak reported in ExecutionStats).
  bool track_live_bytes = false;
  /// Compare each tensor output's sizes, strides and dtype with its Value meta.
  bool check_metadata = false;
  /// Release values after their last use (off only to measure what freeing saves).
  bool free_after_last_use = true;
  /// Time the operator calls, to separate kernel time from executor overhead.
  bool time_kernels = false;
  /// Run under no-grad (the graph already holds the backward). Off reproduces historical
  /// bug 4 — autograd history keeps every forward intermediate alive — and only the
  /// mutant suite turns it off.
  bool no_grad = true;
  /// Memory budget in bytes (0: none). Checked before anything runs: every declared
  /// output type, every `size` argument of an allocating operator, and the declared bytes
  /// live at any point (inputs included, views not counted twice) must fit. While the
  /// graph runs, a CPU allocation that would take the bytes allocated since run() began
  /// above it fails. Meta tensors take no memory and are not counted.
  int64_t max_bytes = kDefaultMemoryBudget;
};

struct ExecutionStats {
  int64_t nodes_run = 0;
  /// Bytes of input storages (state and arguments), counted once.
  int64_t input_bytes = 0;
  /// Peak and final bytes held, inputs included.
  int64_t peak_live_bytes = 0;
  int64_t final_live_bytes = 0;
  /// Peak bytes held beyond the input storages: the graph's own working memory.
  int64_t peak_bytes_above_inputs() const { return peak_live_bytes - input_bytes; }
  /// With time_kernels: wall time of run() and the part spent inside operator calls.
  double total_seconds = 0;
  double kernel_seconds = 0;
};

class Executor {
 public:
  /// Resolves every operator, checks every argument against its schema
  /// (exec/arg_check.h) and the memory budget, and plans value lifetimes; throws
  /// ExecError ("file:line:col: ...") for unknown operators, arguments the schema cannot
  /// take and declared memory over the budget.
  explicit Executor(const ir::Graph& graph, ExecutorOptions options = {});
  ~Executor();
  /// Runs the graph on `inputs` (one per graph input, in order); returns the outputs.
  std::vector<c10::IValue> run(std::vector<c10::IValue> inputs);
  const ExecutionStats& last_stats() const { return stats_; }
  size_t num_nodes() const;

 private:
  struct NodePlan;
  void check_inputs(const std::vector<c10::IValue>& inputs) const;
  void check_declared_memory(const std::vector<int64_t>& last_use) const;
  void run_node(const NodePlan& plan, std::vector<c10::IValue>& slots, LiveBytesTracker* tracker);

  const ir::Graph& graph_;
  ExecutorOptions options_;
  std::vector<NodePlan> plans_;
  std::vector<size_t> output_slots_;
  std::vector<size_t> unused_input_slots_;
  size_t num_slots_ = 0;
  ExecutionStats stats_;
  std::vector<c10::IValue> stack_;
  std::unordered_map<const ir::Value*, size_t> slot_of_;
};

/// One-line description of a node for error messages: its text and where it was parsed
/// from ("node `%y : f32[2] = aten::neg(%x)` (g.txt:2:17)").
std::string describe_node(const ir::Node& node);

}  // namespace passcheck::exec
