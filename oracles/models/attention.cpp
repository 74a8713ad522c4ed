// Attention variants of the model zoo (see attention.h).
#include "oracles/models/attention.h"

#include "framework/trace/module_scope.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace passcheck::models {

using trace::call_module;

std::string mask_name(AttentionMask mask, int64_t window) {
  switch (mask) {
    case AttentionMask::Causal: return "causal";
    case AttentionMask::ChunkedCausal: return "chunked(" + std::to_string(window) + ")";
    case AttentionMask::SlidingWindow: return "sliding(" + std::to_string(window) + ")";
  }
  return "?";
}

at::Tensor attention_mask(int64_t seq_len, AttentionMask mask, int64_t window, c10::Device device) {
  at::TensorOptions longs = at::TensorOptions().dtype(at::kLong).device(device);
  at::Tensor i = at::arange(seq_len, longs).view({seq_len, 1});
  at::Tensor j = at::arange(seq_len, longs).view({1, seq_len});
  at::Tensor masked = j > i;
  if (mask == AttentionMask::ChunkedCausal)
    masked = masked | at::floor_divide(i, window).ne(at::floor_divide(j, window));
  else if (mask == AttentionMask::SlidingWindow)
    masked = masked | (i - j).ge(window);
  return masked;
}

at::Tensor apply_rotary_half(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t s = x.size(1), d = x.size(3), half = d / 2;
  at::Tensor x1 = x.slice(-1, 0, half);
  at::Tensor x2 = x.slice(-1, half, d);
  at::Tensor rotated = at::cat({x2.neg(), x1}, -1);
  return x * cos.view({1, s, 1, d}) + rotated * sin.view({1, s, 1, d});
}

std::pair<at::Tensor, at::Tensor> rotary_half_tables(int64_t head_dim, double theta, int64_t max_seq_len) {
  auto [cos, sin] = rotary_tables(head_dim, theta, max_seq_len);
  return {at::cat({cos, cos}, -1), at::cat({sin, sin}, -1)};
}

std::pair<at::Tensor, at::Tensor> rotary_buffers(RopeStyle style, int64_t head_dim, double theta,
                                                 int64_t max_seq_len, const at::TensorOptions& options) {
  auto [cos, sin] = style == RopeStyle::RotateHalf ? rotary_half_tables(head_dim, theta, max_seq_len)
                                                   : rotary_tables(head_dim, theta, max_seq_len);
  if (options.device().is_meta()) return {at::empty(cos.sizes(), options), at::empty(sin.sizes(), options)};
  return {cos.to(options.device(), options.dtype().toScalarType()), sin.to(options.device(), options.dtype().toScalarType())};
}

at::Tensor repeat_kv(const at::Tensor& x, int64_t n_rep) {
  if (n_rep == 1) return x;
  const int64_t b = x.size(0), s = x.size(1), kv = x.size(2), d = x.size(3);
  return x.unsqueeze(3).expand({b, s, kv, n_rep, d}).reshape({b, s, kv * n_rep, d});
}

at::Tensor masked_attention(const at::Tensor& scores, const at::Tensor& masked, const at::Tensor& v,
                            const at::Tensor& sinks) {
  at::Tensor logits = scores.masked_fill(masked, -std::numeric_limits<double>::infinity());
  at::Tensor probs;
  if (sinks.defined()) {
    // The sink is one more logit per row with a zero value: it takes probability mass
    // from the keys, and its own column is dropped before the weighted sum.
    const int64_t b = scores.size(0), h = scores.size(1), s = scores.size(2), keys = scores.size(3);
    at::Tensor sink = sinks.to(scores.scalar_type()).view({1, h, 1, 1}).expand({b, h, s, 1});
    probs = at::softmax(at::cat({logits, sink}, -1), -1).slice(-1, 0, keys);
  } else {
    probs = at::softmax(logits, -1);
  }
  return at::matmul(probs, v);
}

AttentionImpl::AttentionImpl(const AttentionConfig& c, const at::TensorOptions& o) : config(c) {
  if (c.n_kv_heads <= 0 || c.n_heads % c.n_kv_heads != 0)
    throw std::invalid_argument(std::to_string(c.n_heads) + " query heads cannot share " + std::to_string(c.n_kv_heads) +
                                " kv heads");
  if (c.mask != AttentionMask::Causal && c.mask_window <= 0)
    throw std::invalid_argument("attention mask " + mask_name(c.mask, c.mask_window) + " needs a positive window");
  wq = register_module("wq", std::make_shared<LinearImpl>(c.dim, c.n_heads * c.head_dim, o, c.bias));
  wk = register_module("wk", std::make_shared<LinearImpl>(c.dim, c.n_kv_heads * c.head_dim, o, c.bias));
  wv = register_module("wv", std::make_shared<LinearImpl>(c.dim, c.n_kv_heads * c.head_dim, o, c.bias));
  wo = register_module("wo", std::make_shared<LinearImpl>(c.n_heads * c.head_dim, c.dim, o, c.bias));
  if (c.qk_norm_eps > 0) {
    q_norm = register_module("q_norm", std::make_shared<RMSNormImpl>(c.head_dim, c.qk_norm_eps, o));
    k_norm = register_module("k_norm", std::make_shared<RMSNormImpl>(c.head_dim, c.qk_norm_eps, o));
  }
  if (c.sinks) sinks = register_parameter("sinks", at::empty({c.n_heads}, o));
}

at::Tensor AttentionImpl::forward(const std::string& fqn, const at::Tensor& x, const at::Tensor& cos,
                                  const at::Tensor& sin) {
  const AttentionConfig& c = config;
  const int64_t b = x.size(0), s = x.size(1);
  auto project = [&](const char* name, std::shared_ptr<LinearImpl>& w, int64_t heads) {
    return call_module(fqn + "." + name, x, [&w](const at::Tensor& in) { return w->forward(in); })
        .view({b, s, heads, c.head_dim});
  };
  at::Tensor q = project("wq", wq, c.n_heads);
  at::Tensor k = project("wk", wk, c.n_kv_heads);
  at::Tensor v = project("wv", wv, c.n_kv_heads);
  if (q_norm) {
    q = call_module(fqn + ".q_norm", q, [this](const at::Tensor& in) { return q_norm->forward(in); });
    k = call_module(fqn + ".k_norm", k, [this](const at::Tensor& in) { return k_norm->forward(in); });
  }
  if (c.rope == RopeStyle::InterleavedPairs) {
    q = apply_rotary(q, cos, sin);
    k = apply_rotary(k, cos, sin);
  } else if (c.rope == RopeStyle::RotateHalf) {
    q = apply_rotary_half(q, cos, sin);
    k = apply_rotary_half(k, cos, sin);
  }
  const int64_t n_rep = c.n_heads / c.n_kv_heads;
  q = q.transpose(1, 2);
  k = repeat_kv(k, n_rep).transpose(1, 2);
  v = repeat_kv(v, n_rep).transpose(1, 2);
  at::Tensor out;
  if (c.sinks) {
    // Sinks need the logits themselves (scaled_dot_product_attention has no extra
    // column), so gpt_oss's attention stays written out.
    at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(c.head_dim)));
    at::Tensor masked = attention_mask(s, c.mask, c.mask_window, x.device());
    out = masked_attention(scores, masked, v, param(sinks));
  } else if (c.mask == AttentionMask::Causal) {
    out = at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true);
  } else {
    // The chunked and sliding masks as a boolean mask (true: may attend), built in the graph.
    at::Tensor allowed = at::logical_not(attention_mask(s, c.mask, c.mask_window, x.device()));
    out = at::scaled_dot_product_attention(q, k, v, allowed, /*dropout_p=*/0.0, /*is_causal=*/false);
  }
  out = out.transpose(1, 2).reshape({b, s, c.n_heads * c.head_dim});
  return call_module(fqn + ".wo", out, [this](const at::Tensor& in) { return wo->forward(in); });
}

MultiHeadLatentAttentionImpl::MultiHeadLatentAttentionImpl(const LatentAttentionConfig& c, const at::TensorOptions& o)
    : config(c) {
  const int64_t qk_head_dim = c.qk_nope_head_dim + c.qk_rope_head_dim;
  wq = register_module("wq", std::make_shared<LinearImpl>(c.dim, c.n_heads * qk_head_dim, o));
  wkv_a = register_module("wkv_a", std::make_shared<LinearImpl>(c.dim, c.kv_lora_rank + c.qk_rope_head_dim, o));
  kv_norm = register_module("kv_norm", std::make_shared<RMSNormImpl>(c.kv_lora_rank, c.norm_eps, o));
  wkv_b = register_module(
      "wkv_b", std::make_shared<LinearImpl>(c.kv_lora_rank, c.n_heads * (c.qk_nope_head_dim + c.v_head_dim), o));
  wo = register_module("wo", std::make_shared<LinearImpl>(c.n_heads * c.v_head_dim, c.dim, o));
}

at::Tensor MultiHeadLatentAttentionImpl::forward(const std::string& fqn, const at::Tensor& x, const at::Tensor& cos,
                                                 const at::Tensor& sin) {
  const LatentAttentionConfig& c = config;
  const int64_t b = x.size(0), s = x.size(1), h = c.n_heads;
  const int64_t nope = c.qk_nope_head_dim, rope = c.qk_rope_head_dim;
  at::Tensor q = call_module(fqn + ".wq", x, [this](const at::Tensor& in) { return wq->forward(in); })
                     .view({b, s, h, nope + rope});
  std::vector<at::Tensor> q_parts = q.split_with_sizes({nope, rope}, -1);
  at::Tensor q_rope = apply_rotary(q_parts[1], cos, sin);
  at::Tensor kv = call_module(fqn + ".wkv_a", x, [this](const at::Tensor& in) { return wkv_a->forward(in); });
  std::vector<at::Tensor> kv_parts = kv.split_with_sizes({c.kv_lora_rank, rope}, -1);
  at::Tensor k_rope = apply_rotary(kv_parts[1].unsqueeze(2), cos, sin);  // [B, S, 1, rope]: one head for all
  at::Tensor latent =
      call_module(fqn + ".kv_norm", kv_parts[0], [this](const at::Tensor& in) { return kv_norm->forward(in); });
  at::Tensor kv_heads = call_module(fqn + ".wkv_b", latent, [this](const at::Tensor& in) { return wkv_b->forward(in); })
                            .view({b, s, h, nope + c.v_head_dim});
  std::vector<at::Tensor> k_v = kv_heads.split_with_sizes({nope, c.v_head_dim}, -1);
  at::Tensor query = at::cat({q_parts[0], q_rope}, -1).transpose(1, 2);
  at::Tensor key = at::cat({k_v[0], k_rope.expand({b, s, h, rope})}, -1).transpose(1, 2);
  at::Tensor value = k_v[1].transpose(1, 2);
  at::Tensor out = at::scaled_dot_product_attention(query, key, value, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                                   /*is_causal=*/true)
                       .transpose(1, 2)
                       .reshape({b, s, h * c.v_head_dim});
  return call_module(fqn + ".wo", out, [this](const at::Tensor& in) { return wo->forward(in); });
}

}  // namespace passcheck::models
