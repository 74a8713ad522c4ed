// The shared mixture-of-experts layer (see moe.h).
#include "oracles/models/moe.h"

#include "framework/dist/collectives.h"
#include "framework/trace/module_scope.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/utils.h>

#include <cmath>
#include <stdexcept>

namespace passcheck::models {

using trace::call_module;

MoeRouting route_tokens(const at::Tensor& router_logits, const at::Tensor& expert_bias, const RouterConfig& router) {
  MoeRouting r;
  at::Tensor logits = router_logits.to(at::kFloat);
  r.scores = router.score == ScoreFunction::Softmax ? at::softmax(logits, -1) : at::sigmoid(logits);
  r.selected = std::get<1>(at::topk(expert_bias.defined() ? r.scores + expert_bias : r.scores, router.top_k, -1));
  // zeros_like rather than zeros({T, E}): no token count is baked into the graph. (Not
  // at::one_hot either: it checks its indices with .item(), which a meta trace cannot.)
  r.chosen = at::zeros_like(r.scores).scatter(-1, r.selected, 1.0);
  at::Tensor weights = r.scores * r.chosen;
  if (router.renormalize) weights = weights / (weights.sum(-1, /*keepdim=*/true) + 1e-20);
  r.combine_weights = weights * router.route_scale;
  return r;
}

at::Tensor expert_token_counts(const MoeRouting& routing) { return routing.chosen.sum(0); }

void update_expert_bias(at::Tensor& expert_bias, at::Tensor& tokens_per_expert, double coeff) {
  torch::NoGradGuard no_grad;
  at::Tensor delta = coeff * at::sign(tokens_per_expert.mean() - tokens_per_expert);
  delta = delta - delta.mean();
  expert_bias.add_(delta);
  tokens_per_expert.zero_();
}

// ---- experts ---------------------------------------------------------------------------

SwiGLUExpertsImpl::SwiGLUExpertsImpl(int64_t n_experts, int64_t dim, int64_t hidden, const at::TensorOptions& o) {
  w1 = register_parameter("w1", at::empty({n_experts, hidden, dim}, o));
  w2 = register_parameter("w2", at::empty({n_experts, dim, hidden}, o));
  w3 = register_parameter("w3", at::empty({n_experts, hidden, dim}, o));
}

at::Tensor SwiGLUExpertsImpl::run_batched(const at::Tensor& x) {
  at::Tensor gate = at::bmm(x, param(w1).transpose(1, 2));
  at::Tensor up = at::bmm(x, param(w3).transpose(1, 2));
  return at::bmm(at::silu(gate) * up, param(w2).transpose(1, 2));
}

at::Tensor SwiGLUExpertsImpl::run_grouped(const at::Tensor& rows, const at::Tensor& offsets, const at::Tensor&) {
  at::Tensor gate = at::_grouped_mm(rows, param(w1).transpose(1, 2), offsets);
  at::Tensor up = at::_grouped_mm(rows, param(w3).transpose(1, 2), offsets);
  return at::_grouped_mm(at::silu(gate) * up, param(w2).transpose(1, 2), offsets);
}

at::Tensor clamped_swiglu(const at::Tensor& h) {
  constexpr double kLimit = 7.0, kAlpha = 1.702;
  at::Tensor gate = h.slice(-1, 0, c10::nullopt, 2);
  at::Tensor up = h.slice(-1, 1, c10::nullopt, 2);
  gate = at::clamp(gate, c10::nullopt, kLimit);
  up = at::clamp(up, -kLimit, kLimit);
  return gate * at::sigmoid(gate * kAlpha) * (up + 1);
}

ClampedSwiGLUExpertsImpl::ClampedSwiGLUExpertsImpl(int64_t n_experts, int64_t dim, int64_t hidden,
                                                   const at::TensorOptions& o) {
  mlp1_weight = register_parameter("mlp1_weight", at::empty({n_experts, 2 * hidden, dim}, o));
  mlp1_bias = register_parameter("mlp1_bias", at::empty({n_experts, 2 * hidden}, o));
  mlp2_weight = register_parameter("mlp2_weight", at::empty({n_experts, dim, hidden}, o));
  mlp2_bias = register_parameter("mlp2_bias", at::empty({n_experts, dim}, o));
}

at::Tensor ClampedSwiGLUExpertsImpl::run_batched(const at::Tensor& x) {
  at::Tensor h = at::bmm(x, param(mlp1_weight).transpose(1, 2)) + param(mlp1_bias).unsqueeze(1);
  return at::bmm(clamped_swiglu(h), param(mlp2_weight).transpose(1, 2)) + param(mlp2_bias).unsqueeze(1);
}

at::Tensor ClampedSwiGLUExpertsImpl::run_grouped(const at::Tensor& rows, const at::Tensor& offsets,
                                                 const at::Tensor& experts) {
  // A row's bias is its expert's: one-hot rows times the stacked biases (an mm, whose
  // backward sums each expert's rows in a fixed order, unlike index_add with repeats).
  at::Tensor b1 = param(mlp1_bias), b2 = param(mlp2_bias);  // whole, also when stored as a shard
  at::Tensor one_hot = experts.unsqueeze(1).eq(at::arange(b1.size(0), experts.options())).to(rows.scalar_type());
  at::Tensor h = at::_grouped_mm(rows, param(mlp1_weight).transpose(1, 2), offsets) + at::mm(one_hot, b1);
  return at::_grouped_mm(clamped_swiglu(h), param(mlp2_weight).transpose(1, 2), offsets) + at::mm(one_hot, b2);
}

// ---- the layer -------------------------------------------------------------------------

RouterImpl::RouterImpl(int64_t dim, int64_t n_experts, bool bias, const at::TensorOptions& o) {
  gate = register_module("gate", std::make_shared<LinearImpl>(dim, n_experts, o, bias));
}

MoEImpl::MoEImpl(const MoeConfig& c, const at::TensorOptions& o) : config(c) {
  if (c.router.top_k < 1 || c.router.top_k > c.n_experts)
    throw std::invalid_argument("MoE top_k " + std::to_string(c.router.top_k) + " is not in [1, " +
                                std::to_string(c.n_experts) + "]");
  if (c.score_before_experts && c.dispatch != MoeDispatch::Sparse)
    throw std::invalid_argument("MoE score_before_experts needs the sparse dispatch");
  if (c.dispatch == MoeDispatch::Capacity && c.capacity_factor <= 0)
    throw std::invalid_argument("MoE capacity dispatch needs capacity_factor > 0");
  router = register_module("router", std::make_shared<RouterImpl>(c.dim, c.n_experts, c.router_bias, o));
  if (c.activation == ExpertActivation::SwiGLU)
    experts = register_module("experts", std::make_shared<SwiGLUExpertsImpl>(c.n_experts, c.dim, c.expert_hidden, o));
  else
    experts =
        register_module("experts", std::make_shared<ClampedSwiGLUExpertsImpl>(c.n_experts, c.dim, c.expert_hidden, o));
  if (c.shared_expert_hidden > 0)
    shared_expert =
        register_module("shared_expert", std::make_shared<SwiGLUFeedForwardImpl>(c.dim, c.shared_expert_hidden, o));
  if (c.load_balance_coeff > 0) {
    at::TensorOptions f32 = o.dtype(at::kFloat);
    expert_bias = register_buffer("expert_bias", at::zeros({c.n_experts}, f32));
    tokens_per_expert = register_buffer("tokens_per_expert", at::zeros({c.n_experts}, f32));
  }
}

at::Tensor MoEImpl::forward(const std::string& fqn, const at::Tensor& x) {
  at::Tensor tokens = x.flatten(0, 1);
  at::Tensor logits =
      call_module(fqn + ".router.gate", tokens, [this](const at::Tensor& in) { return router->gate->forward(in); });
  MoeRouting routing = route_tokens(logits, expert_bias, config.router);
  if (is_training() && tokens_per_expert.defined()) {
    // Part of the traced graph: an in-place add on a buffer input, run once per step
    // (twice, in chunk order, under the eager-chunked oracle).
    torch::NoGradGuard no_grad;
    tokens_per_expert.add_(expert_token_counts(routing));
  }
  at::Tensor routed;
  switch (config.dispatch) {
    case MoeDispatch::Dense: routed = routed_dense(fqn, tokens, routing); break;
    case MoeDispatch::Capacity: routed = routed_at_capacity(fqn, tokens, routing); break;
    case MoeDispatch::Sparse: routed = routed_sparse(fqn, tokens, routing); break;
  }
  if (shared_expert)
    routed = routed + call_module(fqn + ".shared_expert", tokens, [this, fqn](const at::Tensor& in) {
               return shared_expert->forward(fqn + ".shared_expert", in);
             });
  return routed.view(x.sizes());
}

void MoEImpl::update_bias(const std::string& count_group) {
  if (!expert_bias.defined()) return;
  if (!count_group.empty()) {
    torch::NoGradGuard no_grad;
    tokens_per_expert.copy_(dist::wait_tensor(dist::all_reduce(tokens_per_expert, "sum", count_group)));
  }
  update_expert_bias(expert_bias, tokens_per_expert, config.load_balance_coeff);
}

at::Tensor MoEImpl::routed_dense(const std::string& fqn, const at::Tensor& tokens, const MoeRouting& routing) {
  at::Tensor weights = routing.combine_weights.to(tokens.scalar_type());  // [T, E]
  at::Tensor per_expert = call_module(fqn + ".experts", tokens, [this](const at::Tensor& in) {
    return experts->run_batched(in.unsqueeze(0).expand({config.n_experts, in.size(0), in.size(1)}));
  });
  return (per_expert * weights.t().unsqueeze(-1)).sum(0);  // [T, dim]
}

at::Tensor MoEImpl::routed_at_capacity(const std::string& fqn, const at::Tensor& tokens, const MoeRouting& routing) {
  const int64_t groups = ep_size > 1 ? 1 : config.capacity_groups, t = tokens.size(0), dim = tokens.size(1);
  if (t % groups != 0)
    throw std::invalid_argument(fqn + ": " + std::to_string(t) + " tokens cannot be split in " +
                                std::to_string(groups) + " capacity groups");
  const int64_t tg = t / groups, e = config.n_experts, e_local = e / ep_size;
  const int64_t c = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(static_cast<double>(tg * config.router.top_k) *
                                                                        config.capacity_factor / static_cast<double>(e))));
  at::Tensor chosen = routing.chosen.view({groups, tg, e});
  at::Tensor slot = chosen.cumsum(1) - 1;  // exact: small integers in float32
  at::Tensor slots = at::arange(c, chosen.options());
  at::Tensor one_hot = slot.unsqueeze(-1).eq(slots).to(chosen.scalar_type()) * chosen.unsqueeze(-1);  // [G,Tg,E,C]
  at::Tensor dispatch = one_hot.reshape({groups, tg, e * c}).to(tokens.scalar_type());
  at::Tensor combine =
      (one_hot * routing.combine_weights.view({groups, tg, e, 1})).reshape({groups, tg, e * c}).to(tokens.scalar_type());
  at::Tensor sent = at::bmm(dispatch.transpose(1, 2), tokens.view({groups, tg, dim}));  // [G, E*C, dim]
  int64_t sources = groups;
  if (ep_size > 1) {
    sent = dist::wait_tensor(dist::all_to_all_single(sent.reshape({e * c, dim}), {}, {}, "ep"));
    sources = ep_size;  // rows now come from every ep rank, for this rank's experts
  }
  at::Tensor expert_in = sent.reshape({sources, e_local, c, dim}).permute({1, 0, 2, 3}).reshape({e_local, sources * c, dim});
  at::Tensor expert_out =
      call_module(fqn + ".experts", expert_in, [this](const at::Tensor& in) { return experts->run_batched(in); });
  at::Tensor back = expert_out.view({e_local, sources, c, dim}).permute({1, 0, 2, 3}).reshape({sources * e_local * c, dim});
  if (ep_size > 1) back = dist::wait_tensor(dist::all_to_all_single(back, {}, {}, "ep"));
  return at::bmm(combine, back.view({groups, e * c, dim})).view({t, dim});
}

at::Tensor MoEImpl::routed_sparse(const std::string& fqn, const at::Tensor& tokens, const MoeRouting& routing) {
  const int64_t t = tokens.size(0), dim = tokens.size(1), k = config.router.top_k, e = config.n_experts;
  at::Tensor choices = routing.selected.flatten();  // pair p = token * k + slot
  at::Tensor order = std::get<1>(at::sort(choices, /*stable=*/true, /*dim=*/0, /*descending=*/false));
  at::Tensor inverse = at::zeros_like(order).scatter(0, order, at::arange(t * k, order.options()));
  at::Tensor row_experts = choices.index_select(0, order);
  at::Tensor row_tokens = at::floor_divide(order, k);
  at::Tensor row_weights = routing.combine_weights.flatten().index_select(0, row_tokens * e + row_experts);
  // int32 end rows, as _grouped_mm takes them (exact: integer counts in float32).
  at::Tensor offsets = expert_token_counts(routing).cumsum(0).to(at::kInt);
  at::Tensor rows = tokens.unsqueeze(1).expand({t, k, dim}).reshape({t * k, dim}).index_select(0, order);
  at::Tensor weights = row_weights.unsqueeze(1).to(tokens.scalar_type());
  if (config.score_before_experts) rows = rows * weights;
  at::Tensor out = call_module(fqn + ".experts", rows, [this, offsets, row_experts](const at::Tensor& in) {
    return experts->run_grouped(in, offsets, row_experts);
  });
  if (!config.score_before_experts) out = out * weights;
  return out.index_select(0, inverse).view({t, k, dim}).sum(1);
}

}  // namespace passcheck::models
