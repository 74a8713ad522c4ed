// The mixture-of-experts layer every MoE model of the zoo shares (deepseek_v3,
// qwen3_moe, llama4, gpt_oss): a token-choice top-k router, routed experts with stacked
// weights, an optional shared expert, DeepSeek-V3's auxiliary-loss-free load balancing
// (an expert bias that steers the choice only, updated between steps from the token
// counts), and three dispatches that compute the same routed output:
// - Dense: every expert runs on every token (bmm over the stacked weights); the results
//   are combined with a dense [T, E] weight matrix (0 for the experts not chosen).
// - Capacity: each expert takes at most C tokens per group, dispatch and combine are
//   one-hot matrices applied with bmm; no shape depends on the data and expert
//   parallelism moves the dispatched rows with all_to_all_single (deepseek_v3.h).
// - Sparse (dropless, as upstream's grouped-mm experts): the T*k (token, expert) pairs
//   are sorted by expert with a stable sort, the experts run on their own rows only
//   through at::_grouped_mm (as torchtitan's experts) with the cumulative counts as int32
//   group offsets, and the
//   results return to token order through the inverse permutation and are summed over
//   the k choices in choice order. Shapes depend only on T and k, so the step traces
//   into one static graph, and every index used with index_select is a permutation, so
//   the backward's index_add never adds two rows into one (deterministic on any device).
// Router weights are gathered without `gather` (whose LibTorch backward records
// scatter_add_ on the CPU but scatter_add on meta): the chosen experts' scores are
// `scores * one_hot(choice)`, and a pair's weight is an index_select of that matrix.
#pragma once

#include "oracles/models/layers.h"

#include <ATen/core/Tensor.h>

namespace passcheck::models {

enum class ScoreFunction { Softmax, Sigmoid };
enum class MoeDispatch { Dense, Capacity, Sparse };
enum class ExpertActivation { SwiGLU, ClampedSwiGLU };

struct RouterConfig {
  int64_t top_k = 1;
  ScoreFunction score = ScoreFunction::Softmax;
  /// Divide the chosen experts' scores by their sum (qwen3_moe, gpt_oss).
  bool renormalize = false;
  double route_scale = 1.0;
};

/// Token-choice top-k routing of one MoE layer.
struct MoeRouting {
  at::Tensor scores;           ///< [T, E] float32 softmax or sigmoid of the router logits
  at::Tensor selected;         ///< [T, k] int64 chosen experts, by descending biased score
  at::Tensor chosen;           ///< [T, E] float32 one-hot rows of the choices (k ones per token)
  at::Tensor combine_weights;  ///< [T, E] gate weight of each chosen expert, 0 for the others
};

/// scores = score function of the logits in float32; experts chosen by top-k over scores
/// + expert_bias (the bias steers the choice only, undefined: none); gate weights are
/// the unbiased scores of the chosen experts, renormalised over the k chosen when asked
/// (w / (sum w + 1e-20)), times route_scale.
MoeRouting route_tokens(const at::Tensor& router_logits, const at::Tensor& expert_bias, const RouterConfig& router);

/// [E] float32: how many tokens chose each expert.
at::Tensor expert_token_counts(const MoeRouting& routing);

/// The load-balancing update made before each optimizer step, without gradient:
/// delta = coeff * sign(mean(counts) - counts); delta -= mean(delta);
/// expert_bias += delta; tokens_per_expert.zero_(). Under-used experts gain bias.
void update_expert_bias(at::Tensor& expert_bias, at::Tensor& tokens_per_expert, double coeff);

struct MoeConfig {
  int64_t dim = 256;
  int64_t n_experts = 8;
  int64_t expert_hidden = 256;
  int64_t shared_expert_hidden = 0;  ///< 0: no shared expert
  RouterConfig router;
  bool router_bias = false;            ///< the router gate has a bias (gpt_oss)
  ExpertActivation activation = ExpertActivation::SwiGLU;
  /// Multiply the router weight into the expert input instead of its output (llama4).
  bool score_before_experts = false;
  /// > 0: expert_bias / tokens_per_expert buffers and the balancing update.
  double load_balance_coeff = 1e-3;
  MoeDispatch dispatch = MoeDispatch::Sparse;
  double capacity_factor = 0;   ///< Capacity dispatch: per-expert capacity factor
  int64_t capacity_groups = 1;  ///< Capacity dispatch: equal groups of token rows
};

/// Routed experts with stacked weights, run on [E, N, dim] batches (dense and capacity
/// dispatch) or on rows grouped by expert (sparse dispatch).
class ExpertsImpl : public torch::nn::Module, public ParameterUser {
 public:
  /// x [E_local, N, dim] -> each expert's output on its N rows.
  virtual at::Tensor run_batched(const at::Tensor& x) = 0;
  /// rows [N, dim] grouped by expert; offsets [E] int64 end row of each expert's group;
  /// experts [N] int64 the expert of each row.
  virtual at::Tensor run_grouped(const at::Tensor& rows, const at::Tensor& offsets, const at::Tensor& experts) = 0;
};

/// SwiGLU experts: w1, w3 [E, hidden, dim], w2 [E, dim, hidden]; w2(silu(w1 x) * w3 x).
class SwiGLUExpertsImpl : public ExpertsImpl {
 public:
  SwiGLUExpertsImpl(int64_t n_experts, int64_t dim, int64_t hidden, const at::TensorOptions& options);
  at::Tensor run_batched(const at::Tensor& x) override;
  at::Tensor run_grouped(const at::Tensor& rows, const at::Tensor& offsets, const at::Tensor& experts) override;
  at::Tensor w1, w2, w3;
};

/// gpt_oss experts: mlp1 [E, 2 hidden, dim] with gate and up rows interleaved, biases
/// mlp1_bias [E, 2 hidden] and mlp2_bias [E, dim], mlp2 [E, dim, hidden];
/// gate = min(gate, 7), up = clamp(up, -7, 7), act = gate * sigmoid(1.702 gate) * (up + 1).
class ClampedSwiGLUExpertsImpl : public ExpertsImpl {
 public:
  ClampedSwiGLUExpertsImpl(int64_t n_experts, int64_t dim, int64_t hidden, const at::TensorOptions& options);
  at::Tensor run_batched(const at::Tensor& x) override;
  at::Tensor run_grouped(const at::Tensor& rows, const at::Tensor& offsets, const at::Tensor& experts) override;
  at::Tensor mlp1_weight, mlp1_bias, mlp2_weight, mlp2_bias;
};

/// The clamped SwiGLU of gpt_oss on h [..., 2 hidden] (gate, up interleaved).
at::Tensor clamped_swiglu(const at::Tensor& h);

/// The router's gate projection, under "router.gate" as upstream names it.
class RouterImpl : public torch::nn::Module {
 public:
  RouterImpl(int64_t dim, int64_t n_experts, bool bias, const at::TensorOptions& options);
  std::shared_ptr<LinearImpl> gate;
};

class MoEImpl : public torch::nn::Module {
 public:
  MoEImpl(const MoeConfig& config, const at::TensorOptions& options);
  /// x [B, S, dim] -> [B, S, dim] (flattened here, not by the caller, so a chunking
  /// interceptor on this module sees batch and sequence as separate dimensions).
  at::Tensor forward(const std::string& fqn, const at::Tensor& x);
  /// The balancing update (no-op without balancing). `count_group` (a mesh dim name, or
  /// empty) first sums tokens_per_expert over the ranks that train other tokens (dp,
  /// ep), so the bias follows the global counts and stays identical on every rank.
  void update_bias(const std::string& count_group = "");

  MoeConfig config;
  /// Expert parallelism over mesh dim "ep" (1: none; capacity dispatch only).
  int64_t ep_size = 1;
  std::shared_ptr<RouterImpl> router;
  std::shared_ptr<ExpertsImpl> experts;
  std::shared_ptr<SwiGLUFeedForwardImpl> shared_expert;
  at::Tensor expert_bias, tokens_per_expert;  // balancing only

 private:
  at::Tensor routed_dense(const std::string& fqn, const at::Tensor& tokens, const MoeRouting& routing);
  at::Tensor routed_at_capacity(const std::string& fqn, const at::Tensor& tokens, const MoeRouting& routing);
  at::Tensor routed_sparse(const std::string& fqn, const at::Tensor& tokens, const MoeRouting& routing);
};

}  // namespace passcheck::models
