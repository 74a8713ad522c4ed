// A traced training step: the joint graph plus what is needed to call it like the
// original function — the state FQNs it lifts from live modules, the structure of the
// arguments it was traced with, and the structure of its result.
#pragma once

#include "framework/exec/executor.h"
#include "framework/exec/module_executor.h"
#include "framework/ir/module.h"
#include "framework/ir/graph.h"

#include <ATen/core/ivalue.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace passcheck::trace {

/// Errors of tracing or of calling a traced program (bad leaves, changed modules, ...).
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A module whose parameters and buffers become graph inputs; their FQNs are
/// `prefix.name` (or just `name` when the prefix is empty).
struct StateModule {
  std::string prefix;
  std::shared_ptr<torch::nn::Module> module;
};

/// Structure of a nested value: tensors become numbered leaves, other leaves
/// (int, float, bool, string, None) are kept as constants.
struct TreeSpec {
  enum class Kind { Tensor, Constant, Tuple, List, Dict } kind = Kind::Constant;
  c10::IValue constant;                // Kind::Constant
  std::vector<TreeSpec> children;      // Tuple, List, Dict
  std::vector<c10::IValue> dict_keys;  // Dict
  size_t num_tensors() const;
  std::string str() const;
  bool operator==(const TreeSpec& o) const;
};

/// Splits `value` into its tensor leaves (appended to `tensors`) and its TreeSpec.
/// `path` names the value in errors ("args[1]"). Throws TraceError for leaf types
/// that cannot be lifted, telling the user to capture them in the function.
TreeSpec flatten(const c10::IValue& value, std::vector<at::Tensor>& tensors, const std::string& path);
/// Rebuilds a value of structure `spec` from its tensor leaves.
c10::IValue unflatten(const TreeSpec& spec, const std::vector<c10::IValue>& tensors);

/// Parameters then buffers of `modules`, with their FQNs.
struct ModuleState {
  std::vector<std::string> fqns;
  std::vector<at::Tensor> tensors;
  size_t num_parameters = 0;
};
ModuleState collect_state(const std::vector<StateModule>& modules);

class TracedProgram {
 public:
  TracedProgram(std::shared_ptr<ir::Graph> graph, std::vector<StateModule> modules, std::vector<std::string> state_fqns,
                size_t num_parameters, TreeSpec args_spec, TreeSpec result_spec, bool validate);

  const ir::Graph& graph() const { return *graph_; }
  /// The graph for passes to rewrite; the cached executor is rebuilt on the next call.
  ir::Graph& mutable_graph();
  /// Swaps in another graph of the same signature (same inputs, module state first,
  /// same outputs), e.g. the symbolized graph of the same step. Throws TraceError.
  void replace_graph(std::shared_ptr<ir::Graph> graph);
  std::shared_ptr<ir::Graph> shared_graph() const { return graph_; }
  /// Runs `module` instead of the graph from now on: the graph partitioned into forward
  /// and backward parts (passes/partition). Its inputs must be the graph's, in order, and
  /// its results as many as the graph's outputs; throws TraceError otherwise. The graph
  /// stays what graph() returns (the joint the module was made from).
  void run_as_module(ir::Module module);
  /// The module run_as_module installed, or null.
  const ir::Module* module() const { return module_ ? &*module_ : nullptr; }
  /// Statistics of the last module run (all zero unless a module runs).
  const exec::ModuleRunStats& last_module_stats() const { return last_module_stats_; }
  /// Number of graph inputs that are module state (parameters then buffers).
  size_t num_state_inputs() const { return state_fqns_.size(); }
  size_t num_parameters() const { return num_parameters_; }
  const std::vector<std::string>& state_fqns() const { return state_fqns_; }
  const TreeSpec& args_spec() const { return args_spec_; }
  const TreeSpec& result_spec() const { return result_spec_; }

  /// Runs the graph with the current state of the bound modules; returns the result
  /// with the structure the traced function returned.
  c10::IValue operator()(const std::vector<c10::IValue>& args);
  /// Binds other live modules (same FQNs), e.g. a real-device model after meta tracing.
  void bind(std::vector<StateModule> modules);
  void set_executor_options(exec::ExecutorOptions options);
  const exec::ExecutionStats& last_stats() const { return last_stats_; }
  /// Graph inputs for `args` with the bound modules' state (validated as a call would be).
  std::vector<c10::IValue> make_graph_inputs(const std::vector<c10::IValue>& args) const;

 private:
  std::shared_ptr<ir::Graph> graph_;
  std::vector<StateModule> modules_;
  std::vector<std::string> state_fqns_;
  size_t num_parameters_;
  TreeSpec args_spec_;
  TreeSpec result_spec_;
  bool validate_;
  exec::ExecutorOptions executor_options_;
  std::unique_ptr<exec::Executor> executor_;
  exec::ExecutionStats last_stats_;
  std::optional<ir::Module> module_;
  std::unique_ptr<exec::ModuleExecutor> module_executor_;
  exec::ModuleRunStats last_module_stats_;
};

}  // namespace passcheck::trace
