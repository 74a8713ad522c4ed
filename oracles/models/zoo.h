// The rest of torchtitan's debug model zoo (specs/models.md "The rest of the zoo"): qwen3,
// qwen3_moe, llama4 and gpt_oss, each a configuration of one pre-norm decoder
//   h = x + attention(attention_norm(x)); out = h + ffn_or_moe(ffn_norm(h))
// built from the shared blocks (attention.h, moe.h, layers.h). What sets them apart:
// - qwen3: GQA 16/8 heads of dim 128, per-head RMSNorm on q and k, rotate-half RoPE
//   (theta 1e6), SwiGLU 3072, tied token embedding and output projection (the output
//   weight shares the embedding's storage: two FQNs, two graph inputs, one optimizer step).
// - qwen3_moe: qwen3's attention with every layer a 64-expert top-8 MoE (softmax, weights
//   renormalised over the chosen 8, expert hidden 768, no shared expert, expert-bias
//   balancing) on the sparse grouped dispatch; not tied; about 316 M parameters.
// - llama4: 16 heads of dim 16 with separate q/k/v; layers 0 and 4 without RoPE attend
//   globally (causal), the others apply interleaved RoPE and attend within 256-token
//   chunks; dense SwiGLU 768 on even layers, MoE on odd ones (8 experts, top-1 sigmoid
//   score multiplied into the expert input, a shared expert of hidden 512).
// - gpt_oss: 64 query / 8 kv heads of dim 64, biased projections, learned attention
//   sinks, a 128-token sliding window on even layers and full causal attention on odd
//   ones, rotate-half RoPE (theta 1.5e5); every layer an 8-expert top-4 MoE with a biased
//   router and clamped SwiGLU experts with biases.
// Simplifications, all identical in eager and traced runs: chunked and sliding masks as
// dense boolean masks of scaled_dot_product_attention (torchtitan uses flex attention),
// sink attention written out, no YaRN or llama4 RoPE scaling, llama4 without its qk L2
// norm, and expert-bias balancing (coefficient 1e-3) on every MoE model.
#pragma once

#include "oracles/models/attention.h"
#include "oracles/models/moe.h"
#include "oracles/models/subject.h"

#include <string>
#include <vector>

namespace passcheck::models {

/// One decoder block of a zoo model.
struct ZooLayer {
  AttentionConfig attention;
  bool moe = false;
  int64_t ffn_hidden = 0;  ///< dense SwiGLU hidden size (moe == false)
};

struct ZooConfig {
  std::string name;
  int64_t dim = 256;
  int64_t vocab_size = 2048;
  double norm_eps = 1e-6;
  RopeStyle rope = RopeStyle::RotateHalf;  ///< the style of the rotary tables (per layer: AttentionConfig::rope)
  int64_t rope_head_dim = 128;
  double rope_theta = 1e6;
  int64_t max_seq_len = 2048;
  bool tied_embeddings = false;
  std::vector<ZooLayer> layers;
  MoeConfig moe;  ///< for the layers with moe
  int64_t batch_size = 2;
  int64_t seq_len = 128;
};

/// The names zoo_config accepts.
std::vector<std::string> zoo_models();

/// The debug configuration of zoo model `name` with `n_layers` blocks (0: the model's
/// own count), following the model's layer pattern. Throws std::invalid_argument for an
/// unknown name.
ZooConfig zoo_config(const std::string& name, int64_t n_layers = 0);

/// A training subject of zoo model `name` (options: seed, device, dtype, batch, sequence,
/// layers, parallel plan "fsdp").
std::unique_ptr<TrainingSubject> make_zoo_subject(const std::string& name, const SubjectOptions& options);
/// A training subject of an explicit zoo configuration (configs.h's production shapes).
std::unique_ptr<TrainingSubject> make_zoo_subject(const SubjectOptions& options, ZooConfig config);

}  // namespace passcheck::models
