// Tracer implementation. A boxed fallback on DispatchKey::TESTING_ONLY_GenericMode
// (highest-priority mode key; switched on for the traced call with an
// IncludeDispatchKeyGuard, and carried by LibTorch into the autograd engine) sees
// every operator call. Composite-implicit operators are redispatched with the key
// still included, so their decomposition is recorded; primitives are run with the key
// excluded and recorded as one node. Tensors are mapped to graph values by TensorImpl,
// or, for autograd's saved-variable copies that share storage, by their view geometry.
#include "framework/trace/tracer.h"

#include "framework/ir/subgraph.h"

#include "framework/trace/subclass_like_backward.h"
#include "framework/exec/op_properties.h"
#include "framework/exec/schema_args.h"
#include "framework/ir/text.h"
#include "framework/trace/dispatch_rules.h"
#include "framework/trace/module_scope.h"

#include <ATen/ATen.h>
#include <ATen/SequenceNumber.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <ATen/core/stack.h>
#include <c10/core/WrapDimMinimal.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>
#include <torch/nn/module.h>

#include <atomic>
#include <limits>
#include <map>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace passcheck::trace {

namespace {

constexpr auto kTraceKey = c10::DispatchKey::TESTING_ONLY_GenericMode;

// Identity of a tensor view independent of its TensorImpl: autograd's saved variables
// unpack into fresh TensorImpls over the same storage and geometry.
struct ViewKey {
  const c10::StorageImpl* storage;
  int64_t offset;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  c10::ScalarType dtype;
  bool operator==(const ViewKey& o) const {
    return storage == o.storage && offset == o.offset && sizes == o.sizes && strides == o.strides && dtype == o.dtype;
  }
};
struct ViewKeyHash {
  size_t operator()(const ViewKey& k) const {
    size_t h = std::hash<const void*>()(k.storage) ^ (std::hash<int64_t>()(k.offset) << 1) ^ (size_t(k.dtype) << 7);
    for (int64_t s : k.sizes) h = h * 31 + std::hash<int64_t>()(s);
    for (int64_t s : k.strides) h = h * 17 + std::hash<int64_t>()(s);
    return h;
  }
};

ir::TensorMeta meta_of(const at::Tensor& t) {
  ir::TensorMeta m;
  m.sizes = t.sizes().vec();
  m.strides = t.strides().vec();
  m.dtype = t.scalar_type();
  m.device = t.device();
  return m;
}

std::string describe_tensor(const at::Tensor& t) {
  return std::string(ir::dtype_short_name(t.scalar_type())) + c10::str(t.sizes()) + " on " + t.device().str();
}

class Recorder {
 public:
  explicit Recorder(ir::Graph& graph)
      : graph_(graph),
        log_ops_(std::getenv("PASSCHECK_TRACE_LOG") != nullptr),
        seq_base_(static_cast<int64_t>(at::sequence_number::peek())),
        next_unaccounted_seq_(seq_base_) {}

  void bind(const at::Tensor& t, ir::Value* v) {
    if (!t.defined()) return;
    by_impl_[t.unsafeGetTensorImpl()] = {v, t};
    if (t.has_storage()) by_view_[view_key(t)] = v;
  }

  ir::Value* lookup_impl(const at::Tensor& t) const {
    auto it = by_impl_.find(t.unsafeGetTensorImpl());
    return it == by_impl_.end() ? nullptr : it->second.value;
  }

  ir::Value* lookup(const at::Tensor& t) const {
    auto it = by_impl_.find(t.unsafeGetTensorImpl());
    if (it != by_impl_.end()) return it->second.value;
    if (t.has_storage()) {
      auto vit = by_view_.find(view_key(t));
      if (vit != by_view_.end()) return vit->second;
    }
    return nullptr;
  }

  void record(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack);
  /// See TraceOptions::functionalize_temporaries.
  bool functionalize_temporaries = true;
  /// Storages of the graph inputs (parameters, buffers, arguments): an update that writes
  /// one (directly, through a view, or through an earlier in-place result) is the
  /// program's and is recorded as made.
  void add_input_storage(const at::Tensor& t) {
    if (t.has_storage()) input_storages_.insert(t.storage().unsafeGetStorageImpl());
  }
  void on_backward_function_enter(int64_t seq) { backward_seq_stack_.push_back(seq); last_backward_seq_ = seq; }
  void on_backward_function_exit() {
    if (!backward_seq_stack_.empty()) backward_seq_stack_.pop_back();
  }
  /// Copies forward annotations onto backward nodes (through sequence numbers).
  void propagate_backward_metadata();
  std::mutex& mutex() { return mutex_; }

 private:
  static ViewKey view_key(const at::Tensor& t) {
    return ViewKey{t.storage().unsafeGetStorageImpl(), t.storage_offset(), t.sizes().vec(), t.strides().vec(),
                   t.scalar_type()};
  }
  ir::Arg to_arg(const c10::IValue& iv, const c10::Argument& schema_arg, const std::string& op);
  ir::Value* value_for(const at::Tensor& t, const std::string& op, const std::string& arg_name);
  ir::Arg wrapped_number_constant(const at::Tensor& t, const std::string& op, const std::string& arg_name) const;
  /// Throws when `op` would bake one outcome of a decision on tensor data into the graph.
  void refuse_data_dependent(const std::string& op) const;
  void add_output(ir::Node* node, const c10::IValue& iv, const std::string& op);
  std::string recent_nodes() const;
  /// Metadata for a node recorded now: phase, module FQN and sequence number.
  ir::NodeMeta context_meta(int64_t seq_before, bool created_grad_fn) const;
  std::string functional_form(const c10::FunctionSchema& schema, const std::string& qualified,
                              const std::vector<ir::Arg>& args, const c10::IValue& self) const;

  struct Bound {
    ir::Value* value;
    at::Tensor keep_alive;  // a dead TensorImpl's address could be reused by a new tensor
  };
  ir::Graph& graph_;
  bool log_ops_;  // PASSCHECK_TRACE_LOG: print every recorded node to stderr
  // Autograd sequence numbers count per thread for the whole process; the graph stores
  // them relative to the trace start so equal programs print equal text.
  int64_t seq_base_;
  std::unordered_map<const c10::TensorImpl*, Bound> by_impl_;
  std::unordered_map<ViewKey, ir::Value*, ViewKeyHash> by_view_;
  std::vector<int64_t> backward_seq_stack_;
  int64_t last_backward_seq_ = -1;
  // Sequence numbers taken by autograd nodes that no recorded operator created: custom
  // autograd Functions (the forward of an identity Function records nothing; one that
  // calls operators records them under later numbers). Each gets the module context of
  // the first operator recorded after it, so its backward nodes find a module FQN.
  int64_t next_unaccounted_seq_;
  std::unordered_map<int64_t, ir::NodeMeta> unrecorded_forward_;
  std::unordered_set<const c10::StorageImpl*> input_storages_;
  std::mutex mutex_;
};

std::atomic<Recorder*> g_recorder{nullptr};
std::mutex g_trace_mutex;  // one trace at a time per process

ir::Value* Recorder::value_for(const at::Tensor& t, const std::string& op, const std::string& arg_name) {
  if (ir::Value* v = lookup(t)) return v;
  if (t.dim() == 0 && t.device().is_cpu() && !at::isComplexType(t.scalar_type())) {
    // A scalar LibTorch built outside the dispatcher (a wrapped number): recreate it.
    ir::Arg value;
    {
      c10::impl::ExcludeDispatchKeyGuard exclude(kTraceKey);
      if (at::isFloatingType(t.scalar_type())) value = ir::Arg::real(t.item<double>());
      else if (t.scalar_type() == at::kBool) value = ir::Arg::boolean(t.item<bool>());
      else value = ir::Arg::integer(t.item<int64_t>());
    }
    ir::Node* node = graph_.create("aten::scalar_tensor", {value, ir::Arg::dtype(t.scalar_type()), ir::Arg::none(),
                                                           ir::Arg::dev(t.device()), ir::Arg::none()});
    node->mutable_meta() = context_meta(/*seq_before=*/-1, /*created_grad_fn=*/false);
    ir::Value* v = node->add_output(ir::ValueType::Tensor, meta_of(t));
    bind(t, v);
    return v;
  }
  throw TraceError("argument '" + arg_name + "' of " + op + " is a tensor the tracer has not seen (" + describe_tensor(t) +
                   "): every tensor a step uses must be a module parameter or buffer, a step argument, or the result "
                   "of a traced operation. Register constant tensors as module buffers." + recent_nodes());
}

// A Python number or C++ scalar operand (`x * 0.5`) reaches a Tensor slot as a "wrapped
// number": a 0-dim tensor that type promotion treats as a scalar (float32 * 0.5 stays
// float32). Recording it as a constant keeps that meaning, as make_fx does; the executor
// wraps the constant again (exec/schema_args.h).
ir::Arg Recorder::wrapped_number_constant(const at::Tensor& t, const std::string& op, const std::string& arg_name) const {
  c10::impl::ExcludeDispatchKeyGuard exclude(kTraceKey);
  switch (t.scalar_type()) {
    case at::kDouble: return ir::Arg::real(t.item<double>());
    case at::kLong: return ir::Arg::integer(t.item<int64_t>());
    case at::kBool: return ir::Arg::boolean(t.item<bool>());
    default:
      throw TraceError("argument '" + arg_name + "' of " + op + " is a wrapped " +
                       ir::dtype_short_name(t.scalar_type()) + " number, which graphs cannot hold as a constant");
  }
}

// Operators whose result is a decision on tensor data: the tracer sees one outcome, and
// the graph would silently replay it for inputs that take the other branch.
void Recorder::refuse_data_dependent(const std::string& op) const {
  if (op != "aten::_local_scalar_dense" && op != "aten::is_nonzero" && op != "aten::equal") return;
  std::string where = !backward_seq_stack_.empty() || in_gradient_computation()
                          ? "in the backward (a gradient formula branches on data)"
                          : (current_module_fqn().empty() ? std::string("in the step function")
                                                          : "in module '" + current_module_fqn() + "'");
  throw TraceError("data-dependent decision while tracing: " + op + " (a tensor read as a C++ value, e.g. " +
                   "Tensor::item) was called " + where +
                   "; the graph would record only the branch taken for the example inputs and be wrong for "
                   "others. Express the decision with tensor operations (where, masks) or take it outside the "
                   "traced step." + recent_nodes());
}

std::string Recorder::recent_nodes() const {
  std::vector<const ir::Node*> tail;
  for (const ir::Node* n = graph_.last_node(); n && tail.size() < 3; n = n->prev()) tail.push_back(n);
  if (tail.empty()) return "";
  std::string out = "\n  last recorded nodes:";
  for (auto it = tail.rbegin(); it != tail.rend(); ++it) out += "\n    " + ir::print_node(**it);
  return out;
}

ir::Arg Recorder::to_arg(const c10::IValue& iv, const c10::Argument& schema_arg, const std::string& op) {
  using exec::SchemaArgKind;
  if (iv.isNone()) return ir::Arg::none();
  SchemaArgKind kind = exec::classify(schema_arg);
  auto unsupported = [&](const std::string& what) -> TraceError {
    return TraceError(op + " argument '" + schema_arg.name() + "' of type " + schema_arg.type()->str() + ": " + what);
  };
  switch (kind) {
    case SchemaArgKind::Tensor: {
      const at::Tensor& t = iv.toTensor();
      if (!t.defined()) return ir::Arg::none();
      if (t.unsafeGetTensorImpl()->is_wrapped_number()) return wrapped_number_constant(t, op, schema_arg.name());
      return ir::Arg::of(value_for(t, op, schema_arg.name()));
    }
    case SchemaArgKind::TensorList: {
      std::vector<ir::Arg> items;
      for (const at::Tensor& t : iv.toTensorVector()) items.push_back(ir::Arg::of(value_for(t, op, schema_arg.name())));
      return ir::Arg::of_list(std::move(items));
    }
    case SchemaArgKind::OptionalTensorList: {
      std::vector<ir::Arg> items;
      for (const c10::IValue& e : iv.toListRef()) {
        if (e.isNone() || !e.toTensor().defined()) items.push_back(ir::Arg::none());
        else items.push_back(ir::Arg::of(value_for(e.toTensor(), op, schema_arg.name())));
      }
      return ir::Arg::of_list(std::move(items));
    }
    case SchemaArgKind::Dtype: return ir::Arg::dtype(static_cast<c10::ScalarType>(iv.toInt()));
    case SchemaArgKind::Layout: return ir::Arg::layout(static_cast<c10::Layout>(iv.toInt()));
    case SchemaArgKind::MemoryFormat: return ir::Arg::memory_format(static_cast<c10::MemoryFormat>(iv.toInt()));
    case SchemaArgKind::Device: return ir::Arg::dev(iv.toDevice());
    case SchemaArgKind::IntList: return ir::Arg::int_list(iv.toIntVector());
    case SchemaArgKind::FloatList: {
      std::vector<ir::Arg> items;
      for (double d : iv.toDoubleVector()) items.push_back(ir::Arg::real(d));
      return ir::Arg::of_list(std::move(items));
    }
    case SchemaArgKind::BoolList: {
      std::vector<ir::Arg> items;
      for (bool b : iv.toBoolList()) items.push_back(ir::Arg::boolean(b));
      return ir::Arg::of_list(std::move(items));
    }
    case SchemaArgKind::Generator:
      throw unsupported("an explicit generator cannot be recorded; graphs replay the default generator");
    default: break;
  }
  if (iv.isBool()) return ir::Arg::boolean(iv.toBool());
  if (iv.isInt()) return ir::Arg::integer(iv.toInt());
  if (iv.isDouble()) return ir::Arg::real(iv.toDouble());
  if (iv.isString()) return ir::Arg::string(iv.toStringRef());
  throw unsupported("value of kind " + std::string(iv.tagKind()) + " cannot be recorded");
}

void Recorder::add_output(ir::Node* node, const c10::IValue& iv, const std::string& op) {
  if (iv.isTensor()) {
    const at::Tensor& t = iv.toTensor();
    if (!t.defined()) {
      node->add_output(ir::ValueType::None, std::nullopt);
      return;
    }
    bind(t, node->add_output(ir::ValueType::Tensor, meta_of(t)));
  } else if (iv.isTensorList()) {
    for (const at::Tensor& t : iv.toTensorVector()) bind(t, node->add_output(ir::ValueType::Tensor, meta_of(t)));
  } else if (iv.isInt()) {
    node->add_output(ir::ValueType::Int, std::nullopt);
  } else if (iv.isDouble()) {
    node->add_output(ir::ValueType::Float, std::nullopt);
  } else if (iv.isBool()) {
    node->add_output(ir::ValueType::Bool, std::nullopt);
  } else if (iv.isNone()) {
    node->add_output(ir::ValueType::None, std::nullopt);
  } else {
    throw TraceError(op + " returned a value of kind " + std::string(iv.tagKind()) + " that graphs cannot hold");
  }
}

void Recorder::record(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  std::string qualified = schema.name();
  if (!schema.overload_name().empty()) qualified += "." + schema.overload_name();
  const auto& schema_args = schema.arguments();
  size_t first = stack->size() - schema_args.size();
  refuse_data_dependent(qualified);

  std::vector<ir::Arg> args;
  args.reserve(schema_args.size());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < schema_args.size(); ++i) args.push_back(to_arg((*stack)[first + i], schema_args[i], qualified));
    if (functionalize_temporaries) qualified = functional_form(schema, qualified, args, (*stack)[first]);
  }

  int64_t seq_before = static_cast<int64_t>(at::sequence_number::peek());
  {
    c10::impl::ExcludeDispatchKeyGuard exclude(kTraceKey);
    op.redispatchBoxed(ks.remove(kTraceKey), stack);
  }
  bool created_grad_fn = static_cast<int64_t>(at::sequence_number::peek()) != seq_before;

  std::lock_guard<std::mutex> lock(mutex_);
  ir::Node* node = graph_.create(qualified, std::move(args));
  node->mutable_meta() = context_meta(seq_before, created_grad_fn);
  if (node->meta().phase != ir::Phase::Backward)
    for (int64_t seq = next_unaccounted_seq_; seq < seq_before; ++seq) {
      ir::NodeMeta& meta = unrecorded_forward_[seq - seq_base_];
      meta.module_fqn = node->meta().module_fqn;
      meta.custom = node->meta().custom;
    }
  next_unaccounted_seq_ = static_cast<int64_t>(at::sequence_number::peek());
  size_t num_returns = schema.returns().size();
  for (size_t i = stack->size() - num_returns; i < stack->size(); ++i) add_output(node, (*stack)[i], qualified);
  if (log_ops_) std::fprintf(stderr, "[trace] %s\n", ir::print_node(*node).c_str());
}

// The functional operator to record for an in-place update of a private temporary, or
// `qualified` unchanged. Private: argument 0 is written and returned, its value was made
// by a traced operation (not a graph input), and its storage belongs to that one tensor
// (no view or saved copy could see the update) and to no graph input (an update of a
// buffer through the result of an earlier in-place update, `mul_(a).add_(b)`, is the
// program's). The functional operator must exist with
// the same arguments (add_.Scalar -> add.Scalar).
std::string Recorder::functional_form(const c10::FunctionSchema& schema, const std::string& qualified,
                                      const std::vector<ir::Arg>& args, const c10::IValue& self) const {
  const auto& schema_args = schema.arguments();
  if (schema_args.empty() || schema.returns().size() != 1 || !schema_args[0].alias_info() ||
      !schema_args[0].alias_info()->isWrite() || !schema.returns()[0].alias_info())
    return qualified;
  if (!self.isTensor() || args.empty() || !args[0].is_value() || !args[0].value->producer()) return qualified;
  const at::Tensor& t = self.toTensor();
  if (!t.has_storage() || t.storage().use_count() != 1 || input_storages_.count(t.storage().unsafeGetStorageImpl()))
    return qualified;
  const std::string& name = schema.name();
  if (name.size() < 2 || name.back() != '_') return qualified;
  std::optional<c10::OperatorHandle> functional =
      c10::Dispatcher::singleton().findSchema({name.substr(0, name.size() - 1), schema.overload_name()});
  if (!functional) return qualified;
  const auto& functional_args = functional->schema().arguments();
  if (functional_args.size() != schema_args.size()) return qualified;
  for (size_t i = 0; i < schema_args.size(); ++i)
    if (functional_args[i].name() != schema_args[i].name() || functional_args[i].alias_info()) return qualified;
  return functional->schema().name() + (schema.overload_name().empty() ? "" : "." + schema.overload_name());
}

ir::NodeMeta Recorder::context_meta(int64_t seq_before, bool created_grad_fn) const {
  auto relative = [&](int64_t seq) { return seq >= seq_base_ ? seq - seq_base_ : int64_t{-1}; };
  ir::NodeMeta meta;
  if (!backward_seq_stack_.empty()) {
    meta.phase = ir::Phase::Backward;
    meta.seq_nr = relative(backward_seq_stack_.back());
  } else if (in_gradient_computation()) {
    // Engine work outside a backward function (seed gradient, gradient accumulation):
    // attributed to the backward function that ran last.
    meta.phase = ir::Phase::Backward;
    meta.seq_nr = last_backward_seq_ < 0 ? -1 : relative(last_backward_seq_);
  } else {
    meta.phase = current_phase().value_or(ir::Phase::Forward);
    meta.module_fqn = current_module_fqn();
    if (created_grad_fn) meta.seq_nr = relative(seq_before);
  }
  meta.custom = current_annotations();
  return meta;
}

void Recorder::propagate_backward_metadata() {
  std::unordered_map<int64_t, const ir::Node*> forward_by_seq;
  for (const ir::Node* n : graph_.nodes())
    if (n->meta().phase != ir::Phase::Backward && n->meta().seq_nr >= 0) forward_by_seq.emplace(n->meta().seq_nr, n);
  for (ir::Node* n : graph_.nodes()) {
    if (n->meta().phase != ir::Phase::Backward || n->meta().seq_nr < 0) continue;
    auto it = forward_by_seq.find(n->meta().seq_nr);
    const ir::NodeMeta* found = nullptr;
    if (it != forward_by_seq.end()) {
      found = &it->second->meta();
    } else {
      auto unrecorded = unrecorded_forward_.find(n->meta().seq_nr);
      if (unrecorded == unrecorded_forward_.end()) continue;
      found = &unrecorded->second;
    }
    const ir::NodeMeta& fwd = *found;
    if (n->meta().module_fqn.empty()) n->mutable_meta().module_fqn = fwd.module_fqn;
    for (const auto& [k, v] : fwd.custom) n->mutable_meta().custom.emplace(k, v);  // a node keeps its own keys
  }
}

// scaled_dot_product_attention picks its kernel from the device through a DispatchStub,
// not an operator, and on meta it always takes the math decomposition: a meta trace would
// record another graph than a CPU trace. On meta inputs the tracer takes the CPU choice
// instead (asked of LibTorch on small CPU proxies, exec/meta_kernels.cpp) and, when it is
// the CPU flash kernel, records what the composite records on the CPU: the boolean mask
// made additive, then _scaled_dot_product_flash_attention_for_cpu. The conformance suite
// compares meta and CPU traces of every model, so a LibTorch that changes this path is
// caught there. Returns false when the regular dispatch applies.
bool trace_meta_attention_as_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  static const c10::OperatorName sdpa{"aten::scaled_dot_product_attention", ""};
  if (op.operator_name() != sdpa) return false;
  const size_t n = op.schema().arguments().size();
  std::vector<c10::IValue> args(stack->end() - static_cast<std::ptrdiff_t>(n), stack->end());
  if (!args[0].isTensor() || !args[0].toTensor().is_meta()) return false;
  const at::Tensor q = args[0].toTensor(), k = args[1].toTensor(), v = args[2].toTensor();
  std::optional<at::Tensor> mask = args[3].isNone() ? std::nullopt : std::optional<at::Tensor>(args[3].toTensor());
  const double dropout = args[4].toDouble();
  const bool causal = args[5].toBool();
  const std::optional<double> scale = args[6].isNone() ? std::nullopt : std::optional<double>(args[6].toDouble());
  const bool gqa = n > 7 && args[7].toBool();
  constexpr int64_t kFlashAttention = 1;  // sdp::SDPBackend::flash_attention
  int64_t choice;
  {
    c10::impl::ExcludeDispatchKeyGuard not_recorded(kTraceKey);
    choice = at::_fused_sdp_choice(q, k, v, mask, dropout, causal, scale, gqa);
  }
  if (choice != kFlashAttention) return false;
  if (mask && mask->scalar_type() == at::kBool)  // LibTorch's convert_boolean_attn_mask
    mask = at::where(*mask, 0.0,
                     at::scalar_tensor(-std::numeric_limits<double>::infinity(),
                                       at::TensorOptions().dtype(q.scalar_type()).device(mask->device())));
  at::Tensor out = std::get<0>(at::_scaled_dot_product_flash_attention_for_cpu(q, k, v, dropout, causal, mask, scale));
  torch::jit::drop(*stack, n);
  torch::jit::push(*stack, out);
  return true;
}

void trace_fallback(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  Recorder* recorder = g_recorder.load();
  if (recorder == nullptr) {
    c10::impl::ExcludeDispatchKeyGuard exclude(kTraceKey);
    op.redispatchBoxed(ks.remove(kTraceKey), stack);
    return;
  }
  if (trace_meta_attention_as_cpu(op, stack)) return;
  if (runs_composite_implicit_kernel(op, ks)) {
    // Keep the mode on: the decomposition's primitives come back through this fallback.
    op.redispatchBoxed(ks.remove(kTraceKey), stack);
    return;
  }
  recorder->record(op, ks, stack);
}

// Meta tracing meets operators whose Meta kernel PyTorch registers from Python
// (torch/_meta_registrations.py), which a C++ process never loads. This kernel, registered
// for Meta on exactly those operators (register_meta_stand_ins below) and so reached only
// below autograd (their grad_fn is still recorded), runs the CPU kernel on zero-filled
// stand-ins and returns meta tensors of the same geometry. Outside a trace it reports the
// missing kernel as LibTorch would.
// The stand-in has the meta tensor's full geometry: a storage large enough for its
// offset and strides (a slice of a larger tensor reaches past its own numel).
at::Tensor cpu_stand_in(const at::Tensor& t) {
  if (!t.defined() || !t.is_meta()) return t;
  int64_t extent = t.storage_offset() + 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 0) return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kCPU));
    extent += (t.size(d) - 1) * t.stride(d);
  }
  return at::zeros({extent}, t.options().device(at::kCPU)).as_strided(t.sizes(), t.strides(), t.storage_offset());
}


c10::IValue to_cpu_stand_in(const c10::IValue& v) {
  if (v.isTensor()) return cpu_stand_in(v.toTensor());
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorVector()) out.push_back(cpu_stand_in(t));
    return out;
  }
  if (v.isList()) {
    bool has_tensors = false;
    for (const c10::IValue& e : v.toListRef()) has_tensors |= e.isTensor();
    if (has_tensors) {
      c10::List<c10::optional<at::Tensor>> out;
      for (const c10::IValue& e : v.toListRef())
        out.push_back(e.isTensor() ? c10::optional<at::Tensor>(cpu_stand_in(e.toTensor())) : c10::nullopt);
      return out;
    }
  }
  if (v.isDevice() && v.toDevice().is_meta()) return c10::IValue(c10::Device(c10::DeviceType::CPU));
  return v;
}

c10::IValue to_meta_result(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) return v;
    return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
  }
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorVector())
      out.push_back(at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta)));
    return out;
  }
  return v;
}

void meta_fallback(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  TORCH_CHECK_NOT_IMPLEMENTED(g_recorder.load() != nullptr, "Could not run '", schema.name(),
                              "' with arguments from the 'Meta' backend (no Meta kernel).");
  // Zero-filled stand-ins would give a shape that holds for zeros only.
  TORCH_CHECK_NOT_IMPLEMENTED(!exec::has_data_dependent_output_shape(schema.name()), "'", schema.name(),
                              "' has an output shape that depends on tensor values, which a meta trace cannot know; "
                              "trace on a real device instead.");
  const auto& schema_args = schema.arguments();
  size_t first = stack->size() - schema_args.size();
  std::vector<c10::IValue> meta_args(stack->begin() + first, stack->end());
  stack->resize(first);
  for (const c10::IValue& a : meta_args) stack->push_back(to_cpu_stand_in(a));
  {
    c10::impl::ExcludeDispatchKeyGuard exclude(kTraceKey);
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  }
  const auto& returns = schema.returns();
  size_t ret_first = stack->size() - returns.size();
  for (size_t i = 0; i < returns.size(); ++i) {
    c10::IValue& out = (*stack)[ret_first + i];
    const c10::AliasInfo* alias = returns[i].alias_info();
    bool aliased = false;
    if (alias) {
      // An in-place or out= result is the meta argument it aliases.
      for (size_t j = 0; j < schema_args.size() && !aliased; ++j) {
        const c10::AliasInfo* arg_alias = schema_args[j].alias_info();
        if (arg_alias && arg_alias->beforeSets() == alias->beforeSets()) {
          // An out= argument is resized by the kernel ({0} placeholders are common):
          // give the meta tensor the geometry the CPU kernel gave its stand-in.
          if (out.isTensor() && meta_args[j].isTensor()) {
            const at::Tensor& cpu = out.toTensor();
            at::Tensor meta = meta_args[j].toTensor();
            if (cpu.defined() && meta.defined() && cpu.sizes() != meta.sizes()) meta.resize_(cpu.sizes());
            if (cpu.defined() && meta.defined() && cpu.strides() != meta.strides())
              meta.as_strided_(cpu.sizes(), cpu.strides(), meta.storage_offset());
          }
          out = meta_args[j];
          aliased = true;
        }
      }
    }
    if (!aliased) out = to_meta_result(out);
  }
}

}  // namespace

}  // namespace passcheck::trace

TORCH_LIBRARY_IMPL(_, TESTING_ONLY_GenericMode, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&passcheck::trace::trace_fallback>());
}

namespace passcheck::trace {
namespace {

// Operators whose composite kernel serves Meta in name only: convolution picks its
// implementation from the device and has none for meta tensors (it ends in
// convolution_overrideable, which throws), so meta traces would lose the `convolution`
// and `convolution_backward` nodes CPU traces record.
constexpr const char* kCompositeWithoutMeta[] = {"aten::convolution", "aten::convolution_backward"};

// LibTorch owns the Meta backend fallback (it reports the missing kernel), so the
// stand-in kernel above is registered per operator instead: for every operator with a
// CPU kernel and none that would serve Meta (its own Meta kernel, or a composite one),
// and for kCompositeWithoutMeta. Done once, when the first trace starts; operators
// registered later (a library loaded afterwards) keep LibTorch's error.
void register_meta_stand_ins() {
  static std::once_flag once;
  std::call_once(once, [] {
    static auto* libraries = new std::vector<std::unique_ptr<torch::Library>>();
    std::map<std::string, torch::Library*> by_namespace;
    const c10::DispatchKeySet serves_meta{c10::DispatchKey::Meta, c10::DispatchKey::CompositeExplicitAutograd,
                                          c10::DispatchKey::CompositeExplicitAutogradNonFunctional,
                                          c10::DispatchKey::CompositeImplicitAutograd};
    c10::Dispatcher& dispatcher = c10::Dispatcher::singleton();
    for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
      std::optional<c10::OperatorHandle> op = dispatcher.findOp(name);
      if (!op) continue;
      bool forced = false;
      for (const char* composite : kCompositeWithoutMeta) forced |= name.name == composite;
      if (forced) {
        if (op->hasKernelForDispatchKey(c10::DispatchKey::Meta)) continue;
      } else {
        if (!op->hasKernelForDispatchKey(c10::DispatchKey::CPU)) continue;
        bool served = false;
        for (c10::DispatchKey k : serves_meta) served |= op->hasKernelForDispatchKey(k);
        if (served) continue;
      }
      const std::string& full = name.name;
      const size_t colons = full.find("::");
      if (colons == std::string::npos) continue;
      const std::string ns = full.substr(0, colons);
      torch::Library*& lib = by_namespace[ns];
      if (!lib) {
        libraries->push_back(std::make_unique<torch::Library>(torch::Library::IMPL, ns, c10::DispatchKey::Meta,
                                                              __FILE__, __LINE__));
        lib = libraries->back().get();
      }
      std::string op_name = full.substr(colons + 2);
      if (!name.overload_name.empty()) op_name += "." + name.overload_name;
      lib->impl(op_name.c_str(), torch::CppFunction::makeFromBoxedFunction<&meta_fallback>());
    }
  });
}

}  // namespace
}  // namespace passcheck::trace


namespace passcheck::trace {

void prepare_tracing() { register_meta_stand_ins(); }

TracedProgram trace_step(std::vector<StateModule> modules, const StepFunction& fn,
                         const std::vector<c10::IValue>& example_args, const TraceOptions& options) {
  std::lock_guard<std::mutex> one_trace(g_trace_mutex);
  register_meta_stand_ins();
  auto graph = std::make_shared<ir::Graph>();
  Recorder recorder(*graph);
  recorder.functionalize_temporaries = options.functionalize_temporaries;

  ModuleState state = collect_state(modules);
  for (size_t i = 0; i < state.tensors.size(); ++i) {
    const at::Tensor& t = state.tensors[i];
    ir::InputRole role = i < state.num_parameters ? ir::InputRole::Parameter : ir::InputRole::Buffer;
    ir::Value* input = graph->add_input(state.fqns[i], ir::ValueType::Tensor, meta_of(t), role);
    // The same tensor registered under a second FQN: every use stays with the first
    // FQN's input (the module cannot tell the two apart); the second input is unused.
    // A tied weight whose FQNs hold separate tensors over one storage gets its own uses.
    if (!recorder.lookup_impl(t)) recorder.bind(t, input);
    recorder.add_input_storage(t);
  }
  std::vector<at::Tensor> arg_tensors;
  TreeSpec args_spec = flatten(c10::IValue(c10::ivalue::Tuple::create(example_args)), arg_tensors, "args");
  for (size_t i = 0; i < arg_tensors.size(); ++i) {
    recorder.add_input_storage(arg_tensors[i]);
    recorder.bind(arg_tensors[i], graph->add_input("arg" + std::to_string(i), ir::ValueType::Tensor,
                                                   meta_of(arg_tensors[i]), ir::InputRole::Argument));
  }

  c10::IValue result;
  {
    auto backward_callback = at::addThreadLocalCallback(
        at::RecordFunctionCallback(
            [](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
              if (Recorder* r = g_recorder.load()) r->on_backward_function_enter(fn.seqNr());
              return nullptr;
            },
            [](const at::RecordFunction&, at::ObserverContext*) {
              if (Recorder* r = g_recorder.load()) r->on_backward_function_exit();
            })
            .scopes({at::RecordScope::BACKWARD_FUNCTION}));
    struct Cleanup {
      at::CallbackHandle handle;
      ~Cleanup() {
        g_recorder.store(nullptr);
        at::removeCallback(handle);
      }
    } cleanup{backward_callback};
    g_recorder.store(&recorder);
    at::AutoGradMode grad_on(true);  // the backward is recorded by running autograd
    // Backward formulas take the branch make_fx records (functional, no data decisions),
    // on every device alike (subclass_like_backward.h).
    std::optional<SubclassLikeBackwardGuard> subclass_like_backward;
    if (options.make_fx_backward_formulas) subclass_like_backward.emplace();
    c10::impl::IncludeDispatchKeyGuard trace_mode(kTraceKey);
    try {
      result = fn(example_args);
    } catch (const c10::Error& e) {
      throw TraceError(std::string("the step function failed while tracing: ") + e.what_without_backtrace());
    }
  }

  std::vector<at::Tensor> result_tensors;
  TreeSpec result_spec = flatten(result, result_tensors, "result");
  for (size_t i = 0; i < result_tensors.size(); ++i) {
    ir::Value* v = recorder.lookup(result_tensors[i]);
    if (!v)
      throw TraceError("result tensor " + std::to_string(i) + " (" + describe_tensor(result_tensors[i]) +
                       ") was not produced by a traced operation nor passed in");
    graph->add_output(v);
  }
  recorder.propagate_backward_metadata();
  // Outlined after the flat trace: the FQNs and sequence numbers that tell layers apart
  // are complete only once the backward metadata has been propagated.
  if (options.deduplicate_layers) ir::outline_repeated_layers(*graph);
  return TracedProgram(graph, std::move(modules), std::move(state.fqns), state.num_parameters, std::move(args_spec),
                       std::move(result_spec), options.validate);
}

}  // namespace passcheck::trace
