// Seeded input generation for graph files.
#include "framework/exec/inputs.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include "framework/ir/text.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <stdexcept>

namespace passcheck::exec {

namespace {
// Checked before anything is drawn: a declared f32[30000, 30000] is 3.6 GB.
void check_budget(const ir::Graph& graph, int64_t budget) {
  int64_t total = 0;
  for (const ir::Value* in : graph.inputs()) {
    if (in->type() != ir::ValueType::Tensor || !in->meta() || in->meta()->device.is_meta()) continue;
    const ir::TensorMeta& m = *in->meta();
    const int64_t bytes = storage_extent_bytes(m.sizes, m.strides, static_cast<int64_t>(c10::elementSize(m.dtype)));
    if (bytes > budget)
      throw std::invalid_argument("input %" + in->name() + " : " + ir::print_type(*in) + " needs " + format_bytes(bytes) +
                                  ", over the memory budget of " + format_bytes(budget) +
                                  "; raise it with --memory-budget");
    if (__builtin_add_overflow(total, bytes, &total) || total > budget)
      throw std::invalid_argument("the graph's inputs up to %" + in->name() + " need more than the memory budget of " +
                                  format_bytes(budget) + " together (raise it with --memory-budget)");
  }
}
}  // namespace

std::vector<c10::IValue> make_inputs(const ir::Graph& graph, const InputOptions& options) {
  if (options.max_bytes > 0) check_budget(graph, options.max_bytes);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  std::vector<c10::IValue> out;
  for (const ir::Value* in : graph.inputs()) {
    switch (in->type()) {
      case ir::ValueType::Int: out.emplace_back(int64_t{1}); continue;
      case ir::ValueType::Float: out.emplace_back(1.0); continue;
      case ir::ValueType::Bool: out.emplace_back(true); continue;
      case ir::ValueType::None: out.emplace_back(); continue;
      case ir::ValueType::Tensor: break;
    }
    if (!in->meta()) throw std::invalid_argument("input %" + in->name() + " has no tensor metadata to generate it from");
    const ir::TensorMeta& m = *in->meta();
    if (m.device.is_cuda() && !at::hasCUDA())
      throw std::invalid_argument("input %" + in->name() + " lives on " + m.device.str() + " but no CUDA device is available");
    if (m.device.is_cuda() && m.device.has_index() && m.device.index() >= at::detail::getCUDAHooks().deviceCount())
      throw std::invalid_argument("input %" + in->name() + " lives on " + m.device.str() + " but this machine has " +
                                  std::to_string(at::detail::getCUDAHooks().deviceCount()) + " CUDA device(s)");
    // Values are drawn on the CPU as a contiguous block, then laid out as the meta says.
    at::Tensor values;
    auto cpu = at::TensorOptions().device(at::kCPU);
    if (at::isFloatingType(m.dtype)) {
      values = at::randn(m.sizes, gen, cpu.dtype(at::kFloat)).mul_(options.float_scale).to(m.dtype);
    } else if (m.dtype == at::kBool) {
      values = at::randint(0, 2, m.sizes, gen, cpu.dtype(at::kLong)).to(at::kBool);
    } else {
      values = at::randint(0, options.int_high, m.sizes, gen, cpu.dtype(at::kLong)).to(m.dtype);
    }
    at::Tensor t = at::empty_strided(m.sizes, m.strides, at::TensorOptions().dtype(m.dtype).device(m.device));
    if (!m.device.is_meta()) t.copy_(values);
    out.emplace_back(t);
  }
  return out;
}

}  // namespace passcheck::exec
