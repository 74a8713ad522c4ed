// Building blocks of the debug models, written from primitives so they exist on both
// the CPU (LibTorch 1.13) and GPU (2.x) builds and construct on the meta device
// without computing: Linear (no bias), Embedding, RMSNorm, and seeded initialisation.
#pragma once

#include <torch/nn/module.h>

#include <cstdint>

namespace passcheck::models {

/// y = x W^T, weight [out, in].
class LinearImpl : public torch::nn::Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& x);
  at::Tensor weight;
};

/// Row lookup into weight [num, dim].
class EmbeddingImpl : public torch::nn::Module {
 public:
  EmbeddingImpl(int64_t num, int64_t dim, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& indices);
  at::Tensor weight;
};

/// x * rsqrt(mean(x^2, -1) + eps) * weight (RMSNorm from primitives).
class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, double eps, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& x);
  at::Tensor weight;
  double eps;
};

/// Deterministic initialisation of every parameter of `module` from `seed`:
/// weights named "*norm*.weight" get ones, every other parameter N(0, std). Values are
/// drawn on the CPU, so every device gets the same numbers; meta modules are skipped.
void init_parameters(torch::nn::Module& module, uint64_t seed, double std = 0.02);

/// [loss, gradient of every parameter in named_parameters() order] as a tensor list,
/// computed with trace::gradients so the tracer marks the backward.
c10::IValue loss_and_gradients(torch::nn::Module& module, const at::Tensor& loss);

/// Standard-normal tensor from its own seeded CPU generator, moved to `device`.
at::Tensor seeded_normal(uint64_t seed, at::IntArrayRef sizes, c10::Device device);

/// Integers uniform in [0, high) from their own seeded CPU generator, moved to `device`.
at::Tensor seeded_randint(uint64_t seed, int64_t high, at::IntArrayRef sizes, c10::Device device);

}  // namespace passcheck::models
