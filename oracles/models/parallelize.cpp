// Parallelized debug models (parallelize.h): plan resolution, parameter sharding, the
// autograd Functions through which sharded and replicated parameters are used, batch
// slicing, placements and the gather back to full parameters.
#include "oracles/models/parallelize.h"

#include "framework/dist/collectives.h"
#include "framework/dist/mesh.h"
#include "oracles/models/layers.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/nn/module.h>
#include <torch/utils.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace passcheck::models {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// SimpleFSDP's unshard: forward all_gather + wait, backward reduce_scatter + wait of the
// gradient ("avg": the dp ranks' batch slices average to the global mean gradient).
class UnshardFunction : public torch::autograd::Function<UnshardFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& shard, int64_t group_size,
                            const std::string& group, const std::string& reduce_op) {
    ctx->saved_data["n"] = group_size;
    ctx->saved_data["g"] = group;
    ctx->saved_data["op"] = reduce_op;
    return dist::wait_tensor(dist::all_gather_into_tensor(shard, group_size, group));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor g = dist::wait_tensor(dist::reduce_scatter_tensor(
        grads[0].contiguous(), ctx->saved_data["op"].toStringRef(), ctx->saved_data["n"].toInt(),
        ctx->saved_data["g"].toStringRef()));
    return {g, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// Identity forward, gradient times `scale` (expert weights under EP: 1/ep, a power of two
// for the usual sizes, so exact).
class ScaleGradientFunction : public torch::autograd::Function<ScaleGradientFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& param, double scale) {
    ctx->saved_data["s"] = scale;
    return param;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {grads[0] * ctx->saved_data["s"].toDouble(), at::Tensor()};
  }
};

class PlanAccess : public ParameterAccess {
 public:
  enum class Kind { Unshard, AverageGradient, ScaleGradient };
  struct Rule {
    Kind kind;
    std::string group;
    int64_t size = 1;
    std::string reduce_op;
    double scale = 1;
    /// Unshard over a second group after the first ("fsdp2d": dp, then tp); empty: none.
    std::string then_group;
    int64_t then_size = 1;
  };
  void add(const at::Tensor& param, Rule rule) { rules_[param.unsafeGetTensorImpl()] = std::move(rule); }
  at::Tensor use(const at::Tensor& stored) const override {
    auto it = rules_.find(stored.unsafeGetTensorImpl());
    if (it == rules_.end()) return stored;
    const Rule& r = it->second;
    switch (r.kind) {
      case Kind::Unshard: {
        at::Tensor t = UnshardFunction::apply(stored, r.size, r.group, r.reduce_op);
        return r.then_group.empty() ? t : UnshardFunction::apply(t, r.then_size, r.then_group, r.reduce_op);
      }
      case Kind::AverageGradient:
        // Replicated over ranks that train different batch slices: the gradient is averaged.
        return dist::copy_to_group(stored, r.group, "avg");
      case Kind::ScaleGradient: return ScaleGradientFunction::apply(stored, r.scale);
    }
    return stored;
  }

 private:
  std::unordered_map<const c10::TensorImpl*, Rule> rules_;
};

void check_divides(const std::string& fqn, const at::Tensor& t, int64_t dim, int64_t parts, const std::string& why) {
  if (t.dim() <= dim || t.size(dim) % parts != 0)
    throw std::invalid_argument("parameter '" + fqn + "' of sizes " + c10::str(t.sizes()) + " cannot be split in " +
                                std::to_string(parts) + " along dim " + std::to_string(dim) + " for " + why);
}

// The sizes along tp_dim of the blocks of a parameter of sizes `shape`, each of which
// divides by the tp size.
std::vector<int64_t> block_sizes(const std::string& fqn, at::IntArrayRef shape, const ParameterSharding& s,
                                 const ParallelPlan& plan) {
  const std::vector<int64_t> parts = s.tp_block_parts.empty() ? std::vector<int64_t>{1} : s.tp_block_parts;
  int64_t total = 0;
  for (int64_t p : parts) total += p;
  const int64_t length = static_cast<int64_t>(shape.size()) > s.tp_dim ? shape[s.tp_dim] : 0;
  std::vector<int64_t> sizes;
  for (int64_t p : parts) {
    if (length == 0 || length % total != 0 || (length / total * p) % plan.tp_size != 0)
      throw std::invalid_argument("parameter '" + fqn + "' of sizes " + c10::str(shape) + " cannot be split in " +
                                  std::to_string(static_cast<int64_t>(parts.size()) * plan.tp_size) + " along dim " +
                                  std::to_string(s.tp_dim) + " for tp=" + std::to_string(plan.tp_size));
    sizes.push_back(length / total * p);
  }
  return sizes;
}

at::Tensor local_shard(const std::string& fqn, const at::Tensor& full, const ParameterSharding& s,
                       const ParallelPlan& plan) {
  at::Tensor t = full;
  if (s.tp_dim >= 0) {
    std::vector<at::Tensor> parts;
    for (const at::Tensor& block : t.split_with_sizes(block_sizes(fqn, t.sizes(), s, plan), s.tp_dim)) {
      int64_t len = block.size(s.tp_dim) / plan.tp_size;
      parts.push_back(block.narrow(s.tp_dim, plan.tp_index * len, len));
    }
    t = at::cat(parts, s.tp_dim);
  }
  if (s.expert) {
    check_divides(fqn, t, 0, plan.ep_size, "ep=" + std::to_string(plan.ep_size));
    int64_t len = t.size(0) / plan.ep_size;
    t = t.narrow(0, plan.ep_index * len, len);
  }
  if (plan.fsdp && plan.fsdp_over_tp) {
    const int64_t parts = plan.dp_size * plan.tp_size;
    check_divides(fqn, t, 0, parts, "fsdp over dp=" + std::to_string(plan.dp_size) + " x tp=" + std::to_string(plan.tp_size));
    int64_t len = t.size(0) / parts;
    t = t.narrow(0, (plan.tp_index * plan.dp_size + plan.dp_index) * len, len);
  } else if (plan.fsdp) {
    check_divides(fqn, t, 0, plan.dp_size, "fsdp over dp=" + std::to_string(plan.dp_size));
    int64_t len = t.size(0) / plan.dp_size;
    t = t.narrow(0, plan.dp_index * len, len);
  }
  return t.contiguous().clone();
}

}  // namespace

std::string ParallelPlan::world_group() const {
  std::string out;
  for (const auto& d : mesh_dims) out += (out.empty() ? "" : "_") + d;
  return out;
}

std::optional<ParallelPlan> resolve_plan(const std::string& model, const ParallelOptions& options,
                                         const std::vector<std::string>& supported) {
  if (!options.enabled()) return std::nullopt;
  const dist::RankContext* rank = dist::current_rank_or_null();
  if (!rank || !rank->mesh)
    throw std::invalid_argument("parallel plan '" + options.plan + "' of model " + model +
                                " needs a rank of a device mesh, but none is installed on this thread (run it under "
                                "a mesh backend)");
  dist::DeviceMesh mesh = options.mesh.empty() ? *rank->mesh : dist::DeviceMesh::parse(options.mesh);
  if (mesh != *rank->mesh)
    throw std::invalid_argument("parallel plan '" + options.plan + "' names mesh '" + mesh.str() +
                                "' but the rank runs on mesh '" + rank->mesh->str() + "'");
  ParallelPlan plan;
  plan.mesh = mesh.str();
  for (const auto& [name, size] : mesh.dims()) plan.mesh_dims.push_back(name);
  plan.fault = options.fault;
  if (!plan.fault.empty() && plan.fault != "fsdp-sum-gradient" && plan.fault != "tp-no-copy-to-group" &&
      plan.fault != "moe-local-counts")
    throw std::invalid_argument("unknown parallel fault '" + plan.fault +
                                "' (known: fsdp-sum-gradient, tp-no-copy-to-group, moe-local-counts)");
  std::vector<std::string> needed_dims;
  std::stringstream words(options.plan);
  std::string word;
  while (std::getline(words, word, ',')) {
    word.erase(std::remove(word.begin(), word.end(), ' '), word.end());
    if (word != "fsdp" && word != "tp" && word != "ep" && word != "fsdp2d")
      throw std::invalid_argument("unknown parallelism '" + word + "' in plan '" + options.plan +
                                  "' (known: fsdp, fsdp2d, tp, ep)");
    if (std::find(supported.begin(), supported.end(), word) == supported.end())
      throw std::invalid_argument("model " + model + " does not support parallelism '" + word + "' (it supports: " +
                                  join(supported) + ")");
    const bool two_d = word == "fsdp2d";
    bool& flag = word == "fsdp" || two_d ? plan.fsdp : word == "tp" ? plan.tp : plan.ep;
    if (flag) throw std::invalid_argument("parallelism '" + word + "' repeated in plan '" + options.plan + "'");
    flag = true;
    plan.fsdp_over_tp |= two_d;
    std::vector<std::string> dims = two_d ? std::vector<std::string>{"dp", "tp"}
                                          : std::vector<std::string>{word == "fsdp" ? "dp" : word};
    for (const std::string& dim : dims) {
      if (!mesh.has_dim(dim))
        throw std::invalid_argument("plan '" + options.plan + "' needs mesh dim '" + dim + "' for " + word +
                                    ", but mesh '" + mesh.str() + "' has none");
      needed_dims.push_back(dim);
    }
  }
  if (plan.fsdp_over_tp && plan.tp)
    throw std::invalid_argument("plan '" + options.plan + "': fsdp2d shards over tp itself and cannot be combined with tp");
  if (plan.ep && plan.fsdp)
    throw std::invalid_argument("plan '" + options.plan + "': ep combined with fsdp is not implemented");
  for (const auto& [name, size] : mesh.dims())
    if (std::find(needed_dims.begin(), needed_dims.end(), name) == needed_dims.end())
      throw std::invalid_argument("mesh dim '" + name + "' of mesh '" + mesh.str() + "' is not used by plan '" +
                                  options.plan + "'");
  if (plan.fsdp) plan.dp_size = mesh.size("dp"), plan.dp_index = mesh.coordinate(rank->rank, "dp");
  if (plan.tp || plan.fsdp_over_tp) plan.tp_size = mesh.size("tp"), plan.tp_index = mesh.coordinate(rank->rank, "tp");
  if (plan.ep) plan.ep_size = mesh.size("ep"), plan.ep_index = mesh.coordinate(rank->rank, "ep");
  return plan;
}

ParameterSharding sharding_of(const std::string& fqn, const ParallelPlan& plan) {
  ParameterSharding s;
  if (plan.tp) {
    if (ends_with(fqn, "attention.wqkv.weight"))
      s.tp_dim = 0, s.tp_block_parts = plan.qkv_block_heads.empty() ? std::vector<int64_t>{1, 1, 1} : plan.qkv_block_heads;
    else if (ends_with(fqn, "feed_forward.w1.weight") || ends_with(fqn, "feed_forward.w3.weight")) s.tp_dim = 0;
    else if (ends_with(fqn, "attention.wo.weight") || ends_with(fqn, "feed_forward.w2.weight")) s.tp_dim = 1;
  }
  if (plan.ep && fqn.find(".moe.experts.") != std::string::npos) s.expert = true;
  return s;
}

namespace {

bool tied_already_sharded(const at::Tensor& p, const at::Tensor& shard) {
  return p.storage().unsafeGetStorageImpl() == shard.storage().unsafeGetStorageImpl() && p.sizes() == shard.sizes();
}

}  // namespace

void parallelize(torch::nn::Module& root, const ParallelPlan& plan) {
  auto access = std::make_shared<PlanAccess>();
  {
    torch::NoGradGuard no_grad;
    // A tied parameter (one storage under several FQNs) keeps one shard: the later FQNs
    // read the first one's storage again after sharding.
    std::map<const c10::StorageImpl*, at::Tensor> shard_of_storage;
    for (auto& item : root.named_parameters(/*recurse=*/true)) {
      at::Tensor& p = item.value();
      ParameterSharding s = sharding_of(item.key(), plan);
      const c10::StorageImpl* storage = p.storage().unsafeGetStorageImpl();
      auto tied = shard_of_storage.find(storage);
      at::Tensor shard = tied != shard_of_storage.end() ? tied->second : local_shard(item.key(), p, s, plan);
      shard_of_storage.emplace(storage, shard);
      shard_of_storage.emplace(shard.storage().unsafeGetStorageImpl(), shard);  // the same tensor registered twice
      if (!tied_already_sharded(p, shard)) p.set_data(shard);
      if (plan.fsdp) {
        PlanAccess::Rule rule{PlanAccess::Kind::Unshard, "dp", plan.dp_size,
                              plan.fault == "fsdp-sum-gradient" ? "sum" : "avg", 1, "", 1};
        if (plan.fsdp_over_tp) rule.then_group = "tp", rule.then_size = plan.tp_size;
        access->add(p, rule);
      }
      else if (plan.ep && s.expert)
        access->add(p, {PlanAccess::Kind::ScaleGradient, "ep", plan.ep_size, "", 1.0 / plan.ep_size, "", 1});
      else if (plan.ep)
        access->add(p, {PlanAccess::Kind::AverageGradient, "ep", plan.ep_size, "", 1.0, "", 1});
    }
  }
  TensorParallelism tp;
  if (plan.tp) tp = TensorParallelism{"tp", plan.tp_size, plan.fault != "tp-no-copy-to-group"};
  for (const auto& m : root.modules(/*include_self=*/true)) {
    if (auto* user = dynamic_cast<ParameterUser*>(m.get())) user->access = access;
    if (auto* attention = dynamic_cast<CausalSelfAttentionImpl*>(m.get())) {
      const int64_t head_groups = plan.tp ? plan.tp_size : 1;  // fsdp2d's tp dim shards no heads
      if (attention->n_heads % head_groups != 0)
        throw std::invalid_argument(std::to_string(attention->n_heads) + " attention heads cannot be split over tp=" +
                                    std::to_string(head_groups));
      if (attention->n_kv_heads % head_groups != 0)
        throw std::invalid_argument(std::to_string(attention->n_kv_heads) + " kv heads cannot be split over tp=" +
                                    std::to_string(head_groups));
      attention->n_local_heads = attention->n_heads / head_groups;
      attention->n_local_kv_heads = attention->n_kv_heads / head_groups;
      attention->tp = tp;
    }
    if (auto* ffn = dynamic_cast<SwiGLUFeedForwardImpl*>(m.get())) ffn->tp = tp;
  }
}

std::vector<c10::IValue> batch_slice(const std::vector<c10::IValue>& global, const ParallelPlan& plan) {
  std::vector<c10::IValue> out;
  for (const c10::IValue& v : global) {
    if (!v.isTensor()) {
      out.push_back(v);
      continue;
    }
    const at::Tensor& t = v.toTensor();
    int64_t rows = t.size(0) / plan.batch_slices();
    out.push_back(t.narrow(0, plan.batch_slice_index() * rows, rows).contiguous());
  }
  return out;
}

std::map<std::string, std::vector<std::string>> placements_of(torch::nn::Module& root, const ParallelPlan& plan) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& item : root.named_parameters(true)) {
    ParameterSharding s = sharding_of(item.key(), plan);
    std::vector<std::string> per_dim;
    for (const std::string& dim : plan.mesh_dims) {
      if (dim == "dp") per_dim.push_back(plan.fsdp ? "S(0)" : "R");
      else if (dim == "tp" && plan.fsdp_over_tp) per_dim.push_back("S(0)");
      else if (dim == "tp") per_dim.push_back(s.tp_dim >= 0 ? "S(" + std::to_string(s.tp_dim) + ")" : "R");
      else if (dim == "ep") per_dim.push_back(s.expert ? "S(0)" : "R");
      else per_dim.push_back("R");
    }
    out[item.key()] = per_dim;
  }
  for (const auto& item : root.named_buffers(true))
    out[item.key()] = std::vector<std::string>(plan.mesh_dims.size(), "R");
  return out;
}

at::Tensor gather_full_parameter(const std::string& fqn, const at::Tensor& local, const ParallelPlan& plan) {
  torch::NoGradGuard no_grad;
  ParameterSharding s = sharding_of(fqn, plan);
  at::Tensor t = local.detach().contiguous();
  if (plan.fsdp) t = dist::wait_tensor(dist::all_gather_into_tensor(t, plan.dp_size, "dp"));
  if (plan.fsdp_over_tp) t = dist::wait_tensor(dist::all_gather_into_tensor(t, plan.tp_size, "tp"));
  if (s.expert) t = dist::wait_tensor(dist::all_gather_into_tensor(t, plan.ep_size, "ep"));
  if (s.tp_dim >= 0) {
    // Gathered blocks come rank by rank; each rank holds its part of every block.
    at::Tensor moved = t.movedim(s.tp_dim, 0).contiguous();
    at::Tensor g = dist::wait_tensor(dist::all_gather_into_tensor(moved, plan.tp_size, "tp"));
    std::vector<int64_t> full_sizes = t.sizes().vec();
    full_sizes[s.tp_dim] *= plan.tp_size;
    std::vector<int64_t> local_blocks = block_sizes(fqn, full_sizes, s, plan);
    for (int64_t& rows : local_blocks) rows /= plan.tp_size;
    // Rank r's rows are its part of every block; the full tensor is block after block.
    std::vector<std::vector<at::Tensor>> by_block(local_blocks.size());
    for (const at::Tensor& rank_rows : g.chunk(plan.tp_size, 0)) {
      std::vector<at::Tensor> blocks = rank_rows.split_with_sizes(local_blocks, 0);
      for (size_t b = 0; b < blocks.size(); ++b) by_block[b].push_back(blocks[b]);
    }
    std::vector<at::Tensor> ordered;
    for (const auto& parts : by_block) ordered.push_back(at::cat(parts, 0));
    t = at::cat(ordered, 0).movedim(0, s.tp_dim).contiguous();
  }
  return t;
}

std::vector<c10::IValue> rank_token_batch(const std::optional<ParallelPlan>& plan, uint64_t seed, int64_t step,
                                          int64_t batch, int64_t seq, int64_t vocab, c10::Device device) {
  if (!plan) return token_batch(seed, step, batch, seq, vocab, device);
  return batch_slice(token_batch(seed, step, batch * plan->batch_slices(), seq, vocab, device), *plan);
}

}  // namespace passcheck::models
