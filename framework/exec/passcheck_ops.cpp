// Registration and kernels of the passcheck:: operators (see passcheck_ops.h), and the
// Meta kernels of PyTorch's functional collectives. The kernels are
// CompositeExplicitAutograd: they run on any device, and the tracer records them as
// primitives.
#include "framework/exec/passcheck_ops.h"

#include "framework/exec/grouped_mm.h"

#include <ATen/ATen.h>
#include <ATen/core/Generator.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/library.h>

#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>

namespace passcheck::exec {

namespace {

at::Generator default_generator(const c10::Device& device) {
  return device.is_cpu() || device.is_meta() ? at::detail::getDefaultCPUGenerator()
                                            : at::globalContext().defaultGenerator(device);
}

at::Tensor rng_state(c10::Device device) {
  at::Generator gen = default_generator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

at::Tensor swap_rng_state(const at::Tensor& state, c10::Device device) {
  at::Generator gen = default_generator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  at::Tensor previous = gen.get_state();
  gen.set_state(state);
  return previous;
}

void check_group_size(const char* op, int64_t group_size) {
  if (group_size < 1)
    throw std::invalid_argument(std::string("_c10d_functional::") + op + ": group_size " + std::to_string(group_size) +
                                " is not positive");
}

at::Tensor empty_meta_like(const at::Tensor& input, const std::vector<int64_t>& sizes) {
  return at::empty(sizes, input.options().device(c10::DeviceType::Meta));
}

// Shapes of the functional collectives on the meta device. PyTorch registers these from
// Python; without them a C++ meta trace would reach the collectives' CompositeExplicit-
// Autograd kernels, which call a process group. The kernels are boxed: the group argument
// is typed `str` in torch 2.11 and `Any` (a name or a group object) in 2.15, so an unboxed
// signature would fit only one of them; only its value's position matters here.
std::vector<int64_t> int_list(const c10::IValue& v) {
  std::vector<int64_t> out;
  for (const c10::IValue& e : v.toListRef()) out.push_back(e.isSymInt() ? e.toSymInt().expect_int() : e.toInt());
  return out;
}

// Pops the operator's arguments, pushes a meta tensor of `sizes(arguments)` shaped like
// the input (argument 0).
template <typename Sizes>
void collective_meta(const c10::OperatorHandle& op, torch::jit::Stack* stack, Sizes sizes) {
  const size_t n = op.schema().arguments().size();
  std::vector<c10::IValue> args(stack->end() - static_cast<std::ptrdiff_t>(n), stack->end());
  torch::jit::drop(*stack, n);
  const at::Tensor& input = args[0].toTensor();
  torch::jit::push(*stack, empty_meta_like(input, sizes(input, args)));
}

void all_gather_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  collective_meta(op, stack, [](const at::Tensor& in, const std::vector<c10::IValue>& a) {
    return all_gather_result_sizes(in.sizes().vec(), a[1].toInt());
  });
}
void reduce_scatter_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  collective_meta(op, stack, [](const at::Tensor& in, const std::vector<c10::IValue>& a) {
    return reduce_scatter_result_sizes(in.sizes().vec(), a[2].toInt());
  });
}
void all_reduce_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  collective_meta(op, stack, [](const at::Tensor& in, const std::vector<c10::IValue>&) { return in.sizes().vec(); });
}
void all_to_all_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  collective_meta(op, stack, [](const at::Tensor& in, const std::vector<c10::IValue>& a) {
    return all_to_all_result_sizes(in.sizes().vec(), int_list(a[1]), int_list(a[2]));
  });
}
at::Tensor wait_tensor_meta(const at::Tensor& t) { return t; }


}  // namespace

std::vector<int64_t> all_gather_result_sizes(std::vector<int64_t> sizes, int64_t group_size) {
  check_group_size("all_gather_into_tensor", group_size);
  if (sizes.empty())
    throw std::invalid_argument("_c10d_functional::all_gather_into_tensor: the input is a scalar (0-dim); it gathers along dim 0");
  sizes[0] *= group_size;
  return sizes;
}

std::vector<int64_t> reduce_scatter_result_sizes(std::vector<int64_t> sizes, int64_t group_size) {
  check_group_size("reduce_scatter_tensor", group_size);
  if (sizes.empty() || sizes[0] % group_size != 0)
    throw std::invalid_argument("_c10d_functional::reduce_scatter_tensor: dim 0 of the input (" +
                                (sizes.empty() ? std::string("a scalar") : std::to_string(sizes[0])) +
                                ") is not divisible by the group size " + std::to_string(group_size));
  sizes[0] /= group_size;
  return sizes;
}

std::vector<int64_t> all_to_all_result_sizes(std::vector<int64_t> sizes, const std::vector<int64_t>& output_splits,
                                             const std::vector<int64_t>& input_splits) {
  const char* op = "_c10d_functional::all_to_all_single: ";
  if (sizes.empty()) throw std::invalid_argument(std::string(op) + "the input is a scalar (0-dim); it splits dim 0");
  for (const auto* splits : {&output_splits, &input_splits})
    for (int64_t s : *splits)
      if (s < 0) throw std::invalid_argument(std::string(op) + "split size " + std::to_string(s) + " is negative");
  if (!input_splits.empty()) {
    int64_t total = std::accumulate(input_splits.begin(), input_splits.end(), int64_t{0});
    if (total != sizes[0])
      throw std::invalid_argument(std::string(op) + "input_split_sizes add up to " + std::to_string(total) +
                                  " but dim 0 of the input is " + std::to_string(sizes[0]));
  }
  if (!output_splits.empty() && !input_splits.empty() && output_splits.size() != input_splits.size())
    throw std::invalid_argument(std::string(op) + "output_split_sizes has " + std::to_string(output_splits.size()) +
                                " entries but input_split_sizes has " + std::to_string(input_splits.size()));
  if (!output_splits.empty()) sizes[0] = std::accumulate(output_splits.begin(), output_splits.end(), int64_t{0});
  return sizes;
}

// A call of a nested subgraph names a body only the executor holds (exec/executor.cpp
// runs it in place of this kernel); reaching the dispatcher means the caller bypassed it.
std::vector<at::Tensor> invoke_subgraph_outside_executor(c10::string_view name, at::TensorList) {
  TORCH_CHECK(false, "passcheck::invoke_subgraph(\"", std::string(name),
              "\") runs only inside the passcheck executor, which holds the subgraph");
}

std::string former_operator_message(const std::string& op) {
  static const char* const collectives[] = {"all_gather_into_tensor", "reduce_scatter_tensor", "all_reduce",
                                            "all_to_all_single", "wait_tensor"};
  std::string base = op.substr(0, op.find('.'));
  for (const char* name : collectives)
    if (base == std::string("passcheck::") + name)
      return "operator '" + op + "' is no longer passcheck's: collectives are PyTorch's functional collectives, " +
             "spelled _c10d_functional::" + name + " (same arguments; all_to_all_single takes explicit split sizes)";
  return {};
}

void ensure_passcheck_ops_registered() {
  // Referencing this function keeps this object file (and its TORCH_LIBRARY blocks)
  // in every binary that links the executor, and with it the grouped_mm kernels and the
  // Meta kernels of meta_kernels.cpp.
  ensure_grouped_mm_registered();
  ensure_meta_kernels_registered();
  ensure_torchtitan_ops_registered();
}

}  // namespace passcheck::exec

TORCH_LIBRARY(passcheck, m) {
  m.def("rng_state(Device device) -> Tensor");
  m.def("swap_rng_state(Tensor state, Device device) -> Tensor");
  // Kernels in grouped_mm.cpp.
  m.def("grouped_mm(Tensor input, Tensor weight, Tensor offsets) -> Tensor");
  m.def("grouped_mm_weight_grad(Tensor input, Tensor grad_output, Tensor offsets) -> Tensor");
  // A call of a nested subgraph (framework/ir/subgraph.h); the executor runs the body.
  m.def("invoke_subgraph(str name, Tensor[] operands) -> Tensor[]");
}

TORCH_LIBRARY_IMPL(_c10d_functional, Meta, m) {
  m.impl("all_gather_into_tensor", torch::CppFunction::makeFromBoxedFunction<&passcheck::exec::all_gather_meta>());
  m.impl("reduce_scatter_tensor", torch::CppFunction::makeFromBoxedFunction<&passcheck::exec::reduce_scatter_meta>());
  m.impl("all_reduce", torch::CppFunction::makeFromBoxedFunction<&passcheck::exec::all_reduce_meta>());
  m.impl("all_to_all_single", torch::CppFunction::makeFromBoxedFunction<&passcheck::exec::all_to_all_meta>());
  m.impl("wait_tensor", &passcheck::exec::wait_tensor_meta);
}

TORCH_LIBRARY_IMPL(passcheck, CompositeExplicitAutograd, m) {
  m.impl("rng_state", &passcheck::exec::rng_state);
  m.impl("swap_rng_state", &passcheck::exec::swap_rng_state);
  m.impl("invoke_subgraph", &passcheck::exec::invoke_subgraph_outside_executor);
}
