// why_not_capturable() and its context: see capturable.h.
#include "passes/cudagraph/capturable.h"

#include "framework/exec/op_properties.h"
#include "framework/exec/schema_args.h"

#include <algorithm>
#include <functional>
#include <string_view>
#include <vector>

namespace passcheck::passes {

namespace {

bool is_tensor(const ir::Value* v) { return v->type() == ir::ValueType::Tensor && v->meta().has_value(); }

// Node::op_name() as a view into the node's operator (no string built).
std::string_view op_name_of(const ir::Node& node) {
  std::string_view op = node.op();
  return op.substr(0, op.find('.'));
}

// Calls fn on every tensor the node reads (operands) or writes (outputs), in that order,
// until it returns true; returns whether one did.
template <class Fn>
bool any_tensor_touched(const ir::Node& node, Fn&& fn) {
  for (size_t i = 0; i < node.num_operands(); ++i)
    if (const ir::Value* v = node.operand(i); is_tensor(v) && fn(v)) return true;
  for (const ir::Value* v : node.outputs())
    if (is_tensor(v) && fn(v)) return true;
  return false;
}

bool has_symbolic_size(const ir::Node& node) {
  if (any_tensor_touched(node, [](const ir::Value* v) { return v->meta()->is_symbolic(); })) return true;
  for (const ir::Arg& a : node.args())
    if (a.has_symbols()) return true;
  return false;
}

// The value of the schema argument `name` when the node spells it out.
const ir::Arg* named_arg(const ir::Node& node, const char* name) {
  auto op = exec::find_operator(node.op());
  if (!op) return nullptr;
  const auto& args = op->schema().arguments();
  for (size_t i = 0; i < args.size() && i < node.num_args(); ++i)
    if (args[i].name() == name) return &node.arg(i);
  return nullptr;
}

// A copy between the host and the capture device from memory that is not pinned.
bool is_unpinned_host_device_copy(const ir::Node& node, c10::Device capture) {
  const std::string_view name = op_name_of(node);
  const ir::Value* src = nullptr;
  const ir::Value* dst = nullptr;
  if (name == "aten::_to_copy" || name == "aten::to") {
    if (node.num_operands() >= 1) src = node.operand(0);
    if (node.num_outputs() >= 1) dst = node.output(0);
  } else if (name == "aten::copy_") {
    if (node.num_operands() >= 2) {
      dst = node.operand(0);
      src = node.operand(1);
    }
  } else {
    return false;
  }
  if (!src || !dst || !is_tensor(src) || !is_tensor(dst)) return false;
  const c10::Device from = src->meta()->device, to = dst->meta()->device;
  if (from.type() == to.type()) return false;
  const bool crosses = (from.is_cpu() && to.type() == capture.type()) || (to.is_cpu() && from.type() == capture.type());
  if (!crosses) return false;
  const ir::Arg* pin = named_arg(node, "pin_memory");
  return !(pin && pin->kind == ir::Arg::Kind::Bool && pin->b);
}

// `v` and every value it is a view of, back to graph inputs or to a node that does not
// alias its inputs (an aliasing node counts as aliasing each tensor operand).
void alias_chain(const ir::Value* v, std::unordered_set<const ir::Value*>& chain) {
  if (!chain.insert(v).second) return;
  const ir::Node* p = v->producer();
  if (!p || !exec::aliases_input(*p)) return;
  for (size_t i = 0; i < p->num_operands(); ++i)
    if (p->operand(i)->type() == ir::ValueType::Tensor) alias_chain(p->operand(i), chain);
}

bool writes_copied_value(const ir::Node& node, const CaptureContext& ctx) {
  if (ctx.copied.empty()) return false;
  std::vector<ir::Value*> written;
  if (auto w = exec::written_values(node)) written = *w;
  else written = node.operands();  // unknown operator: it may write anything it reads
  std::unordered_set<const ir::Value*> chain;
  for (const ir::Value* v : written)
    if (v->type() == ir::ValueType::Tensor) alias_chain(v, chain);
  for (const ir::Value* v : chain)
    if (ctx.copied.count(v)) return true;
  return false;
}

}  // namespace

c10::Device capture_device(const ir::Graph& graph, ir::CaptureSpec::Backend backend) {
  if (backend == ir::CaptureSpec::Backend::Cuda) return c10::Device(c10::DeviceType::CUDA);
  for (const ir::Value* in : graph.inputs())
    if (is_tensor(in)) return in->meta()->device;
  for (const ir::Node* n : graph.nodes())
    for (const ir::Value* v : n->outputs())
      if (is_tensor(v)) return v->meta()->device;
  return c10::Device(c10::DeviceType::CPU);
}

CaptureContext CaptureContext::of(const ir::Graph& graph, ir::CaptureSpec::Backend backend,
                                  std::unordered_set<const ir::Value*> copied) {
  CaptureContext ctx;
  ctx.device = capture_device(graph, backend);
  ctx.copied = std::move(copied);
  // A scalar read from a tensor taints every non-tensor value computed from it (the ops
  // that read device data only inside their kernel return tensors: nothing to taint).
  // A data-dependent shape flows into every tensor computed from it, except a 0-dim one
  // (a full reduction's result has one shape whatever it reduced). Both walk the graph
  // in order and read only their own set, so one walk does both.
  for (const ir::Node* n : graph.nodes()) {
    bool tainted = exec::reads_device_data_on_host(*n);
    bool dynamic = exec::has_data_dependent_output_shape(*n);
    for (size_t i = 0; i < n->num_operands() && !tainted && !ctx.data_dependent.empty(); ++i)
      tainted = ctx.data_dependent.count(n->operand(i)) > 0;
    for (size_t i = 0; i < n->num_operands() && !dynamic && !ctx.dynamic_shape.empty(); ++i)
      dynamic = ctx.dynamic_shape.count(n->operand(i)) > 0;
    if (tainted)
      for (const ir::Value* v : n->outputs())
        if (v->type() != ir::ValueType::Tensor) ctx.data_dependent.insert(v);
    if (dynamic)
      for (const ir::Value* v : n->outputs())
        if (v->type() == ir::ValueType::Tensor && !(v->meta() && !v->meta()->is_symbolic() && v->meta()->sizes.empty()))
          ctx.dynamic_shape.insert(v);
  }
  return ctx;
}

namespace {

// aten::_grouped_mm runs a device kernel only for bfloat16 operands (on sm_90 and later);
// every other dtype takes its fallback, which copies the offsets to the host to loop over
// the groups: a read of device data a captured graph would bake in.
bool grouped_mm_reads_offsets_on_host(const ir::Node& node) {
  if (op_name_of(node) != "aten::_grouped_mm") return false;
  for (size_t i = 0; i < std::min<size_t>(node.num_operands(), 2); ++i) {
    const ir::Value* v = node.operand(i);
    if (v->type() == ir::ValueType::Tensor && v->meta() && v->meta()->dtype != at::kBFloat16) return true;
  }
  return false;
}

}  // namespace

const char* why_not_capturable_but_copies(const ir::Node& node, const CaptureContext& ctx) {
  if (exec::reads_device_data_on_host(node)) return "data-dependent-scalar";
  if (!ctx.grouped_mm_always_capturable && grouped_mm_reads_offsets_on_host(node)) return "data-dependent-scalar";
  if (!ctx.data_dependent.empty())
    for (size_t i = 0; i < node.num_operands(); ++i)
      if (node.operand(i)->type() != ir::ValueType::Tensor && ctx.data_dependent.count(node.operand(i)))
        return "data-dependent-scalar";
  if (exec::has_data_dependent_output_shape(node)) return "data-dependent-shape";
  if (!ctx.dynamic_shape_consumers_capturable && !ctx.dynamic_shape.empty())
    for (size_t i = 0; i < node.num_operands(); ++i)
      if (ctx.dynamic_shape.count(node.operand(i))) return "data-dependent-shape";
  if (has_symbolic_size(node)) return "symbolic-size";
  if (is_unpinned_host_device_copy(node, ctx.device)) return "host-device-copy";
  bool touches_tensor = false;
  const bool on_capture_device = any_tensor_touched(node, [&](const ir::Value* v) {
    touches_tensor = true;
    return v->meta()->device.type() == ctx.device.type();
  });
  if (touches_tensor && !on_capture_device) return "host-only-op";
  return nullptr;
}

bool writes_copied_input(const ir::Node& node, const CaptureContext& ctx) { return writes_copied_value(node, ctx); }

const char* why_not_capturable(const ir::Node& node, const CaptureContext& ctx) {
  if (const char* why = why_not_capturable_but_copies(node, ctx)) return why;
  if (writes_copied_value(node, ctx)) return "mutates-copied-input";
  return nullptr;
}

bool has_fixed_address(const ir::Module& module, size_t p, size_t i) {
  const ir::ModulePart& part = module.parts[p];
  const auto& source = part.input_sources[i];
  if (!source) {
    const ir::InputRole role = part.graph->inputs()[i]->role();
    return role == ir::InputRole::Parameter || role == ir::InputRole::Buffer;
  }
  return module.parts.at(source->part).capture.has_value();
}

bool launches_work(const ir::Node& node) {
  if (exec::is_mutating(node) || exec::is_collective(node)) return true;
  if (exec::aliases_input(node)) return false;
  for (const ir::Value* v : node.outputs())
    if (v->type() == ir::ValueType::Tensor) return true;
  return false;
}

}  // namespace passcheck::passes
