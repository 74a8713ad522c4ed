// Calling a traced program: state lifted from live modules, argument and result
// structure (TreeSpec), validation, and execution through the Executor.
#include "framework/trace/traced_program.h"

#include <torch/nn/module.h>

#include <algorithm>
#include <sstream>

namespace passcheck::trace {

namespace {
// Strings quoted, so a spec reads unambiguously: ("tag", 3) vs (tag, 3).
std::string constant_text(const c10::IValue& v) {
  if (v.isString()) return "\"" + v.toStringRef() + "\"";
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

size_t TreeSpec::num_tensors() const {
  if (kind == Kind::Tensor) return 1;
  size_t n = 0;
  for (const TreeSpec& c : children) n += c.num_tensors();
  return n;
}

std::string TreeSpec::str() const {
  switch (kind) {
    case Kind::Tensor: return "Tensor";
    case Kind::Constant: return constant_text(constant);
    case Kind::Tuple:
    case Kind::List: {
      std::string out = kind == Kind::Tuple ? "(" : "[";
      for (size_t i = 0; i < children.size(); ++i) out += (i ? ", " : "") + children[i].str();
      return out + (kind == Kind::Tuple ? ")" : "]");
    }
    case Kind::Dict: {
      std::string out = "{";
      for (size_t i = 0; i < children.size(); ++i)
        out += (i ? ", " : "") + constant_text(dict_keys[i]) + ": " + children[i].str();
      return out + "}";
    }
  }
  return "?";
}

bool TreeSpec::operator==(const TreeSpec& o) const {
  if (kind != o.kind || children.size() != o.children.size() || dict_keys.size() != o.dict_keys.size()) return false;
  if (kind == Kind::Constant) {
    if (constant.tagKind() != o.constant.tagKind()) return false;
    if (!constant.isNone() && !(constant == o.constant)) return false;
  }
  for (size_t i = 0; i < dict_keys.size(); ++i)
    if (!(dict_keys[i] == o.dict_keys[i])) return false;
  for (size_t i = 0; i < children.size(); ++i)
    if (!(children[i] == o.children[i])) return false;
  return true;
}

TreeSpec flatten(const c10::IValue& value, std::vector<at::Tensor>& tensors, const std::string& path) {
  TreeSpec spec;
  if (value.isTensor()) {
    if (!value.toTensor().defined()) {
      spec.kind = TreeSpec::Kind::Constant;  // an undefined tensor behaves as None
      return spec;
    }
    spec.kind = TreeSpec::Kind::Tensor;
    tensors.push_back(value.toTensor());
    return spec;
  }
  if (value.isNone() || value.isInt() || value.isDouble() || value.isBool() || value.isString()) {
    spec.kind = TreeSpec::Kind::Constant;
    spec.constant = value;
    return spec;
  }
  if (value.isTuple()) {
    spec.kind = TreeSpec::Kind::Tuple;
    const auto& elems = value.toTupleRef().elements();
    for (size_t i = 0; i < elems.size(); ++i)
      spec.children.push_back(flatten(elems[i], tensors, path + "[" + std::to_string(i) + "]"));
    return spec;
  }
  if (value.isList()) {
    spec.kind = TreeSpec::Kind::List;
    auto list = value.toListRef();
    for (size_t i = 0; i < list.size(); ++i)
      spec.children.push_back(flatten(list[i], tensors, path + "[" + std::to_string(i) + "]"));
    return spec;
  }
  if (value.isGenericDict()) {
    spec.kind = TreeSpec::Kind::Dict;
    for (const auto& entry : value.toGenericDict()) {
      std::ostringstream key;
      key << entry.key();
      spec.dict_keys.push_back(entry.key());
      spec.children.push_back(flatten(entry.value(), tensors, path + "[" + key.str() + "]"));
    }
    return spec;
  }
  throw TraceError(path + " has type " + value.tagKind() +
                   ", which cannot become a graph input: leaves must be tensors, int, float, bool, string or None "
                   "(in tuples, lists or dicts). Capture this value inside the traced function instead of passing it.");
}

namespace {
c10::IValue unflatten_at(const TreeSpec& spec, const std::vector<c10::IValue>& tensors, size_t& next) {
  switch (spec.kind) {
    case TreeSpec::Kind::Tensor: return tensors.at(next++);
    case TreeSpec::Kind::Constant: return spec.constant;
    case TreeSpec::Kind::Tuple: {
      std::vector<c10::IValue> elems;
      for (const TreeSpec& c : spec.children) elems.push_back(unflatten_at(c, tensors, next));
      return c10::ivalue::Tuple::create(std::move(elems));
    }
    case TreeSpec::Kind::List: {
      bool all_tensors = true;
      for (const TreeSpec& c : spec.children) all_tensors &= c.kind == TreeSpec::Kind::Tensor;
      if (all_tensors) {
        c10::List<at::Tensor> list;
        for (const TreeSpec& c : spec.children) list.push_back(unflatten_at(c, tensors, next).toTensor());
        return list;
      }
      c10::impl::GenericList list(c10::AnyType::get());
      for (const TreeSpec& c : spec.children) list.push_back(unflatten_at(c, tensors, next));
      return list;
    }
    case TreeSpec::Kind::Dict: {
      c10::impl::GenericDict dict(c10::AnyType::get(), c10::AnyType::get());
      for (size_t i = 0; i < spec.children.size(); ++i)
        dict.insert(spec.dict_keys[i], unflatten_at(spec.children[i], tensors, next));
      return dict;
    }
  }
  return c10::IValue();
}
}  // namespace

c10::IValue unflatten(const TreeSpec& spec, const std::vector<c10::IValue>& tensors) {
  size_t next = 0;
  c10::IValue out = unflatten_at(spec, tensors, next);
  if (next != tensors.size())
    throw TraceError("result structure expects " + std::to_string(next) + " tensors but the graph returned " +
                     std::to_string(tensors.size()));
  return out;
}

ModuleState collect_state(const std::vector<StateModule>& modules) {
  ModuleState state;
  auto fqn = [](const std::string& prefix, const std::string& name) { return prefix.empty() ? name : prefix + "." + name; };
  for (const StateModule& m : modules) {
    if (!m.module) throw TraceError("module '" + m.prefix + "' is null");
    for (const auto& item : m.module->named_parameters(/*recurse=*/true)) {
      state.fqns.push_back(fqn(m.prefix, item.key()));
      state.tensors.push_back(item.value());
    }
  }
  state.num_parameters = state.tensors.size();
  for (const StateModule& m : modules)
    for (const auto& item : m.module->named_buffers(/*recurse=*/true)) {
      state.fqns.push_back(fqn(m.prefix, item.key()));
      state.tensors.push_back(item.value());
    }
  return state;
}

TracedProgram::TracedProgram(std::shared_ptr<ir::Graph> graph, std::vector<StateModule> modules,
                             std::vector<std::string> state_fqns, size_t num_parameters, TreeSpec args_spec,
                             TreeSpec result_spec, bool validate)
    : graph_(std::move(graph)),
      modules_(std::move(modules)),
      state_fqns_(std::move(state_fqns)),
      num_parameters_(num_parameters),
      args_spec_(std::move(args_spec)),
      result_spec_(std::move(result_spec)),
      validate_(validate) {}

ir::Graph& TracedProgram::mutable_graph() {
  executor_.reset();
  return *graph_;
}

void TracedProgram::replace_graph(std::shared_ptr<ir::Graph> graph) {
  const ir::Graph& old = *graph_;
  if (graph->inputs().size() != old.inputs().size() || graph->outputs().size() != old.outputs().size())
    throw TraceError("replacement graph has " + std::to_string(graph->inputs().size()) + " inputs and " +
                     std::to_string(graph->outputs().size()) + " outputs; the traced program has " +
                     std::to_string(old.inputs().size()) + " and " + std::to_string(old.outputs().size()));
  for (size_t i = 0; i < state_fqns_.size(); ++i)
    if (graph->inputs()[i]->name() != old.inputs()[i]->name())
      throw TraceError("replacement graph input " + std::to_string(i) + " is %" + graph->inputs()[i]->name() +
                       ", not the module state %" + old.inputs()[i]->name());
  graph_ = std::move(graph);
  executor_.reset();
}

void TracedProgram::bind(std::vector<StateModule> modules) { modules_ = std::move(modules); }

void TracedProgram::set_executor_options(exec::ExecutorOptions options) {
  executor_options_ = options;
  executor_.reset();
  module_executor_.reset();
}

namespace {
std::string list_difference(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::string out;
  for (const auto& x : a)
    if (std::find(b.begin(), b.end(), x) == b.end()) out += (out.empty() ? "" : ", ") + x;
  return out.empty() ? "(none)" : out;
}
std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}
}  // namespace

std::vector<c10::IValue> TracedProgram::make_graph_inputs(const std::vector<c10::IValue>& args) const {
  ModuleState state = collect_state(modules_);
  if (validate_ && state.fqns != state_fqns_)
    throw TraceError("the modules' state differs from trace time.\n  traced:  " + join(state_fqns_) +
                     "\n  now:     " + join(state.fqns) + "\n  missing: " + list_difference(state_fqns_, state.fqns) +
                     "\n  extra:   " + list_difference(state.fqns, state_fqns_));
  if (state.tensors.size() != state_fqns_.size())
    throw TraceError("the modules hold " + std::to_string(state.tensors.size()) + " state tensors but the graph takes " +
                     std::to_string(state_fqns_.size()));
  std::vector<at::Tensor> arg_tensors;
  TreeSpec spec = flatten(c10::IValue(c10::ivalue::Tuple::create(args)), arg_tensors, "args");
  if (validate_ && !(spec == args_spec_))
    throw TraceError("argument structure differs from trace time: traced with " + args_spec_.str() + ", called with " +
                     spec.str());
  if (arg_tensors.size() != args_spec_.num_tensors())
    throw TraceError("the graph takes " + std::to_string(args_spec_.num_tensors()) + " tensor arguments but " +
                     std::to_string(arg_tensors.size()) + " were given");
  std::vector<c10::IValue> inputs;
  inputs.reserve(state.tensors.size() + arg_tensors.size());
  for (auto& t : state.tensors) inputs.emplace_back(std::move(t));
  for (auto& t : arg_tensors) inputs.emplace_back(std::move(t));
  return inputs;
}

void TracedProgram::run_as_module(ir::Module module) {
  std::vector<std::string> names;
  for (const ir::Value* in : graph_->inputs()) names.push_back(in->name());
  if (module.input_names != names)
    throw TraceError("the module's inputs (" + join(module.input_names) + ") are not the graph's (" + join(names) + ")");
  if (module.outputs.size() != graph_->outputs().size())
    throw TraceError("the module returns " + std::to_string(module.outputs.size()) + " values but the graph " +
                     std::to_string(graph_->outputs().size()));
  module_executor_.reset();
  module_ = std::move(module);
}

c10::IValue TracedProgram::operator()(const std::vector<c10::IValue>& args) {
  std::vector<c10::IValue> inputs = make_graph_inputs(args);
  if (module_) {
    if (!module_executor_) module_executor_ = std::make_unique<exec::ModuleExecutor>(*module_, executor_options_);
    std::vector<c10::IValue> outputs = module_executor_->run(std::move(inputs));
    last_module_stats_ = module_executor_->last_stats();
    // The graph-level figures of a module run: its overall peak, nothing above inputs known.
    last_stats_ = exec::ExecutionStats{};
    last_stats_.peak_live_bytes = last_module_stats_.peak_live_bytes;
    if (!last_module_stats_.parts.empty()) last_stats_.input_bytes = last_module_stats_.parts.front().input_bytes;
    return unflatten(result_spec_, outputs);
  }
  if (!executor_) executor_ = std::make_unique<exec::Executor>(*graph_, executor_options_);
  std::vector<c10::IValue> outputs = executor_->run(std::move(inputs));
  last_stats_ = executor_->last_stats();
  return unflatten(result_spec_, outputs);
}

}  // namespace passcheck::trace

