// Debug-model building blocks and seeded initialisation.
#include "oracles/models/layers.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/module.h>
#include <torch/utils.h>

#include "framework/dist/collectives.h"
#include "framework/trace/module_scope.h"
#include "oracles/models/attention.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace passcheck::models {

using trace::call_module;

LinearImpl::LinearImpl(int64_t in_features, int64_t out_features, const at::TensorOptions& options, bool with_bias) {
  weight = register_parameter("weight", at::empty({out_features, in_features}, options));
  if (with_bias) bias = register_parameter("bias", at::empty({out_features}, options));
}

at::Tensor TensorParallelism::enter(const at::Tensor& x) const {
  return enabled() && copy_input ? dist::copy_to_group(x, group) : x;
}

at::Tensor TensorParallelism::leave(const at::Tensor& partial) const {
  return enabled() ? dist::wait_tensor(dist::all_reduce(partial, "sum", group)) : partial;
}

at::Tensor LinearImpl::forward(const at::Tensor& x) {
  return bias.defined() ? at::linear(x, param(weight), param(bias)) : at::linear(x, param(weight));
}

EmbeddingImpl::EmbeddingImpl(int64_t num, int64_t dim, const at::TensorOptions& options) {
  weight = register_parameter("weight", at::empty({num, dim}, options));
}

at::Tensor EmbeddingImpl::forward(const at::Tensor& indices) { return at::embedding(param(weight), indices); }

RMSNormImpl::RMSNormImpl(int64_t dim, double eps_, const at::TensorOptions& options) : eps(eps_) {
  weight = register_parameter("weight", at::empty({dim}, options));
}

at::Tensor RMSNormImpl::forward(const at::Tensor& x) {
  return at::rms_norm(x, {x.size(-1)}, param(weight), eps);
}

SwiGLUFeedForwardImpl::SwiGLUFeedForwardImpl(int64_t dim, int64_t hidden, const at::TensorOptions& options) {
  // Registration order fixes named_parameters() order, and so the seeded init draws.
  w1 = register_module("w1", std::make_shared<LinearImpl>(dim, hidden, options));
  w2 = register_module("w2", std::make_shared<LinearImpl>(hidden, dim, options));
  w3 = register_module("w3", std::make_shared<LinearImpl>(dim, hidden, options));
}

at::Tensor SwiGLUFeedForwardImpl::forward(const std::string& fqn, const at::Tensor& input) {
  at::Tensor x = tp.enter(input);
  at::Tensor gate = call_module(fqn + ".w1", x, [this](const at::Tensor& in) { return w1->forward(in); });
  at::Tensor up = call_module(fqn + ".w3", x, [this](const at::Tensor& in) { return w3->forward(in); });
  at::Tensor h = at::silu(gate) * up;
  return tp.leave(call_module(fqn + ".w2", h, [this](const at::Tensor& in) { return w2->forward(in); }));
}

at::Tensor apply_rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  auto sizes = x.sizes().vec();
  at::Tensor pairs = x.reshape({sizes[0], sizes[1], sizes[2], sizes[3] / 2, 2});
  at::Tensor x0 = pairs.select(-1, 0);
  at::Tensor x1 = pairs.select(-1, 1);
  at::Tensor c = cos.view({1, sizes[1], 1, sizes[3] / 2});
  at::Tensor s = sin.view({1, sizes[1], 1, sizes[3] / 2});
  at::Tensor r0 = x0 * c - x1 * s;
  at::Tensor r1 = x0 * s + x1 * c;
  return at::stack({r0, r1}, -1).flatten(3);
}

std::pair<at::Tensor, at::Tensor> rotary_tables(int64_t head_dim, double theta, int64_t max_seq_len) {
  int64_t half = head_dim / 2;
  at::Tensor inv_freq = at::pow(theta, -at::arange(0, half, at::kDouble) * 2.0 / (2.0 * half));
  at::Tensor angles = at::outer(at::arange(0, max_seq_len, at::kDouble), inv_freq);
  return {angles.cos().to(at::kFloat), angles.sin().to(at::kFloat)};
}

CausalSelfAttentionImpl::CausalSelfAttentionImpl(int64_t dim, int64_t n_heads_, const at::TensorOptions& options,
                                                 int64_t n_kv_heads_)
    : n_heads(n_heads_),
      n_kv_heads(n_kv_heads_ ? n_kv_heads_ : n_heads_),
      head_dim(dim / n_heads_),
      n_local_heads(n_heads_),
      n_local_kv_heads(n_kv_heads) {
  if (n_heads % n_kv_heads != 0)
    throw std::invalid_argument(std::to_string(n_heads) + " query heads cannot share " + std::to_string(n_kv_heads) +
                                " kv heads evenly");
  wqkv = register_module("wqkv", std::make_shared<LinearImpl>(dim, (n_heads + 2 * n_kv_heads) * head_dim, options));
  wo = register_module("wo", std::make_shared<LinearImpl>(dim, dim, options));
}

at::Tensor CausalSelfAttentionImpl::flex_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) const {
  trace::AnnotationScope regional(std::map<std::string, std::string>{{"compile_with_inductor", "flex_attention"}});
  constexpr double kSoftCap = 20.0;
  const int64_t s = q.size(2);
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(head_dim)));
  scores = at::tanh(scores / kSoftCap) * kSoftCap;  // score_mod
  // mask_mod: causal, kv_idx <= q_idx, built in the graph from positions.
  at::TensorOptions longs = at::TensorOptions().dtype(at::kLong).device(q.device());
  at::Tensor allowed = at::arange(s, longs).view({1, s}).le(at::arange(s, longs).view({s, 1}));
  scores = scores.masked_fill(at::logical_not(allowed), -std::numeric_limits<double>::infinity());
  return at::matmul(at::softmax(scores, -1), v);
}

at::Tensor CausalSelfAttentionImpl::forward(const std::string& fqn, const at::Tensor& x, const at::Tensor& cos,
                                            const at::Tensor& sin) {
  // Under TP this rank's wqkv rows are the q, k and v rows of its n_local_heads heads.
  int64_t b = x.size(0), s = x.size(1), dim = n_local_heads * head_dim, kv_dim = n_local_kv_heads * head_dim;
  at::Tensor qkv = call_module(fqn + ".wqkv", tp.enter(x), [this](const at::Tensor& in) { return wqkv->forward(in); });
  // Multi-head attention keeps the equal split (the graph the debug models always had).
  std::vector<at::Tensor> parts = kv_dim == dim ? qkv.split(dim, -1) : qkv.split_with_sizes({dim, kv_dim, kv_dim}, -1);
  at::Tensor q = apply_rotary(parts[0].view({b, s, n_local_heads, head_dim}), cos, sin).transpose(1, 2);
  at::Tensor k = apply_rotary(parts[1].view({b, s, n_local_kv_heads, head_dim}), cos, sin);
  at::Tensor v = parts[2].view({b, s, n_local_kv_heads, head_dim});
  if (n_local_kv_heads != n_local_heads) {
    k = repeat_kv(k, n_local_heads / n_local_kv_heads);
    v = repeat_kv(v, n_local_heads / n_local_kv_heads);
  }
  k = k.transpose(1, 2);
  v = v.transpose(1, 2);
  at::Tensor out = flex ? flex_attention(q, k, v)
                        : at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                                           /*is_causal=*/true);
  out = out.transpose(1, 2).reshape({b, s, dim});
  return tp.leave(call_module(fqn + ".wo", out, [this](const at::Tensor& in) { return wo->forward(in); }));
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

at::Tensor decoder_forward(const at::Tensor& tokens, EmbeddingImpl& embeddings, size_t num_blocks,
                           const std::function<BlockForward(size_t)>& block, RMSNormImpl& norm, LinearImpl& output,
                           const at::Tensor& freqs_cos, const at::Tensor& freqs_sin) {
  const int64_t s = tokens.size(1);
  at::Tensor cos = freqs_cos.narrow(0, 0, s), sin = freqs_sin.narrow(0, 0, s);
  at::Tensor h =
      trace::call_module("tok_embeddings", tokens, [&embeddings](const at::Tensor& in) { return embeddings.forward(in); });
  for (size_t i = 0; i < num_blocks; ++i) {
    std::string fqn = "layers." + std::to_string(i);
    h = trace::call_module(fqn, h, [forward = block(i), fqn, cos, sin](const at::Tensor& in) {
      return forward(fqn, in, cos, sin);
    });
  }
  h = trace::call_module("norm", h, [&norm](const at::Tensor& in) { return norm.forward(in); });
  return trace::call_module("output", h, [&output](const at::Tensor& in) { return output.forward(in); });
}

std::vector<c10::IValue> token_batch(uint64_t seed, int64_t step, int64_t batch, int64_t seq, int64_t vocab,
                                     c10::Device device) {
  const uint64_t s = seed * 1000003 + static_cast<uint64_t>(step) * 2;
  std::vector<int64_t> shape{batch, seq};
  return {seeded_randint(s, vocab, shape, device), seeded_randint(s + 1, vocab, shape, device)};
}

c10::IValue language_model_step(torch::nn::Module& module,
                                const std::function<at::Tensor(const at::Tensor&)>& forward,
                                const std::vector<c10::IValue>& args) {
  const at::Tensor& tokens = args.at(0).toTensor();
  const at::Tensor& labels = args.at(1).toTensor();
  at::Tensor logits = forward(tokens);
  at::Tensor loss;
  {
    trace::ModuleScope scope("loss", ir::Phase::Loss);
    loss = at::cross_entropy_loss(logits.flatten(0, 1), labels.flatten(0, 1));
  }
  return loss_and_gradients(module, loss);
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
