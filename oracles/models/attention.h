// The attention variants of the model zoo, on scaled_dot_product_attention as torchtitan's
// models call it (causal, or a boolean mask built in the graph from arange); attention
// with learned sinks (gpt_oss) is written out, since its extra logit column needs the
// scores:
// - AttentionImpl: grouped-query attention with separate q/k/v projections (optionally
//   biased), optional per-head RMSNorm on q and k (qwen3), RoPE in the interleaved-pair
//   (llama) or rotate-half (qwen3, gpt_oss) form or none (llama4's NoPE layers), a causal,
//   chunked-causal (llama4) or sliding-window (gpt_oss) mask, and optional learned sinks
//   (gpt_oss: an extra per-head logit whose value is zero).
// - MultiHeadLatentAttentionImpl: deepseek_v3's MLA (low-rank compressed keys and values,
//   one shared rotary key head), without YaRN scaling.
// Both are ParameterUsers, so a parallel plan's access (the FSDP unshard) reaches every
// weight, bias and sink they own.
#pragma once

#include "oracles/models/layers.h"

namespace passcheck::models {

enum class RopeStyle { None, InterleavedPairs, RotateHalf };
enum class AttentionMask { Causal, ChunkedCausal, SlidingWindow };

/// "causal", "chunked(N)" or "sliding(N)".
std::string mask_name(AttentionMask mask, int64_t window);

/// [S, S] bool, true where query i may not attend key j: j > i; for ChunkedCausal also
/// i // window != j // window; for SlidingWindow also i - j >= window. Built from
/// arange on `device`, so the traced graph computes it instead of holding a constant.
at::Tensor attention_mask(int64_t seq_len, AttentionMask mask, int64_t window, c10::Device device);

/// Rotate-half RoPE (the HF/Qwen form): x [B, S, H, D] with cos, sin [S, D] (the D/2
/// frequencies repeated twice): x * cos + cat(-x[..., D/2:], x[..., :D/2]) * sin.
at::Tensor apply_rotary_half(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

/// Rotate-half tables (cos, sin), each [max_seq_len, head_dim]: the interleaved tables of
/// rotary_tables() with their columns repeated twice.
std::pair<at::Tensor, at::Tensor> rotary_half_tables(int64_t head_dim, double theta, int64_t max_seq_len);

/// Rotary tables for `style` as model buffers on `options`' device and dtype (empty on
/// meta): [max_seq_len, head_dim / 2] for InterleavedPairs, [max_seq_len, head_dim] for
/// RotateHalf.
std::pair<at::Tensor, at::Tensor> rotary_buffers(RopeStyle style, int64_t head_dim, double theta,
                                                 int64_t max_seq_len, const at::TensorOptions& options);

/// x [B, S, kv, D] -> [B, S, kv * n_rep, D]: each kv head serves n_rep query heads.
at::Tensor repeat_kv(const at::Tensor& x, int64_t n_rep);

struct AttentionConfig {
  int64_t dim = 256;
  int64_t n_heads = 16;
  int64_t n_kv_heads = 16;
  int64_t head_dim = 16;
  bool bias = false;        ///< q, k, v and output projections with bias (gpt_oss)
  double qk_norm_eps = 0;   ///< > 0: per-head RMSNorm on q and k before RoPE (qwen3)
  RopeStyle rope = RopeStyle::InterleavedPairs;
  AttentionMask mask = AttentionMask::Causal;
  int64_t mask_window = 0;  ///< chunk length (ChunkedCausal) or window (SlidingWindow)
  bool sinks = false;       ///< learned per-head sink logits (gpt_oss)
};

class AttentionImpl : public torch::nn::Module, public ParameterUser {
 public:
  AttentionImpl(const AttentionConfig& config, const at::TensorOptions& options);
  /// x [B, S, dim]; cos, sin: this model's rotary tables cut to S (unused without RoPE).
  at::Tensor forward(const std::string& fqn, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
  AttentionConfig config;
  std::shared_ptr<LinearImpl> wq, wk, wv, wo;
  std::shared_ptr<RMSNormImpl> q_norm, k_norm;  // qk_norm_eps > 0 only
  at::Tensor sinks;                             // [n_heads], sinks only
};

/// softmax(scores masked) @ v, with scores [B, H, S, S] and v [B, H, S, Dv]; `sinks` [H]
/// (undefined: none) adds one more logit per row whose probability is dropped.
at::Tensor masked_attention(const at::Tensor& scores, const at::Tensor& masked, const at::Tensor& v,
                            const at::Tensor& sinks);

struct LatentAttentionConfig {
  int64_t dim = 256;
  int64_t n_heads = 16;
  int64_t kv_lora_rank = 512;
  int64_t qk_nope_head_dim = 128;
  int64_t qk_rope_head_dim = 64;
  int64_t v_head_dim = 128;
  double norm_eps = 1e-5;
};

/// deepseek_v3's multi-head latent attention (q_lora_rank 0, as the debug model):
/// q = wq(x) per head [nope | rope]; kv latent = wkv_a(x) = [latent (kv_lora_rank) |
/// k_rope (one shared head)]; k, v per head = wkv_b(kv_norm(latent)) = [k_nope | v];
/// RoPE (interleaved pairs) on q's rope part and the shared k_rope head; causal softmax
/// over q.k / sqrt(nope + rope); wo over the heads' v outputs.
class MultiHeadLatentAttentionImpl : public torch::nn::Module {
 public:
  MultiHeadLatentAttentionImpl(const LatentAttentionConfig& config, const at::TensorOptions& options);
  /// cos, sin: [S, qk_rope_head_dim / 2].
  at::Tensor forward(const std::string& fqn, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
  LatentAttentionConfig config;
  std::shared_ptr<LinearImpl> wq, wkv_a, wkv_b, wo;
  std::shared_ptr<RMSNormImpl> kv_norm;
};

}  // namespace passcheck::models
