// Executor implementation: a plan per node (operator handle, argument converters,
// output slots, values to release afterwards), then a tight loop of boxed calls.
#include "framework/exec/executor.h"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include "framework/exec/op_properties.h"

#include "framework/exec/arg_check.h"
#include "framework/exec/passcheck_ops.h"
#include "framework/exec/schema_args.h"
#include "framework/ir/subgraph.h"
#include "framework/ir/text.h"

#include <ATen/core/grad_mode.h>

#include <chrono>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

namespace passcheck::exec {

std::string describe_node(const ir::Node& node) {
  std::string out = "node `" + ir::print_node(node) + "`";
  std::string where = source_location(node);
  if (!where.empty()) out += " (" + where + ")";
  return out;
}

namespace {

// A device argument this machine does not have ("cuda:7" on a one-GPU machine, any CUDA
// device without one): named here rather than by the CUDA runtime's error mid-run.
std::string missing_device(const ir::Arg& arg) {
  if (arg.kind == ir::Arg::Kind::List) {
    for (const ir::Arg& item : arg.list()) {
      std::string missing = missing_device(item);
      if (!missing.empty()) return missing;
    }
    return "";
  }
  if (arg.kind != ir::Arg::Kind::Device || !arg.device.is_cuda()) return "";
  const int count = at::hasCUDA() ? at::detail::getCUDAHooks().deviceCount() : 0;
  if (count == 0) return "device " + arg.device.str() + ", but no CUDA device is available";
  if (arg.device.has_index() && arg.device.index() >= count)
    return "device " + arg.device.str() + ", but this machine has " + std::to_string(count) + " CUDA device(s)";
  return "";
}
// How one schema argument is produced at run time.
struct ArgPlan {
  enum class Source { Constant, Slot, Build } source = Source::Constant;
  c10::IValue constant;        // Source::Constant
  size_t slot = 0;             // Source::Slot
  const ir::Arg* arg = nullptr;  // Source::Build: a list holding values
  const c10::Argument* schema_arg = nullptr;
  const EnumDomain* domain = nullptr;  // Source::Slot: the enum an int value must name
};

// LibTorch reports arguments its boxed unpacking or a kernel's own invariants cannot
// take as internal assertion failures. Reaching one from a graph file means the file
// asked for something the operator does not accept, so it is reported as such.
std::string without_bug_report(const std::string& message) {
  const std::string assert_marker = " INTERNAL ASSERT FAILED at ";
  const std::string bug_marker = "please report a bug to PyTorch.";
  auto at = message.find(assert_marker);
  auto bug = message.find(bug_marker);
  if (at == std::string::npos && bug == std::string::npos) return message;
  std::string condition = at == std::string::npos ? "" : message.substr(0, at);
  std::string detail = bug == std::string::npos ? "" : message.substr(bug + bug_marker.size());
  while (!detail.empty() && (detail.front() == ' ' || detail.front() == '\n')) detail.erase(0, 1);
  while (!detail.empty() && (detail.back() == ' ' || detail.back() == '\n')) detail.pop_back();
  return "the operator does not accept these arguments (LibTorch's internal check `" + condition + "` failed" +
         (detail.empty() ? "" : ": " + detail) + ")";
}

// Declared bytes of a tensor value (0 for other values, values without a type and
// meta tensors, which take no memory).
int64_t declared_bytes(const ir::Value& v) {
  if (v.type() != ir::ValueType::Tensor || !v.meta() || v.meta()->device.is_meta()) return 0;
  const ir::TensorMeta& m = *v.meta();
  return storage_extent_bytes(m.sizes, m.strides, static_cast<int64_t>(c10::elementSize(m.dtype)));
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;)
    if (__builtin_mul_overflow(strides[d], std::max<int64_t>(sizes[d], 1), &strides[d - 1]))
      strides[d - 1] = std::numeric_limits<int64_t>::max();
  return strides;
}

[[noreturn]] void over_budget(const std::string& where, const std::string& what, int64_t bytes, int64_t budget) {
  throw ExecError(where + ": " + what + " " + format_bytes(bytes) + ", over the memory budget of " +
                  format_bytes(budget) + "; raise it with --memory-budget");
}
}  // namespace

struct Executor::NodePlan {
  const ir::Node* node = nullptr;
  c10::OperatorHandle op;
  std::vector<ArgPlan> args;
  std::vector<size_t> output_slots;
  bool returns_list = false;
  /// The output shape depends on tensor values: checked on every run, whatever the options.
  bool shape_guard = false;
  std::vector<size_t> release_after;  // slots whose last use is this node
  /// A passcheck::invoke_subgraph node: the executor of its body (shared by every call
  /// of the same subgraph from this graph), run in place of a kernel.
  std::shared_ptr<Executor> subgraph;
  explicit NodePlan(c10::OperatorHandle h) : op(std::move(h)) {}
};

Executor::~Executor() = default;

size_t Executor::num_nodes() const { return plans_.size(); }

Executor::Executor(const ir::Graph& graph, ExecutorOptions options) : graph_(graph), options_(options) {
  ensure_passcheck_ops_registered();
  // Nested executors are built (and run) one level per call depth: bounded before any is.
  if (graph.root() == &graph && graph.has_subgraphs()) {
    std::string nesting = ir::nesting_problem(graph);
    if (!nesting.empty()) throw ExecError(nesting);
  }
  auto& slot_of = slot_of_;
  size_t values = graph.inputs().size();
  for (const ir::Node* node : graph.nodes()) values += node->num_outputs();
  slot_of.reserve(values);
  plans_.reserve(graph.num_nodes());
  for (const ir::Value* in : graph.inputs()) slot_of[in] = num_slots_++;
  for (const ir::Node* node : graph.nodes())
    for (const ir::Value* out : node->outputs()) slot_of[out] = num_slots_++;

  std::vector<int64_t> last_use(num_slots_, -1);
  int64_t index = 0;
  std::map<const ir::Graph*, std::shared_ptr<Executor>> body_executors;
  for (const ir::Node* node : graph.nodes()) {
    auto handle = find_operator(node->op());
    if (!handle) {
      const std::string renamed = former_operator_message(node->op());
      throw ExecError((renamed.empty() ? "unknown operator '" + node->op() + "'" : renamed) + " in " +
                      describe_node(*node));
    }
    NodePlan plan(*handle);
    plan.node = node;
    if (ir::is_invoke_subgraph(*node)) {
      std::string problem = ir::call_problem(*node);
      if (!problem.empty()) throw ExecError(problem + " in " + describe_node(*node));
      const ir::Graph* body = ir::called_subgraph(*node);
      std::shared_ptr<Executor>& nested = body_executors[body];
      if (!nested) {
        // The body's memory is the caller's: one budget and one live-bytes account, kept
        // by the outermost executor (its allocation scope sees the body's allocations).
        ExecutorOptions body_options = options_;
        body_options.max_bytes = 0;
        body_options.track_live_bytes = false;
        nested = std::make_shared<Executor>(*body, body_options);
      }
      plan.subgraph = nested;
    }
    plan.shape_guard = has_data_dependent_output_shape(node->op_name());
    const c10::FunctionSchema& schema = plan.op.schema();
    const auto& schema_args = schema.arguments();
    std::vector<ArgumentProblem> problems = check_arguments(*node, schema);
    for (size_t i = 0; i < node->num_args() && problems.empty(); ++i) {
      std::string missing = missing_device(node->arg(i));
      if (!missing.empty()) problems.push_back({i, node->op() + " argument '" + schema_args[i].name() + "': " + missing});
    }
    if (!problems.empty()) {
      std::string message = located(*node, problems.front());
      if (problems.size() > 1) message += " (+" + std::to_string(problems.size() - 1) + " more)";
      throw ExecError(message);
    }
    for (size_t i = 0; i < schema_args.size(); ++i) {
      ArgPlan ap;
      ap.schema_arg = &schema_args[i];
      if (i >= node->num_args()) {
        ap.constant = *schema_args[i].default_value();
      } else {
        const ir::Arg& arg = node->arg(i);
        bool has_values = false;
        arg.for_each_value([&](ir::Value* v) {
          has_values = true;
          last_use[slot_of.at(v)] = index;
        });
        if (arg.is_value()) {
          ap.source = ArgPlan::Source::Slot;
          ap.slot = slot_of.at(arg.value);
          ap.domain = enum_domain(schema_args[i], node->op_name());
        } else if (has_values) {
          ap.source = ArgPlan::Source::Build;
          ap.arg = &arg;
        } else {
          try {
            ap.constant = to_ivalue(arg, schema_args[i], [](ir::Value*) -> const c10::IValue& {
              throw std::logic_error("constant argument references a value");
            });
          } catch (const std::exception& e) {
            throw ExecError(std::string(e.what()) + " in " + describe_node(*node));
          }
        }
      }
      plan.args.push_back(std::move(ap));
    }
    const auto& returns = schema.returns();
    plan.returns_list = returns.size() == 1 && returns[0].type()->kind() == c10::TypeKind::ListType;
    if (!plan.returns_list && returns.size() != node->num_outputs())
      throw ExecError(node->op() + " returns " + std::to_string(returns.size()) + " value(s) but the node defines " +
                      std::to_string(node->num_outputs()) + " in " + describe_node(*node));
    for (const ir::Value* out : node->outputs()) {
      plan.output_slots.push_back(slot_of.at(out));
      last_use[slot_of.at(out)] = index;  // unused outputs die right away
    }
    plans_.push_back(std::move(plan));
    ++index;
  }
  for (const ir::Value* out : graph.outputs()) {
    size_t s = slot_of.at(out);
    last_use[s] = std::numeric_limits<int64_t>::max();
    output_slots_.push_back(s);
  }
  for (size_t s = 0; s < num_slots_; ++s) {
    if (last_use[s] == std::numeric_limits<int64_t>::max()) continue;
    if (last_use[s] < 0) {
      if (s < graph.inputs().size()) unused_input_slots_.push_back(s);
      continue;
    }
    plans_[last_use[s]].release_after.push_back(s);
  }
  if (options_.max_bytes > 0) check_declared_memory(last_use);
}

// The budget as far as the file declares it. Types can understate what a node
// allocates; the allocation budget in run() catches those.
void Executor::check_declared_memory(const std::vector<int64_t>& last_use) const {
  const int64_t budget = options_.max_bytes;
  auto add = [](int64_t a, int64_t b) {
    int64_t sum = 0;
    return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<int64_t>::max() : sum;
  };
  int64_t live = 0;
  for (const ir::Value* in : graph_.inputs()) {
    const int64_t bytes = declared_bytes(*in);
    if (bytes > budget) throw ExecError(graph_.source_name + (graph_.source_name.empty() ? "" : ": ") + "graph input %" + in->name() + " : " + ir::print_type(*in) + " needs " +
                                        format_bytes(bytes) + ", over the memory budget of " + format_bytes(budget) +
                                        "; raise it with --memory-budget");
    live = add(live, bytes);
  }
  // Inputs stay counted throughout: the caller holds them.
  std::vector<int64_t> held(num_slots_, 0);
  for (const NodePlan& plan : plans_) {
    const ir::Node& node = *plan.node;
    // A view or an in-place result shares its input's storage; resize_ is the exception.
    const bool allocates = !aliases_input(node) || node.op_name() == "aten::resize_";
    // Where the node is, for a message: built only when one is thrown.
    auto at = [&node]() {
      std::string where = source_location(node);
      return where.empty() ? describe_node(node) : where;
    };
    for (size_t i = 0; i < node.num_outputs() && allocates; ++i) {
      const ir::Value& out = *node.output(i);
      const int64_t bytes = declared_bytes(out);
      if (bytes > budget) over_budget(at(), "%" + out.name() + " : " + ir::print_type(out) + " needs", bytes, budget);
      held[plan.output_slots[i]] = bytes;
      live = add(live, bytes);
    }
    const int64_t element_size =
        node.num_outputs() > 0 && node.output(0)->meta() ? c10::elementSize(node.output(0)->meta()->dtype) : 4;
    for (size_t i = 0; i < node.num_args() && allocates; ++i) {
      const ir::Arg& arg = node.arg(i);
      if (plan.args[i].schema_arg->name() != "size" || arg.kind != ir::Arg::Kind::List) continue;
      std::vector<int64_t> sizes;
      for (const ir::Arg& e : arg.list())
        if (e.kind == ir::Arg::Kind::Int) sizes.push_back(e.i);
      if (sizes.size() != arg.list().size()) continue;  // symbolic or runtime sizes
      bool negative = false;
      for (int64_t size : sizes) negative |= size < 0;
      if (negative) continue;  // LibTorch refuses negative sizes itself
      const int64_t bytes = storage_extent_bytes(sizes, row_major_strides(sizes), element_size);
      if (bytes > budget) {
        std::string arg_where = source_location(node, i);
        over_budget(arg_where.empty() ? at() : arg_where,
                    node.op() + " argument 'size' " + ir::format_int_list(sizes) + " asks for", bytes, budget);
      }
    }
    if (live > budget)
      over_budget(at(), "the values the graph holds up to " + node.op() + " (by their declared types) need", live,
                  budget);
    for (size_t s : plan.release_after) live -= held[s];  // zero for inputs
  }
}

void Executor::check_inputs(const std::vector<c10::IValue>& inputs) const {
  if (inputs.size() != graph_.inputs().size())
    throw ExecError("graph takes " + std::to_string(graph_.inputs().size()) + " inputs but " +
                    std::to_string(inputs.size()) + " were given");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value* in = graph_.inputs()[i];
    if (in->type() == ir::ValueType::Tensor && !inputs[i].isTensor())
      throw ExecError("input %" + in->name() + " expects a tensor but got " + inputs[i].tagKind());
    if (in->type() == ir::ValueType::Tensor && in->meta()) {
      const at::Tensor& t = inputs[i].toTensor();
      const ir::TensorMeta& m = *in->meta();
      if (t.sizes().vec() != m.sizes || t.scalar_type() != m.dtype)
        throw ExecError("input %" + in->name() + " expects " + ir::dtype_short_name(m.dtype) + ir::format_int_list(m.sizes) +
                        " but got " + ir::dtype_short_name(t.scalar_type()) + ir::format_int_list(t.sizes().vec()));
    }
  }
}

namespace {
// The stride of a dimension of size 1 never addresses anything: kernels pick it freely
// (a half batch of one row reaches bmm with another stride there than the full batch).
bool same_layout(const std::vector<int64_t>& actual, const std::vector<int64_t>& expected,
                 const std::vector<int64_t>& sizes) {
  if (actual.size() != expected.size()) return false;
  for (size_t d = 0; d < actual.size(); ++d)
    if (sizes[d] > 1 && actual[d] != expected[d]) return false;
  return true;
}

// Some view kernels (_reshape_alias) take sizes and strides unchecked: a view reaching
// past its storage would be read out of bounds by the next kernel.
void check_within_storage(const ir::Value& v, const at::Tensor& t) {
  if (!t.defined() || !t.has_storage() || t.layout() != c10::kStrided || t.device().is_meta()) return;
  const int64_t extent = storage_extent_bytes(t.sizes().vec(), t.strides().vec(), static_cast<int64_t>(t.element_size()));
  const int64_t offset = t.storage_offset() * static_cast<int64_t>(t.element_size());
  const int64_t available = static_cast<int64_t>(t.storage().nbytes());
  if (extent == 0 || (offset >= 0 && offset <= available && extent <= available - offset)) return;
  throw ExecError("output %" + v.name() + " (sizes " + ir::format_int_list(t.sizes().vec()) + ", strides " +
                  ir::format_int_list(t.strides().vec()) + ", offset " + std::to_string(t.storage_offset()) +
                  ") addresses " + format_bytes(extent) + " of a storage of " + format_bytes(available) +
                  "; the view's sizes and strides do not fit its input");
}

void check_output_meta(const ir::Value& v, const c10::IValue& iv) {
  if (v.type() != ir::ValueType::Tensor || !v.meta() || !iv.isTensor()) return;
  const at::Tensor& t = iv.toTensor();
  if (!t.defined()) return;
  const ir::TensorMeta& m = *v.meta();
  std::string problem;
  if (t.scalar_type() != m.dtype)
    problem = std::string("dtype ") + ir::dtype_short_name(t.scalar_type()) + " but the graph says " + ir::dtype_short_name(m.dtype);
  else if (t.sizes().vec() != m.sizes)
    problem = "sizes " + ir::format_int_list(t.sizes().vec()) + " but the graph says " + ir::format_int_list(m.sizes);
  else if (t.numel() > 1 && !same_layout(t.strides().vec(), m.strides, m.sizes))
    problem = "strides " + ir::format_int_list(t.strides().vec()) + " but the graph says " + ir::format_int_list(m.strides);
  if (!problem.empty()) throw ExecError("output %" + v.name() + " has " + problem);
}
// The guard a trace through a data-dependent shape records: the graph holds only for
// inputs that give the traced shape.
void check_data_dependent_shape(const ir::Node& node, const ir::Value& v, const c10::IValue& iv) {
  if (v.type() != ir::ValueType::Tensor || !v.meta() || !iv.isTensor() || !iv.toTensor().defined()) return;
  if (iv.toTensor().sizes().vec() == v.meta()->sizes) return;
  throw ExecError("data-dependent shape guard failed: " + node.op() + " gave %" + v.name() + " sizes " +
                  ir::format_int_list(iv.toTensor().sizes().vec()) + " but the graph was traced with " +
                  ir::format_int_list(v.meta()->sizes) +
                  "; its output shape depends on tensor values, so this graph holds only for inputs that give "
                  "the traced shape");
}
}  // namespace

void Executor::run_node(const NodePlan& plan, std::vector<c10::IValue>& slots, LiveBytesTracker* tracker) {
  stack_.clear();
  for (const ArgPlan& ap : plan.args) {
    switch (ap.source) {
      case ArgPlan::Source::Constant: stack_.push_back(ap.constant); break;
      case ArgPlan::Source::Slot:
        if (ap.domain && slots[ap.slot].isInt()) {
          std::string problem = enum_problem(*ap.domain, slots[ap.slot].toInt());
          if (!problem.empty()) throw ExecError(plan.node->op() + " argument '" + ap.schema_arg->name() + "': " + problem);
        }
        stack_.push_back(slots[ap.slot]);
        break;
      case ArgPlan::Source::Build:
        stack_.push_back(to_ivalue(*ap.arg, *ap.schema_arg,
                                   [&](ir::Value* v) -> const c10::IValue& { return slots[slot_of_.at(v)]; }));
        break;
    }
  }
  if (plan.subgraph) {
    // Same kernels, same order as the inlined body: bitwise the flat graph's results.
    std::vector<c10::IValue> operands;
    for (const c10::IValue& v : stack_.at(1).toListRef()) operands.push_back(v);
    std::vector<c10::IValue> results = plan.subgraph->run(std::move(operands));
    stats_.nodes_run += plan.subgraph->last_stats().nodes_run;
    stats_.kernel_seconds += plan.subgraph->last_stats().kernel_seconds;
    for (size_t i = 0; i < results.size(); ++i) slots[plan.output_slots[i]] = std::move(results[i]);
  } else if (options_.time_kernels) {
    auto start = std::chrono::steady_clock::now();
    plan.op.callBoxed(&stack_);
    stats_.kernel_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } else {
    plan.op.callBoxed(&stack_);
  }
  if (plan.subgraph) {
    // outputs already in their slots
  } else if (plan.returns_list) {
    auto list = stack_.at(0).toList();
    if (list.size() != plan.output_slots.size())
      throw ExecError(plan.node->op() + " returned " + std::to_string(list.size()) + " values but the node defines " +
                      std::to_string(plan.output_slots.size()));
    for (size_t i = 0; i < list.size(); ++i) slots[plan.output_slots[i]] = list.get(i);
  } else {
    for (size_t i = 0; i < plan.output_slots.size(); ++i) slots[plan.output_slots[i]] = std::move(stack_[i]);
  }
  for (size_t i = 0; i < plan.output_slots.size(); ++i) {
    const c10::IValue& out = slots[plan.output_slots[i]];
    if (out.isTensor()) check_within_storage(*plan.node->output(i), out.toTensor());
    if (options_.check_metadata) check_output_meta(*plan.node->output(i), out);
    else if (plan.shape_guard) check_data_dependent_shape(*plan.node, *plan.node->output(i), out);
    if (tracker && out.isTensor()) tracker->acquire(out.toTensor());
  }
}

std::vector<c10::IValue> Executor::run(std::vector<c10::IValue> inputs) {
  auto run_start = std::chrono::steady_clock::now();
  check_inputs(inputs);
  at::AutoGradMode grad_mode(!options_.no_grad);  // the graph already holds the backward
  stats_ = ExecutionStats{};
  std::vector<c10::IValue> slots(num_slots_);
  std::unique_ptr<LiveBytesTracker> tracker;
  if (options_.track_live_bytes) tracker = std::make_unique<LiveBytesTracker>();
  std::optional<AllocationBudgetScope> budget;
  if (options_.max_bytes > 0) budget.emplace(options_.max_bytes);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (tracker && inputs[i].isTensor()) tracker->acquire(inputs[i].toTensor());
    slots[i] = std::move(inputs[i]);
  }
  if (tracker) stats_.input_bytes = tracker->current();
  const size_t num_inputs = inputs.size();
  auto release = [&](size_t s) {
    // Input storages stay counted: the caller still holds them after the executor lets go.
    if (tracker && s >= num_inputs && slots[s].isTensor()) tracker->release(slots[s].toTensor());
    slots[s] = c10::IValue();
  };
  if (options_.free_after_last_use)
    for (size_t s : unused_input_slots_) release(s);
  for (const NodePlan& plan : plans_) {
    try {
      run_node(plan, slots, tracker.get());
    } catch (const ExecError& e) {
      throw ExecError(std::string(e.what()) + " in " + describe_node(*plan.node));
    } catch (const c10::Error& e) {
      throw ExecError(without_bug_report(e.what_without_backtrace()) + "\n  while running " + describe_node(*plan.node));
    } catch (const std::exception& e) {
      throw ExecError(without_bug_report(e.what()) + "\n  while running " + describe_node(*plan.node));
    }
    ++stats_.nodes_run;
    if (options_.free_after_last_use)
      for (size_t s : plan.release_after) release(s);
  }
  std::vector<c10::IValue> outputs;
  outputs.reserve(output_slots_.size());
  for (size_t s : output_slots_) outputs.push_back(slots[s]);
  if (tracker) {
    stats_.peak_live_bytes = tracker->peak();
    stats_.final_live_bytes = tracker->current();
  }
  if (options_.time_kernels)
    stats_.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  return outputs;
}

}  // namespace passcheck::exec
