// The llama3 debug model of specs/models.md (torchtitan "debugmodel" sizes): fused
// QKV (grouped-query when n_kv_heads < n_heads), RMSNorm, rotary embeddings, causal attention
// (scaled_dot_product_attention) and SwiGLU.
#pragma once

#include "oracles/models/subject.h"

namespace passcheck::models {

struct Llama3Config {
  int64_t dim = 256;
  int64_t n_layers = 6;
  int64_t n_heads = 16;
  /// Key/value heads (grouped-query attention); 0: n_heads.
  int64_t n_kv_heads = 0;
  int64_t vocab_size = 2048;
  int64_t ffn_hidden = 768;
  double norm_eps = 1e-6;
  double rope_theta = 500000.0;
  int64_t max_seq_len = 2048;
  int64_t batch_size = 2;
  int64_t seq_len = 128;
  /// Attention as FlexAttention computes it, annotated as torchtitan annotates it
  /// (`--attention flex`; layers.h, CausalSelfAttentionImpl::flex).
  bool flex_attention = false;
};

std::unique_ptr<TrainingSubject> make_llama3_subject(const SubjectOptions& options, const Llama3Config& config = {});

}  // namespace passcheck::models
