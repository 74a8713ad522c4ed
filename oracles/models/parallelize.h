// Parallelized debug models: how a subject built for one rank is split over a device mesh
// by its SubjectOptions::parallel plan, with the rank taken from dist::current_rank().
//
// - "fsdp" (SimpleFSDP): every parameter is stored as its S(0) shard over mesh dim "dp"
//   (the shard of the same full tensor the single-rank model initialises). Each use
//   unshards it: all_gather_into_tensor + wait_tensor, whose backward is
//   reduce_scatter_tensor("avg") + wait of the gradient (an autograd Function of its own,
//   like torchtitan's ReplicateComputation). Each dp rank trains its own slice of the
//   global batch, so the averaged gradient is the single-rank mean gradient.
// - "tp" (Megatron): wqkv (each of q, k, v by head group), w1 and w3 column-parallel over
//   "tp", wo and w2 row-parallel followed by all_reduce("sum") + wait; the inputs of the
//   column-parallel projections pass through dist::copy_to_group. Embeddings, norms and
//   the output projection are replicated. "fsdp,tp": TP shards, then S(0) over dp.
// - "fsdp2d" (FSDP over a 2-D mesh dp x tp, as autoparallel places weights S(0)S(0)): every
//   parameter's dim 0 is cut in dp*tp chunks and rank (d, t) stores chunk t*dp + d, so the
//   unshard is a chain: all_gather over "dp", then over "tp" (the ascending chain that
//   fuse-chained-allgathers turns into one gather over the column-major group "tp_dp").
//   Every rank trains its own batch slice; the backward reduce-scatters over tp then dp
//   ("avg" both), the global mean gradient.
// - "ep" (deepseek_v3): routed experts S(0) over "ep" (E/ep per rank); tokens travel to
//   their experts' ranks and back with all_to_all_single at a fixed per-expert capacity
//   (deepseek_v3.h). Each ep rank trains its own batch slice; the other (replicated)
//   parameters average their gradients over ep (all_reduce("avg") + wait in the
//   backward) and the expert weights scale theirs by 1/ep (they already receive every
//   rank's contribution through the all_to_all backward).
#pragma once

#include "oracles/models/subject.h"

#include <ATen/core/Tensor.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace passcheck::models {

/// A parallel plan resolved for the calling rank.
struct ParallelPlan {
  bool fsdp = false, tp = false, ep = false;
  /// "fsdp2d": fsdp shards over dp and tp together (tp_size/tp_index describe the tp dim).
  bool fsdp_over_tp = false;
  std::string mesh;                    ///< the mesh spec, "dp=2,tp=2"
  std::vector<std::string> mesh_dims;  ///< major to minor
  int64_t dp_size = 1, dp_index = 0, tp_size = 1, tp_index = 0, ep_size = 1, ep_index = 0;
  std::string fault;  ///< ParallelOptions::fault
  /// Heads of each block of a fused wqkv (q, k, v): {n_heads, n_kv_heads, n_kv_heads}
  /// under grouped-query attention; empty: three equal blocks.
  std::vector<int64_t> qkv_block_heads;
  /// Slices of the global batch: every dp and every ep rank trains its own, tp ranks share.
  int64_t batch_slices() const { return dp_size * ep_size * (fsdp_over_tp ? tp_size : 1); }
  int64_t batch_slice_index() const {
    return fsdp_over_tp ? dp_index * tp_size + tp_index : ep_index * dp_size + dp_index;
  }
  /// The group of every mesh dim ("dp_tp"): a barrier over the whole mesh.
  std::string world_group() const;
};

/// Resolves `options` for the calling rank (nullopt without a plan). Throws
/// std::invalid_argument when no rank is installed, the mesh differs from the rank's,
/// a plan word is unknown or not in `supported` for `model`, the mesh lacks a dim the
/// plan needs ("fsdp": "dp", "tp": "tp", "ep": "ep", "fsdp2d": "dp" and "tp") or has a dim
/// the plan leaves unused.
std::optional<ParallelPlan> resolve_plan(const std::string& model, const ParallelOptions& options,
                                         const std::vector<std::string>& supported);

/// How one parameter is split (applied in this order: tp, then ep, then fsdp).
struct ParameterSharding {
  int64_t tp_dim = -1;     ///< dim sharded over tp, -1 when replicated over tp
  /// Independent blocks along tp_dim, each sharded over tp, by relative size (fused q, k,
  /// v: {1, 1, 1}, or the heads of each under GQA); empty: one block.
  std::vector<int64_t> tp_block_parts;
  bool expert = false;     ///< dim 0 sharded over ep
};
/// The sharding of parameter `fqn` under `plan` (by its name in the debug models).
ParameterSharding sharding_of(const std::string& fqn, const ParallelPlan& plan);

/// Replaces every parameter of `root` (initialised as the single-rank model, or on meta)
/// by this rank's shard, installs the parameter access of the plan in every
/// ParameterUser, and sets the attention and feed-forward modules' tensor parallelism.
/// Throws std::invalid_argument naming the parameter whose size does not divide.
void parallelize(torch::nn::Module& root, const ParallelPlan& plan);

/// This rank's rows (dim 0) of every tensor of a global batch of batch_slices() slices.
std::vector<c10::IValue> batch_slice(const std::vector<c10::IValue>& global, const ParallelPlan& plan);

/// A language model's token batch for `step`: the whole batch without a plan, else this
/// rank's slice of the global batch (`batch` is per rank).
std::vector<c10::IValue> rank_token_batch(const std::optional<ParallelPlan>& plan, uint64_t seed, int64_t step,
                                          int64_t batch, int64_t seq, int64_t vocab, c10::Device device);

/// FQN -> placement per mesh dim ("S(d)", "R") of every parameter and buffer of `root`.
std::map<std::string, std::vector<std::string>> placements_of(torch::nn::Module& root, const ParallelPlan& plan);

/// The full single-rank value of parameter `fqn` from this rank's shard `local` (eager
/// collectives: every rank of the mesh calls it for the same parameters in the same order).
at::Tensor gather_full_parameter(const std::string& fqn, const at::Tensor& local, const ParallelPlan& plan);

}  // namespace passcheck::models
