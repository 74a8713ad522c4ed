// deepseek_v3 debug model (see deepseek_v3.h for the two CPU-build simplifications).
// Module boundaries: "layers.N" takes only the hidden state [B, S, dim] (rotary tables
// are captured by value), and "layers.N.moe" takes x [B, S, dim] unflattened, so an
// interceptor (the eager-chunked oracle) can split batch (dim 0) or sequence (dim 1).
#include "oracles/models/deepseek_v3.h"

#include "framework/trace/module_scope.h"
#include "framework/dist/collectives.h"
#include "oracles/models/layers.h"
#include "oracles/models/parallelize.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <cmath>
#include <tuple>

namespace passcheck::models {

MoeRouting route_tokens(const at::Tensor& router_logits, const at::Tensor& expert_bias, int64_t top_k,
                        double route_scale) {
  MoeRouting r;
  r.scores = at::softmax(router_logits.to(at::kFloat), -1);
  r.selected = std::get<1>(at::topk(r.scores + expert_bias, top_k, -1));
  // zeros_like rather than zeros({T, E}): no token count is baked into the graph. (Not
  // at::one_hot either: it checks its indices with .item(), which a meta trace cannot.)
  r.chosen = at::zeros_like(r.scores).scatter(-1, r.selected, 1.0);
  r.combine_weights = r.scores * r.chosen * route_scale;
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

namespace {

using trace::call_module;

// Routed experts with stacked weights: w1, w3 [E, hidden, dim], w2 [E, dim, hidden].
class GroupedExpertsImpl : public torch::nn::Module, public ParameterUser {
 public:
  GroupedExpertsImpl(int64_t n_experts, int64_t dim, int64_t hidden, const at::TensorOptions& o) {
    w1 = register_parameter("w1", at::empty({n_experts, hidden, dim}, o));
    w2 = register_parameter("w2", at::empty({n_experts, dim, hidden}, o));
    w3 = register_parameter("w3", at::empty({n_experts, hidden, dim}, o));
  }
  // tokens [T, dim] -> [E, T, dim]: every expert's SwiGLU on every token (dense dispatch).
  at::Tensor forward(const at::Tensor& tokens) {
    at::Tensor x = tokens.unsqueeze(0).expand({w1.size(0), tokens.size(0), tokens.size(1)});
    return run(x);
  }
  // x [E_local, N, dim] -> each expert's SwiGLU on its N rows.
  at::Tensor run(const at::Tensor& x) {
    at::Tensor gate = at::bmm(x, param(w1).transpose(1, 2));
    at::Tensor up = at::bmm(x, param(w3).transpose(1, 2));
    return at::bmm(at::silu(gate) * up, param(w2).transpose(1, 2));
  }
  at::Tensor w1, w2, w3;
};

class RouterImpl : public torch::nn::Module {
 public:
  RouterImpl(int64_t dim, int64_t n_experts, const at::TensorOptions& o) {
    gate = register_module("gate", std::make_shared<LinearImpl>(dim, n_experts, o));
  }
  std::shared_ptr<LinearImpl> gate;
};

class MoEImpl : public torch::nn::Module {
 public:
  MoEImpl(const DeepSeekV3Config& c, const at::TensorOptions& o)
      : top_k(c.top_k),
        route_scale(c.route_scale),
        n_experts(c.n_routed_experts),
        capacity_factor(c.capacity_factor),
        capacity_groups(c.capacity_groups) {
    router = register_module("router", std::make_shared<RouterImpl>(c.dim, c.n_routed_experts, o));
    experts = register_module("experts",
                              std::make_shared<GroupedExpertsImpl>(c.n_routed_experts, c.dim, c.expert_hidden, o));
    shared_expert =
        register_module("shared_expert", std::make_shared<SwiGLUFeedForwardImpl>(c.dim, c.shared_expert_hidden, o));
    at::TensorOptions f32 = o.dtype(at::kFloat);
    expert_bias = register_buffer("expert_bias", at::zeros({c.n_routed_experts}, f32));
    tokens_per_expert = register_buffer("tokens_per_expert", at::zeros({c.n_routed_experts}, f32));
  }

  // x: [B, S, dim], flattened here (not by the caller) so a chunking interceptor on this
  // module sees batch and sequence as separate dimensions.
  at::Tensor forward(const std::string& fqn, const at::Tensor& x) {
    at::Tensor tokens = x.flatten(0, 1);
    at::Tensor logits = call_module(fqn + ".router.gate", tokens.to(at::kFloat),
                                    [this](const at::Tensor& in) { return router->gate->forward(in); });
    MoeRouting routing = route_tokens(logits, expert_bias, top_k, route_scale);
    if (is_training()) {
      // Part of the traced graph: an in-place add on a buffer input, run once per step
      // (twice, in chunk order, under the eager-chunked oracle).
      torch::NoGradGuard no_grad;
      tokens_per_expert.add_(expert_token_counts(routing));
    }
    at::Tensor routed = capacity_factor > 0 ? routed_at_capacity(fqn, tokens, routing) : routed_dense(fqn, tokens, routing);
    at::Tensor shared = call_module(fqn + ".shared_expert", tokens, [this, fqn](const at::Tensor& in) {
      return shared_expert->forward(fqn + ".shared_expert", in);
    });
    return (routed + shared).view(x.sizes());
  }

  // Dense dispatch: every expert on every token, tokens [T, dim] -> routed output [T, dim].
  at::Tensor routed_dense(const std::string& fqn, const at::Tensor& tokens, const MoeRouting& routing) {
    at::Tensor weights = routing.combine_weights.to(tokens.scalar_type());  // [T, E]
    at::Tensor per_expert =
        call_module(fqn + ".experts", tokens, [this](const at::Tensor& in) { return experts->forward(in); });
    return (per_expert * weights.t().unsqueeze(-1)).sum(0);  // [T, dim]
  }

  // Capacity dispatch (deepseek_v3.h): tokens [T, dim] -> routed output [T, dim].
  at::Tensor routed_at_capacity(const std::string& fqn, const at::Tensor& tokens, const MoeRouting& routing) {
    const int64_t groups = ep_size > 1 ? 1 : capacity_groups, t = tokens.size(0), dim = tokens.size(1);
    if (t % groups != 0)
      throw std::invalid_argument(fqn + ": " + std::to_string(t) + " tokens cannot be split in " +
                                  std::to_string(groups) + " capacity groups");
    const int64_t tg = t / groups, e = n_experts, e_local = e / ep_size;
    const int64_t c = std::max<int64_t>(
        1, static_cast<int64_t>(std::ceil(static_cast<double>(tg * top_k) * capacity_factor / static_cast<double>(e))));
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
    at::Tensor expert_out = call_module(fqn + ".experts", expert_in, [this](const at::Tensor& in) { return experts->run(in); });
    at::Tensor back = expert_out.view({e_local, sources, c, dim}).permute({1, 0, 2, 3}).reshape({sources * e_local * c, dim});
    if (ep_size > 1) back = dist::wait_tensor(dist::all_to_all_single(back, {}, {}, "ep"));
    return at::bmm(combine, back.view({groups, e * c, dim})).view({t, dim});
  }

  int64_t top_k;
  double route_scale;
  int64_t n_experts;
  double capacity_factor;
  int64_t capacity_groups;
  /// Expert parallelism over mesh dim "ep" (1: none).
  int64_t ep_size = 1;
  std::shared_ptr<RouterImpl> router;
  std::shared_ptr<GroupedExpertsImpl> experts;
  std::shared_ptr<SwiGLUFeedForwardImpl> shared_expert;
  at::Tensor expert_bias, tokens_per_expert;
};

class TransformerBlockImpl : public torch::nn::Module {
 public:
  TransformerBlockImpl(const DeepSeekV3Config& c, bool dense, const at::TensorOptions& o) {
    attention = register_module("attention", std::make_shared<CausalSelfAttentionImpl>(c.dim, c.n_heads, o));
    if (dense)
      feed_forward =
          register_module("feed_forward", std::make_shared<SwiGLUFeedForwardImpl>(c.dim, c.dense_ffn_hidden, o));
    else
      moe = register_module("moe", std::make_shared<MoEImpl>(c, o));
    attention_norm = register_module("attention_norm", std::make_shared<RMSNormImpl>(c.dim, c.norm_eps, o));
    ffn_norm = register_module("ffn_norm", std::make_shared<RMSNormImpl>(c.dim, c.norm_eps, o));
  }
  at::Tensor forward(const std::string& fqn, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    at::Tensor normed =
        call_module(fqn + ".attention_norm", x, [this](const at::Tensor& in) { return attention_norm->forward(in); });
    at::Tensor h = x + call_module(fqn + ".attention", normed, [this, fqn, cos, sin](const at::Tensor& in) {
                     return attention->forward(fqn + ".attention", in, cos, sin);
                   });
    at::Tensor normed2 =
        call_module(fqn + ".ffn_norm", h, [this](const at::Tensor& in) { return ffn_norm->forward(in); });
    if (moe)
      return h + call_module(fqn + ".moe", normed2,
                             [this, fqn](const at::Tensor& in) { return moe->forward(fqn + ".moe", in); });
    return h + call_module(fqn + ".feed_forward", normed2, [this, fqn](const at::Tensor& in) {
             return feed_forward->forward(fqn + ".feed_forward", in);
           });
  }
  std::shared_ptr<CausalSelfAttentionImpl> attention;
  std::shared_ptr<SwiGLUFeedForwardImpl> feed_forward;  // dense layers only
  std::shared_ptr<MoEImpl> moe;                         // MoE layers only
  std::shared_ptr<RMSNormImpl> attention_norm, ffn_norm;
};

class DeepSeekV3Module : public torch::nn::Module {
 public:
  DeepSeekV3Module(const DeepSeekV3Config& c, const at::TensorOptions& o) {
    tok_embeddings = register_module("tok_embeddings", std::make_shared<EmbeddingImpl>(c.vocab_size, c.dim, o));
    layers = register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.n_layers; ++i) {
      blocks.push_back(std::make_shared<TransformerBlockImpl>(c, /*dense=*/i < c.n_dense_layers, o));
      layers->push_back(blocks.back());
    }
    norm = register_module("norm", std::make_shared<RMSNormImpl>(c.dim, c.norm_eps, o));
    output = register_module("output", std::make_shared<LinearImpl>(c.dim, c.vocab_size, o));
    // Buffers, so the traced graph lifts the tables by FQN instead of baking constants.
    auto [cos, sin] = rotary_tables(c.dim / c.n_heads, c.rope_theta, c.max_seq_len);
    freqs_cos = register_buffer("freqs_cos", o.device().is_meta() ? at::empty(cos.sizes(), o) : cos.to(o.device()));
    freqs_sin = register_buffer("freqs_sin", o.device().is_meta() ? at::empty(sin.sizes(), o) : sin.to(o.device()));
  }

  at::Tensor forward(const at::Tensor& tokens) {
    auto block = [this](size_t i) -> BlockForward {
      return [b = blocks[i]](const std::string& fqn, const at::Tensor& h, const at::Tensor& cos, const at::Tensor& sin) {
        return b->forward(fqn, h, cos, sin);
      };
    };
    return decoder_forward(tokens, *tok_embeddings, blocks.size(), block, *norm, *output, freqs_cos, freqs_sin);
  }

  std::shared_ptr<EmbeddingImpl> tok_embeddings;
  torch::nn::ModuleList layers;
  std::vector<std::shared_ptr<TransformerBlockImpl>> blocks;
  std::shared_ptr<RMSNormImpl> norm;
  std::shared_ptr<LinearImpl> output;
  at::Tensor freqs_cos, freqs_sin;
};

class DeepSeekV3Subject : public TrainingSubject {
 public:
  DeepSeekV3Subject(SubjectOptions o, DeepSeekV3Config c) : TrainingSubject(std::move(o)), config_(c) {
    if (options_.batch_size) config_.batch_size = options_.batch_size;
    if (options_.seq_len) config_.seq_len = options_.seq_len;
    if (options_.n_layers) config_.n_layers = options_.n_layers;
    if (options_.moe_capacity_factor) config_.capacity_factor = options_.moe_capacity_factor;
    if (options_.moe_capacity_groups) config_.capacity_groups = options_.moe_capacity_groups;
    plan_ = resolve_plan("deepseek_v3", options_.parallel, {"fsdp", "ep"});
    if (plan_ && plan_->ep && config_.capacity_factor <= 0)
      throw std::invalid_argument("deepseek_v3 with ep needs capacity dispatch: set moe_capacity_factor > 0");
    model_ = std::make_shared<DeepSeekV3Module>(config_, at::TensorOptions().device(options_.device));
    init_parameters(*model_, options_.seed);
    if (plan_) {
      parallelize(*model_, *plan_);
      for (const auto& block : model_->blocks)
        if (block->moe) block->moe->ep_size = plan_->ep_size;
    }
  }
  std::string name() const override { return "deepseek_v3"; }
  std::shared_ptr<torch::nn::Module> module() const override { return model_; }
  std::vector<c10::IValue> batch(int64_t step) const override {
    return rank_token_batch(plan_, options_.seed, step, config_.batch_size, config_.seq_len, config_.vocab_size,
                            options_.device);
  }
  std::map<std::string, std::vector<std::string>> placements() const override {
    return plan_ ? placements_of(*model_, *plan_) : std::map<std::string, std::vector<std::string>>{};
  }
  c10::IValue train_step(const std::vector<c10::IValue>& args) override {
    return language_model_step(*model_, [this](const at::Tensor& tokens) { return model_->forward(tokens); }, args);
  }
  void before_optimizer_step() override {
    for (const auto& block : model_->blocks)
      if (block->moe) {
        // Every ep rank counted its own tokens: the bias must follow the global counts,
        // so the buffers stay identical across ranks.
        if (plan_ && plan_->ep) {
          torch::NoGradGuard no_grad;
          at::Tensor& counts = block->moe->tokens_per_expert;
          counts.copy_(dist::wait_tensor(dist::all_reduce(counts, "sum", "ep")));
        }
        update_expert_bias(block->moe->expert_bias, block->moe->tokens_per_expert, config_.load_balance_coeff);
      }
  }

 private:
  DeepSeekV3Config config_;
  std::optional<ParallelPlan> plan_;
  std::shared_ptr<DeepSeekV3Module> model_;
};

}  // namespace

std::unique_ptr<TrainingSubject> make_deepseek_v3_subject(const SubjectOptions& options,
                                                          const DeepSeekV3Config& config) {
  return std::make_unique<DeepSeekV3Subject>(options, config);
}

}  // namespace passcheck::models
