// The deepseek_v3 debug model of specs/models.md (torchtitan "debugmodel" sizes): 6
// transformer blocks of dim 256, layer 0 with a dense SwiGLU FFN, layers 1-5 with a
// mixture of experts (8 routed experts, top-3, softmax scores, one shared expert) and
// the auxiliary-loss-free load balancing of DeepSeek-V3 (an expert bias that only
// steers the choice of experts, updated between steps from the token counts).
//
// Two simplifications for the CPU build, both numerically self-consistent so the traced
// graph and eager execution still run the same program:
// - Attention is standard causal multi-head attention with rotary embeddings (the
//   llama3 block from layers.h), not MLA's low-rank compressed KV.
// - Dense dispatch: every routed expert runs on every token (bmm over the stacked
//   expert weights) and the results are combined with a dense [tokens, experts] weight
//   matrix that holds the gate weight of each chosen expert and 0 elsewhere. Upstream
//   gathers each expert's tokens, whose counts depend on the data; here every shape is
//   a function of batch and sequence only, so the step traces into one static graph
//   (and into graphs at other batch sizes from which symbolic shapes are derived).
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

#include <ATen/core/Tensor.h>

namespace passcheck::models {

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
  /// Upstream DeepSeek-V3 values (its rotary embedding also applies YaRN scaling,
  /// which the MHA simplification leaves out).
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  int64_t max_seq_len = 2048;
  int64_t batch_size = 4;
  int64_t seq_len = 64;
  /// 0: dense dispatch (every expert on every token); > 0: capacity dispatch (above).
  double capacity_factor = 0;
  int64_t capacity_groups = 1;
};

std::unique_ptr<TrainingSubject> make_deepseek_v3_subject(const SubjectOptions& options,
                                                          const DeepSeekV3Config& config = {});

/// Token-choice top-k routing of one MoE layer.
struct MoeRouting {
  at::Tensor scores;           ///< [T, E] float32 softmax of the router logits
  at::Tensor selected;         ///< [T, k] int64 chosen experts, by descending biased score
  at::Tensor chosen;           ///< [T, E] float32 one-hot rows of the choices (k ones per token)
  at::Tensor combine_weights;  ///< [T, E] gate weight of each chosen expert, 0 for the others
};

/// scores = softmax(logits in float32); experts chosen by top-k over scores +
/// expert_bias (the bias steers the choice only); gate weights are the unbiased scores
/// of the chosen experts times route_scale, no renormalisation over the k chosen.
/// combine_weights holds exactly the values of scattering the gathered gate weights
/// into zeros, computed as scores * chosen: its backward is a plain mul, whereas
/// gather's backward is a LibTorch composite that records scatter_add_ on the CPU but
/// scatter_add on the meta device, and meta and CPU tracing must record the same graph.
MoeRouting route_tokens(const at::Tensor& router_logits, const at::Tensor& expert_bias, int64_t top_k,
                        double route_scale);

/// [E] float32: how many tokens chose each expert (the one-hot choices summed over
/// tokens and k).
at::Tensor expert_token_counts(const MoeRouting& routing);

/// The load-balancing update made before each optimizer step, without gradient:
/// delta = coeff * sign(mean(counts) - counts); delta -= mean(delta);
/// expert_bias += delta; tokens_per_expert.zero_(). Under-used experts gain bias.
void update_expert_bias(at::Tensor& expert_bias, at::Tensor& tokens_per_expert, double coeff);

}  // namespace passcheck::models
