// The deepseek_v3 debug model of specs/models.md (torchtitan "debugmodel" sizes): 6
// transformer blocks of dim 256, layer 0 with a dense SwiGLU FFN, layers 1-5 with a
// mixture of experts (8 routed experts, top-3, softmax scores, one shared expert) and
// the auxiliary-loss-free load balancing of DeepSeek-V3 (an expert bias that only
// steers the choice of experts, updated between steps from the token counts).
//
// Attention is DeepSeek-V3's multi-head latent attention (attention.h; q_lora_rank 0,
// kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128), without YaRN scaling of the
// rotary embedding. `attention = MultiHead` keeps the earlier simplification (standard
// causal multi-head attention, the llama3 block), smaller and faster, for suites that
// test something else.
//
// The MoE layer is the shared one (moe.h). Its dispatch here is dense by default: every
// routed expert runs on every token (bmm over the stacked expert weights) and the
// results are combined with a dense [tokens, experts] weight matrix that holds the gate
// weight of each chosen expert and 0 elsewhere. `sparse_dispatch` selects the
// dropless grouped dispatch of the other MoE models.
//
// Capacity dispatch (capacity_factor > 0; needed by expert parallelism, parallelize.h):
// the T tokens of a step are split in capacity_groups equal groups of consecutive rows
// (an EP rank's tokens are one group). In each group every expert takes at most
//   C = max(1, ceil(Tg * top_k * capacity_factor / E))      (Tg = T / capacity_groups)
// tokens: a token's slot at expert e is the number of tokens of its group before it that
// chose e (cumsum order); a token whose slot is >= C is dropped for that expert (its
// routed output lacks that expert's term; the shared expert still runs). Dispatch and
// combine are one-hot [Tg, E*C] matrices built from the cumsum and applied with bmm, so
// no shape depends on the data. Under EP the dispatched [E*C, dim] rows (expert major)
// go to the expert's rank with all_to_all_single (equal splits), each rank runs its E/ep
// experts on ep*C rows, and a second all_to_all_single brings the results back. A
// single-rank model with capacity_groups = ep computes the same routing as an ep-way run.
#pragma once

#include "oracles/models/subject.h"

#include "oracles/models/moe.h"

namespace passcheck::models {

enum class DeepSeekAttention { Latent, MultiHead };

struct DeepSeekV3Config {
  int64_t dim = 256;
  int64_t n_layers = 6;
  /// Layers [0, n_dense_layers) use the dense FFN, the others a mixture of experts.
  int64_t n_dense_layers = 1;
  int64_t n_heads = 16;
  int64_t vocab_size = 2048;
  int64_t dense_ffn_hidden = 1024;
  int64_t n_routed_experts = 8;
  int64_t top_k = 3;
  int64_t expert_hidden = 256;
  int64_t shared_expert_hidden = 512;
  double route_scale = 1.0;
  double load_balance_coeff = 1e-3;
  DeepSeekAttention attention = DeepSeekAttention::Latent;
  int64_t kv_lora_rank = 512;
  int64_t qk_nope_head_dim = 128;
  int64_t qk_rope_head_dim = 64;
  int64_t v_head_dim = 128;
  /// Upstream DeepSeek-V3 values (its rotary embedding also applies YaRN scaling, left out).
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  int64_t max_seq_len = 2048;
  int64_t batch_size = 4;
  int64_t seq_len = 64;
  /// Dense (every expert on every token) unless capacity_factor > 0 (capacity) or
  /// sparse is asked for.
  bool sparse_dispatch = false;
  double capacity_factor = 0;
  int64_t capacity_groups = 1;
};

std::unique_ptr<TrainingSubject> make_deepseek_v3_subject(const SubjectOptions& options,
                                                          const DeepSeekV3Config& config = {});

}  // namespace passcheck::models
