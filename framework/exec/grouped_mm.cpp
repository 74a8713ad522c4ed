// Kernels of passcheck::grouped_mm and passcheck::grouped_mm_weight_grad (grouped_mm.h):
// argument validation that names the operator, the argument and the bad value (so bad
// graph text never reaches a LibTorch assert), the CPU/CUDA loop over the groups, the
// Meta kernels, the autograd formula, and the calls through the dispatcher. The schemas
// are defined with the other passcheck:: operators in passcheck_ops.cpp.
#include "framework/exec/grouped_mm.h"

#include "framework/exec/passcheck_ops.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace passcheck::exec {

namespace {

[[noreturn]] void fail(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string("passcheck::") + op + ": " + what);
}

std::string sizes_text(const at::Tensor& t) {
  std::string out = "[";
  for (int64_t i = 0; i < t.dim(); ++i) out += (i ? ", " : "") + std::to_string(t.size(i));
  return out + "]";
}

void check_offsets_tensor(const char* op, const at::Tensor& offsets) {
  if (offsets.dim() != 1) fail(op, "offsets must be 1-D, got sizes " + sizes_text(offsets));
  if (offsets.scalar_type() != at::kLong && offsets.scalar_type() != at::kInt)
    fail(op, std::string("offsets must be int64 or int32, got ") + c10::toString(offsets.scalar_type()));
}

void check_floating(const char* op, const char* arg, const at::Tensor& t) {
  if (!at::isFloatingType(t.scalar_type()))
    fail(op, std::string(arg) + " must be a floating tensor, got " + c10::toString(t.scalar_type()));
}

// Shapes, dtypes and devices of grouped_mm's arguments; the offsets' values are checked
// by group_ends, where the kernels read them.
void check_grouped_mm_args(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& offsets) {
  const char* op = "grouped_mm";
  if (input.dim() != 2) fail(op, "input must be 2-D [N, K], got sizes " + sizes_text(input));
  if (weight.dim() != 3) fail(op, "weight must be 3-D [G, K, M], got sizes " + sizes_text(weight));
  check_offsets_tensor(op, offsets);
  if (input.size(1) != weight.size(1))
    fail(op, "input " + sizes_text(input) + " has K = " + std::to_string(input.size(1)) + " but weight " +
                 sizes_text(weight) + " has K = " + std::to_string(weight.size(1)));
  if (offsets.size(0) != weight.size(0))
    fail(op, "offsets has " + std::to_string(offsets.size(0)) + " entries but weight " + sizes_text(weight) + " has " +
                 std::to_string(weight.size(0)) + " groups");
  check_floating(op, "input", input);
  if (weight.scalar_type() != input.scalar_type())
    fail(op, std::string("weight is ") + c10::toString(weight.scalar_type()) + " but input is " +
                 c10::toString(input.scalar_type()));
  if (weight.device() != input.device())
    fail(op, "weight is on " + weight.device().str() + " but input is on " + input.device().str());
}

void check_weight_grad_args(const at::Tensor& input, const at::Tensor& grad_output, const at::Tensor& offsets) {
  const char* op = "grouped_mm_weight_grad";
  if (input.dim() != 2) fail(op, "input must be 2-D [N, K], got sizes " + sizes_text(input));
  if (grad_output.dim() != 2) fail(op, "grad_output must be 2-D [N, M], got sizes " + sizes_text(grad_output));
  check_offsets_tensor(op, offsets);
  if (input.size(0) != grad_output.size(0))
    fail(op, "input " + sizes_text(input) + " has N = " + std::to_string(input.size(0)) + " rows but grad_output " +
                 sizes_text(grad_output) + " has " + std::to_string(grad_output.size(0)));
  check_floating(op, "input", input);
  if (grad_output.scalar_type() != input.scalar_type())
    fail(op, std::string("grad_output is ") + c10::toString(grad_output.scalar_type()) + " but input is " +
                 c10::toString(input.scalar_type()));
  if (grad_output.device() != input.device())
    fail(op, "grad_output is on " + grad_output.device().str() + " but input is on " + input.device().str());
}

// The end row of every group, read to the host. On a CUDA device this is a
// device-to-host copy the host waits for: a capturing CUDA stream refuses it, so the
// operators stay out of CUDA graphs (op_properties: reads_device_data_on_host).
std::vector<int64_t> group_ends(const char* op, const at::Tensor& offsets, int64_t rows) {
  at::Tensor host = offsets.to(at::kCPU).to(at::kLong).contiguous();
  const int64_t* data = host.data_ptr<int64_t>();
  std::vector<int64_t> ends(data, data + host.numel());
  int64_t previous = 0;
  for (size_t g = 0; g < ends.size(); ++g) {
    const std::string where = "offsets[" + std::to_string(g) + "] = " + std::to_string(ends[g]);
    if (ends[g] < 0) fail(op, where + " is negative");
    if (ends[g] < previous)
      fail(op, where + " is below offsets[" + std::to_string(g - 1) + "] = " + std::to_string(previous) +
                   " (offsets are cumulative row counts, non-decreasing)");
    if (ends[g] > rows) fail(op, where + " is past the " + std::to_string(rows) + " rows of the input");
    previous = ends[g];
  }
  return ends;
}

at::Tensor grouped_mm_kernel(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& offsets) {
  check_grouped_mm_args(input, weight, offsets);
  const std::vector<int64_t> ends = group_ends("grouped_mm", offsets, input.size(0));
  at::Tensor out = at::zeros({input.size(0), weight.size(2)}, input.options());
  int64_t start = 0;
  for (size_t g = 0; g < ends.size(); ++g) {
    const int64_t rows = ends[g] - start;
    if (rows > 0)
      out.narrow(0, start, rows).copy_(at::mm(input.narrow(0, start, rows), weight.select(0, static_cast<int64_t>(g))));
    start = ends[g];
  }
  return out;
}

at::Tensor grouped_mm_weight_grad_kernel(const at::Tensor& input, const at::Tensor& grad_output,
                                         const at::Tensor& offsets) {
  check_weight_grad_args(input, grad_output, offsets);
  const std::vector<int64_t> ends = group_ends("grouped_mm_weight_grad", offsets, input.size(0));
  at::Tensor out = at::zeros({offsets.size(0), input.size(1), grad_output.size(1)}, input.options());
  int64_t start = 0;
  for (size_t g = 0; g < ends.size(); ++g) {
    const int64_t rows = ends[g] - start;
    // The same product autograd forms for mm's second operand: rows^T @ grad_rows.
    if (rows > 0)
      out.select(0, static_cast<int64_t>(g))
          .copy_(at::mm(input.narrow(0, start, rows).t(), grad_output.narrow(0, start, rows)));
    start = ends[g];
  }
  return out;
}

at::Tensor grouped_mm_meta(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& offsets) {
  check_grouped_mm_args(input, weight, offsets);
  return at::empty({input.size(0), weight.size(2)}, input.options().device(c10::DeviceType::Meta));
}

at::Tensor grouped_mm_weight_grad_meta(const at::Tensor& input, const at::Tensor& grad_output,
                                       const at::Tensor& offsets) {
  check_weight_grad_args(input, grad_output, offsets);
  return at::empty({offsets.size(0), input.size(1), grad_output.size(1)},
                   input.options().device(c10::DeviceType::Meta));
}

// ---- autograd --------------------------------------------------------------------------

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class GroupedMmFunction : public torch::autograd::Function<GroupedMmFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& offsets) {
    ctx->save_for_backward({input, weight, offsets});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return grouped_mm(input, weight, offsets);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &input = saved[0], &weight = saved[1], &offsets = saved[2];
    const at::Tensor& grad = grads[0];
    // Through the dispatcher, so the tracer records both as backward nodes.
    at::Tensor grad_input =
        ctx->needs_input_grad(0) ? grouped_mm(grad, weight.transpose(-2, -1), offsets) : at::Tensor();
    at::Tensor grad_weight = ctx->needs_input_grad(1) ? grouped_mm_weight_grad(input, grad, offsets) : at::Tensor();
    return {grad_input, grad_weight, at::Tensor()};  // offsets are integers: no gradient
  }
};

// The weight gradient is not differentiated (no double backward through grouped_mm);
// it still needs an Autograd kernel, since LibTorch 1.13 has no fallthrough for the
// AutogradMeta key meta tracing goes through.
class GroupedMmWeightGradFunction : public torch::autograd::Function<GroupedMmWeightGradFunction> {
 public:
  static at::Tensor forward(AutogradContext*, const at::Tensor& input, const at::Tensor& grad_output,
                            const at::Tensor& offsets) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return grouped_mm_weight_grad(input, grad_output, offsets);
  }
  static variable_list backward(AutogradContext*, variable_list) {
    throw std::invalid_argument(
        "passcheck::grouped_mm_weight_grad has no gradient formula: grouped_mm has no double backward");
  }
};

at::Tensor grouped_mm_weight_grad_autograd(const at::Tensor& input, const at::Tensor& grad_output,
                                           const at::Tensor& offsets) {
  return GroupedMmWeightGradFunction::apply(input, grad_output, offsets);
}

at::Tensor grouped_mm_autograd(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& offsets) {
  return GroupedMmFunction::apply(input, weight, offsets);
}

c10::OperatorHandle op_handle(const char* name) {
  ensure_passcheck_ops_registered();
  auto handle = c10::Dispatcher::singleton().findSchema({std::string("passcheck::") + name, ""});
  if (!handle) throw std::logic_error(std::string("passcheck::") + name + " is not registered");
  return *handle;
}

}  // namespace

void ensure_grouped_mm_registered() {
  // Referencing this function keeps this object file (and its TORCH_LIBRARY_IMPL blocks)
  // in every binary that links the executor (see ensure_passcheck_ops_registered).
}

at::Tensor grouped_mm(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& offsets) {
  static const c10::OperatorHandle op = op_handle("grouped_mm");
  return op.typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>().call(input, weight, offsets);
}

at::Tensor grouped_mm_weight_grad(const at::Tensor& input, const at::Tensor& grad_output, const at::Tensor& offsets) {
  static const c10::OperatorHandle op = op_handle("grouped_mm_weight_grad");
  return op.typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>().call(input, grad_output,
                                                                                               offsets);
}

}  // namespace passcheck::exec

TORCH_LIBRARY_IMPL(passcheck, CPU, m) {
  m.impl("grouped_mm", &passcheck::exec::grouped_mm_kernel);
  m.impl("grouped_mm_weight_grad", &passcheck::exec::grouped_mm_weight_grad_kernel);
}

TORCH_LIBRARY_IMPL(passcheck, CUDA, m) {
  m.impl("grouped_mm", &passcheck::exec::grouped_mm_kernel);
  m.impl("grouped_mm_weight_grad", &passcheck::exec::grouped_mm_weight_grad_kernel);
}

TORCH_LIBRARY_IMPL(passcheck, Meta, m) {
  m.impl("grouped_mm", &passcheck::exec::grouped_mm_meta);
  m.impl("grouped_mm_weight_grad", &passcheck::exec::grouped_mm_weight_grad_meta);
}

TORCH_LIBRARY_IMPL(passcheck, Autograd, m) {
  m.impl("grouped_mm", &passcheck::exec::grouped_mm_autograd);
  m.impl("grouped_mm_weight_grad", &passcheck::exec::grouped_mm_weight_grad_autograd);
}
