// Building blocks of the debug models, on the operators torchtitan's models call
// (rms_norm, scaled_dot_product_attention), constructible on the meta device without
// computing: Linear (no bias), Embedding, RMSNorm, SwiGLU feed-forward, causal
// self-attention with rotary embeddings, and seeded initialisation. llama3 and
// deepseek_v3 share the attention and feed-forward blocks, so a fix to one reaches both.
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace passcheck::models {

/// How a module reads a parameter it stores: the identity on one rank; under a parallel
/// plan (parallelize.h) e.g. the unshard of an FSDP shard (all_gather + wait, whose
/// backward reduce-scatters the gradient).
class ParameterAccess {
 public:
  virtual ~ParameterAccess() = default;
  /// The tensor the computation uses in place of the stored parameter `stored`.
  virtual at::Tensor use(const at::Tensor& stored) const = 0;
};

/// Base of the modules that read parameters: `param(p)` goes through the installed
/// access (none: p itself).
class ParameterUser {
 public:
  virtual ~ParameterUser() = default;
  std::shared_ptr<const ParameterAccess> access;
  at::Tensor param(const at::Tensor& stored) const { return access ? access->use(stored) : stored; }
};

/// Tensor parallelism of a projection pair (column-parallel in, row-parallel out): empty
/// group means none. `copy_input` false is a deliberately wrong test-only variant.
struct TensorParallelism {
  std::string group;
  int64_t size = 1;
  bool copy_input = true;
  bool enabled() const { return !group.empty(); }
  /// Megatron's f before the column-parallel projections (identity without TP).
  at::Tensor enter(const at::Tensor& x) const;
  /// all_reduce("sum") + wait of a row-parallel projection's partial output.
  at::Tensor leave(const at::Tensor& partial) const;
};

/// y = x W^T (+ b), weight [out, in], bias [out] when `with_bias`.
class LinearImpl : public torch::nn::Module, public ParameterUser {
 public:
  LinearImpl(int64_t in_features, int64_t out_features, const at::TensorOptions& options, bool with_bias = false);
  at::Tensor forward(const at::Tensor& x);
  at::Tensor weight, bias;
};

/// Row lookup into weight [num, dim].
class EmbeddingImpl : public torch::nn::Module, public ParameterUser {
 public:
  EmbeddingImpl(int64_t num, int64_t dim, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& indices);
  at::Tensor weight;
};

/// at::rms_norm over the last dim: x * rsqrt(mean(x^2, -1) + eps) * weight.
class RMSNormImpl : public torch::nn::Module, public ParameterUser {
 public:
  RMSNormImpl(int64_t dim, double eps, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& x);
  at::Tensor weight;
  double eps;
};

/// SwiGLU feed-forward w2(silu(w1 x) * w3 x); w1, w3: dim -> hidden, w2: hidden -> dim.
/// Each projection is a module call "<fqn>.w1" / ".w3" / ".w2".
class SwiGLUFeedForwardImpl : public torch::nn::Module {
 public:
  SwiGLUFeedForwardImpl(int64_t dim, int64_t hidden, const at::TensorOptions& options);
  at::Tensor forward(const std::string& fqn, const at::Tensor& x);
  std::shared_ptr<LinearImpl> w1, w2, w3;
  /// w1, w3 column-parallel, w2 row-parallel when enabled.
  TensorParallelism tp;
};

/// Real-valued form of torchtitan's complex rotary embedding: rotates each interleaved
/// pair (x0, x1) of x [B, S, H, D] by the angles whose cos and sin are [S, D/2].
at::Tensor apply_rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

/// Rotary tables (cos, sin), each [max_seq_len, head_dim / 2] float32 on the CPU:
/// angle(p, i) = p * theta^(-2i / head_dim), computed in double and rounded once.
std::pair<at::Tensor, at::Tensor> rotary_tables(int64_t head_dim, double theta, int64_t max_seq_len);

/// Causal multi-head self-attention: fused projection "wqkv" (dim -> q, k, v rows: n_heads
/// query heads, then n_kv_heads key and n_kv_heads value heads of head_dim = dim /
/// n_heads; grouped-query attention when n_kv_heads < n_heads, each kv head serving
/// n_heads / n_kv_heads query heads), rotary embeddings on q and k, softmax(q k^T /
/// sqrt(head_dim)) with future positions masked (causal scaled_dot_product_attention),
/// output projection "wo".
class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  /// n_kv_heads 0: n_heads (multi-head attention, wqkv dim -> 3 dim).
  CausalSelfAttentionImpl(int64_t dim, int64_t n_heads, const at::TensorOptions& options, int64_t n_kv_heads = 0);
  /// x: [B, S, dim]; cos, sin: [S, head_dim / 2].
  at::Tensor forward(const std::string& fqn, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
  /// FlexAttention's computation of q, k, v [B, H, S, D] (see `flex`).
  at::Tensor flex_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) const;
  int64_t n_heads, n_kv_heads, head_dim;
  /// FlexAttention instead of scaled_dot_product_attention: the causal block mask's
  /// mask_mod and a tanh soft-capping score_mod (cap 20) applied to the scores, written as
  /// FlexAttention's own eager computation (PyTorch's flex_attention is a Python
  /// higher-order op that LibTorch does not have), under an AnnotationScope
  /// {compile_with_inductor: flex_attention}, as torchtitan annotates its FlexAttention
  /// module for regional compilation. The annotation reaches the backward of every
  /// annotated node (the tracer's metadata propagation).
  bool flex = false;
  /// Heads this rank computes: n_heads / tp.size query and n_kv_heads / tp.size kv heads
  /// (wqkv holds their q, k and v rows).
  int64_t n_local_heads, n_local_kv_heads;
  std::shared_ptr<LinearImpl> wqkv, wo;
  /// wqkv column-parallel by head group, wo row-parallel when enabled.
  TensorParallelism tp;
};

/// Deterministic initialisation of every parameter of `module` from `seed`:
/// weights named "*norm*.weight" get ones, every other parameter N(0, std). Values are
/// drawn on the CPU, so every device gets the same numbers; meta modules are skipped.
void init_parameters(torch::nn::Module& module, uint64_t seed, double std = 0.02);

/// [loss, gradient of every parameter in named_parameters() order] as a tensor list,
/// computed with trace::gradients so the tracer marks the backward.
c10::IValue loss_and_gradients(torch::nn::Module& module, const at::Tensor& loss);

/// Block i's forward(fqn, h, cos, sin).
using BlockForward = std::function<at::Tensor(const std::string& fqn, const at::Tensor& h, const at::Tensor& cos,
                                              const at::Tensor& sin)>;

/// The decoder both language models share: embedding, block i through
/// call_module("layers.i") with the rotary tables cut to the sequence length, final
/// norm, output projection. The block's forward is kept by value in the call, since an
/// interceptor may run a block again after the call returned (eager checkpointing
/// recomputes it in the backward).
at::Tensor decoder_forward(const at::Tensor& tokens, EmbeddingImpl& embeddings, size_t num_blocks,
                           const std::function<BlockForward(size_t)>& block, RMSNormImpl& norm, LinearImpl& output,
                           const at::Tensor& freqs_cos, const at::Tensor& freqs_sin);

/// Tokens and labels [batch, seq] in [0, vocab) for training step `step` of a language
/// model seeded with `seed` (deterministic per step and size).
std::vector<c10::IValue> token_batch(uint64_t seed, int64_t step, int64_t batch, int64_t seq, int64_t vocab,
                                     c10::Device device);

/// A language model's training step: logits = forward(tokens), cross entropy over the
/// flattened tokens inside a "loss" scope, then loss_and_gradients.
c10::IValue language_model_step(torch::nn::Module& module,
                                const std::function<at::Tensor(const at::Tensor&)>& forward,
                                const std::vector<c10::IValue>& args);

/// Standard-normal tensor from its own seeded CPU generator, moved to `device`.
at::Tensor seeded_normal(uint64_t seed, at::IntArrayRef sizes, c10::Device device);

/// Integers uniform in [0, high) from their own seeded CPU generator, moved to `device`.
at::Tensor seeded_randint(uint64_t seed, int64_t high, at::IntArrayRef sizes, c10::Device device);

}  // namespace passcheck::models
