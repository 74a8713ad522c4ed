// Grouped matrix multiply, the sparse expert dispatch primitive of the MoE models (in the
// spirit of PyTorch's torch._grouped_mm), as two passcheck:: operators:
//   passcheck::grouped_mm(Tensor input, Tensor weight, Tensor offsets) -> Tensor
//       input [N, K], weight [G, K, M] (any strides), offsets 1-D int64 or int32 of length
//       G holding the END row of each group (non-decreasing, last <= N). Group g covers
//       rows [offsets[g-1], offsets[g]) (offsets[-1] = 0) and its result rows are
//       at::mm(input rows, weight[g]); rows past offsets[G-1] are zero. Result [N, M].
//   passcheck::grouped_mm_weight_grad(Tensor input, Tensor grad_output, Tensor offsets) -> Tensor
//       [G, K, M] with slice g = input_rows_g^T @ grad_output_rows_g (zeros for an empty
//       group): the weight gradient of grouped_mm, a sum over the rows of each group.
// The CPU and CUDA kernels read the offsets to the host (a device-to-host copy and a
// wait), so neither operator can be captured in a CUDA graph; op_properties reports them
// as host reads of device data. Meta kernels give the shapes without reading data; the
// Autograd kernel records the backward as these same operators, so the tracer sees one
// node per call in the forward and in the backward.
#pragma once

#include <ATen/core/Tensor.h>

namespace passcheck::exec {

/// passcheck::grouped_mm through the dispatcher (traced, differentiable).
at::Tensor grouped_mm(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& offsets);

/// passcheck::grouped_mm_weight_grad through the dispatcher (traced).
at::Tensor grouped_mm_weight_grad(const at::Tensor& input, const at::Tensor& grad_output, const at::Tensor& offsets);

/// Keeps the grouped_mm kernels in every binary that links the executor (idempotent).
void ensure_grouped_mm_registered();

}  // namespace passcheck::exec
