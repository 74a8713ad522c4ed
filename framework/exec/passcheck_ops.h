// Operators passcheck itself defines (namespace "passcheck"), registered with the
// dispatcher so graphs can use them like any ATen operator:
//   passcheck::rng_state(Device device) -> Tensor
//       a copy of the device's default generator state (no randomness consumed)
//   passcheck::swap_rng_state(Tensor state, Device device) -> Tensor
//       installs `state` as the generator state and returns the state it replaced
// Rematerialization's RNG-replay mode brackets a recomputed random op with them, so the
// recomputation draws exactly the numbers the forward drew.
//
// Collectives are PyTorch's own functional collectives (_c10d_functional::
// all_gather_into_tensor, reduce_scatter_tensor, all_reduce, all_to_all_single,
// wait_tensor), defined by LibTorch. Their Meta kernels (shapes only, so meta tracing and
// the schema checks work in every binary) are registered here; their CPU and CUDA
// kernels are LibTorch's, which reach passcheck's mesh backends through c10d's group
// registry (framework/dist/c10d_backend.h).
//
// The grouped matrix multiply of the MoE models (schemas here, kernels, autograd and the
// C++ calls in grouped_mm.h):
//   passcheck::grouped_mm(Tensor input, Tensor weight, Tensor offsets) -> Tensor
//   passcheck::grouped_mm_weight_grad(Tensor input, Tensor grad_output, Tensor offsets) -> Tensor
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace passcheck::exec {

/// Makes sure the passcheck operators are registered (idempotent; the executor calls it).
void ensure_passcheck_ops_registered();

/// Keeps the operators torchtitan defines in Python (torchtitan_ops.cpp:
/// torchtitan::deterministic_scatter_add) in every binary that links the executor.
void ensure_torchtitan_ops_registered();

/// Keeps the Meta kernels of meta_kernels.cpp (ATen operators whose Meta kernel PyTorch
/// registers from Python: scaled_dot_product_attention's CPU kernels, _safe_softmax,
/// _grouped_mm) in every binary that links the executor.
void ensure_meta_kernels_registered();

/// For an operator name graph files used before collectives became PyTorch's own
/// ("passcheck::wait_tensor"), the message naming its replacement; empty otherwise.
std::string former_operator_message(const std::string& op);

/// Shape of a collective's result from its input sizes and arguments; throws
/// std::invalid_argument naming the operator and what does not fit (a dim 0 that the
/// group size does not divide, split sizes that do not add up). Used by the Meta
/// kernels and by the c10d backend before it communicates.
std::vector<int64_t> all_gather_result_sizes(std::vector<int64_t> input_sizes, int64_t group_size);
std::vector<int64_t> reduce_scatter_result_sizes(std::vector<int64_t> input_sizes, int64_t group_size);
std::vector<int64_t> all_to_all_result_sizes(std::vector<int64_t> input_sizes, const std::vector<int64_t>& output_splits,
                                             const std::vector<int64_t>& input_splits);

}  // namespace passcheck::exec
