// Debug-model building blocks and seeded initialisation.
#include "oracles/models/layers.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "framework/trace/module_scope.h"

namespace passcheck::models {

LinearImpl::LinearImpl(int64_t in_features, int64_t out_features, const at::TensorOptions& options) {
  weight = register_parameter("weight", at::empty({out_features, in_features}, options));
}

at::Tensor LinearImpl::forward(const at::Tensor& x) { return at::linear(x, weight); }

EmbeddingImpl::EmbeddingImpl(int64_t num, int64_t dim, const at::TensorOptions& options) {
  weight = register_parameter("weight", at::empty({num, dim}, options));
}

at::Tensor EmbeddingImpl::forward(const at::Tensor& indices) { return at::embedding(weight, indices); }

RMSNormImpl::RMSNormImpl(int64_t dim, double eps_, const at::TensorOptions& options) : eps(eps_) {
  weight = register_parameter("weight", at::empty({dim}, options));
}

at::Tensor RMSNormImpl::forward(const at::Tensor& x) {
  at::Tensor variance = x.pow(2).mean({-1}, /*keepdim=*/true);
  return x * at::rsqrt(variance + eps) * weight;
}

void init_parameters(torch::nn::Module& module, uint64_t seed, double std) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  torch::NoGradGuard no_grad;
  for (auto& item : module.named_parameters(/*recurse=*/true)) {
    at::Tensor& p = item.value();
    if (p.device().is_meta()) continue;
    const std::string& name = item.key();
    bool is_norm = name.find("norm") != std::string::npos && name.size() >= 6 &&
                   name.compare(name.size() - 6, 6, "weight") == 0;
    at::Tensor values = is_norm ? at::ones(p.sizes(), at::kFloat)
                                : at::normal(0.0, std, p.sizes(), gen, at::TensorOptions().dtype(at::kFloat));
    p.copy_(values.to(p.scalar_type()));
  }
}

c10::IValue loss_and_gradients(torch::nn::Module& module, const at::Tensor& loss) {
  std::vector<at::Tensor> params = module.parameters(/*recurse=*/true);
  std::vector<at::Tensor> grads = trace::gradients({loss}, params);
  c10::List<at::Tensor> out;
  out.push_back(loss);
  for (auto& g : grads) out.push_back(g);
  return out;
}

at::Tensor seeded_normal(uint64_t seed, at::IntArrayRef sizes, c10::Device device) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn(sizes, gen, at::TensorOptions().dtype(at::kFloat)).to(device);
}

at::Tensor seeded_randint(uint64_t seed, int64_t high, at::IntArrayRef sizes, c10::Device device) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randint(0, high, sizes, gen, at::TensorOptions().dtype(at::kLong)).to(device);
}

}  // namespace passcheck::models
