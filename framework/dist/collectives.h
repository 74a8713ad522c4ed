// C++ calls of PyTorch's functional collectives (_c10d_functional::*), the counterpart of
// torch.distributed._functional_collectives: model code calls these (the operators go
// through the dispatcher, so the tracer records them), then waits. Each call is a custom
// autograd Function with the formula PyTorch's own autograd wrappers
// (_c10d_functional_autograd) use, so forward and backward record the same operators a
// torch 2.x trace of SimpleFSDP or tensor parallelism holds.
//
// Autograd formulas:
//   all_gather_into_tensor  backward: reduce_scatter_tensor(grad, "sum") + wait
//   reduce_scatter_tensor   backward: all_gather_into_tensor(grad) + wait ("avg": / group size);
//                           product, min and max are not differentiable
//   all_reduce              backward: identity (the Megatron convention: the reduced value is
//                           replicated and its loss counted once; see copy_to_group below)
//   all_to_all_single       backward: all_to_all_single(grad) with the split sizes swapped + wait
//   wait_tensor             backward: identity
#pragma once

#include "framework/dist/communicator.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace passcheck::dist {

at::Tensor all_gather_into_tensor(const at::Tensor& input, int64_t group_size, const std::string& group_name);
at::Tensor reduce_scatter_tensor(const at::Tensor& input, const std::string& reduce_op, int64_t group_size,
                                 const std::string& group_name);
at::Tensor all_reduce(const at::Tensor& input, const std::string& reduce_op, const std::string& group_name);
/// Empty split lists mean equal splits of dim 0 over the group; the operator is called
/// with the sizes spelled out, as PyTorch's wrapper calls it.
at::Tensor all_to_all_single(const at::Tensor& input, const std::vector<int64_t>& output_split_sizes,
                             const std::vector<int64_t>& input_split_sizes, const std::string& group_name);
at::Tensor wait_tensor(const at::Tensor& tensor);

/// Size of `group_name` for the calling rank (its mesh resolves it).
int64_t group_size(const std::string& group_name);
/// The calling rank's index in `group_name`.
int64_t group_index(const std::string& group_name);

/// Megatron's "f" operator: identity in the forward, all_reduce(reduce_op) + wait of the
/// gradient in the backward. A replicated activation entering column-parallel
/// projections passes through it with "sum", so each rank's partial input gradient is
/// summed; a replicated parameter of ranks that train different batch slices passes
/// through it with "avg".
at::Tensor copy_to_group(const at::Tensor& input, const std::string& group_name, const std::string& reduce_op = "sum");

}  // namespace passcheck::dist
