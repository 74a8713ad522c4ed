// deepseek_v3 debug model (see deepseek_v3.h for the two CPU-build simplifications).
// Module boundaries: "layers.N" takes only the hidden state [B, S, dim] (rotary tables
// are captured by value), and "layers.N.moe" takes x [B, S, dim] unflattened, so an
// interceptor (the eager-chunked oracle) can split batch (dim 0) or sequence (dim 1).
#include "oracles/models/deepseek_v3.h"

#include "framework/trace/module_scope.h"
#include "oracles/models/layers.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

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
class GroupedExpertsImpl : public torch::nn::Module {
 public:
  GroupedExpertsImpl(int64_t n_experts, int64_t dim, int64_t hidden, const at::TensorOptions& o) {
    w1 = register_parameter("w1", at::empty({n_experts, hidden, dim}, o));
    w2 = register_parameter("w2", at::empty({n_experts, dim, hidden}, o));
    w3 = register_parameter("w3", at::empty({n_experts, hidden, dim}, o));
  }
  // tokens [T, dim] -> [E, T, dim]: every expert's SwiGLU on every token (dense dispatch).
  at::Tensor forward(const at::Tensor& tokens) {
    at::Tensor x = tokens.unsqueeze(0).expand({w1.size(0), tokens.size(0), tokens.size(1)});
    at::Tensor gate = at::bmm(x, w1.transpose(1, 2));
    at::Tensor up = at::bmm(x, w3.transpose(1, 2));
    return at::bmm(at::silu(gate) * up, w2.transpose(1, 2));
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
      : top_k(c.top_k), route_scale(c.route_scale) {
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
    at::Tensor weights = routing.combine_weights.to(x.scalar_type());  // [T, E]
    at::Tensor per_expert =
        call_module(fqn + ".experts", tokens, [this](const at::Tensor& in) { return experts->forward(in); });
    at::Tensor routed = (per_expert * weights.t().unsqueeze(-1)).sum(0);  // [T, dim]
    at::Tensor shared = call_module(fqn + ".shared_expert", tokens, [this, fqn](const at::Tensor& in) {
      return shared_expert->forward(fqn + ".shared_expert", in);
    });
    return (routed + shared).view(x.sizes());
  }

  int64_t top_k;
  double route_scale;
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
    model_ = std::make_shared<DeepSeekV3Module>(config_, at::TensorOptions().device(options_.device));
    init_parameters(*model_, options_.seed);
  }
  std::string name() const override { return "deepseek_v3"; }
  std::shared_ptr<torch::nn::Module> module() const override { return model_; }
  std::vector<c10::IValue> batch(int64_t step) const override {
    return token_batch(options_.seed, step, config_.batch_size, config_.seq_len, config_.vocab_size, options_.device);
  }
  c10::IValue train_step(const std::vector<c10::IValue>& args) override {
    return language_model_step(*model_, [this](const at::Tensor& tokens) { return model_->forward(tokens); }, args);
  }
  void before_optimizer_step() override {
    for (const auto& block : model_->blocks)
      if (block->moe)
        update_expert_bias(block->moe->expert_bias, block->moe->tokens_per_expert, config_.load_balance_coeff);
  }

 private:
  DeepSeekV3Config config_;
  std::shared_ptr<DeepSeekV3Module> model_;
};

}  // namespace

std::unique_ptr<TrainingSubject> make_deepseek_v3_subject(const SubjectOptions& options,
                                                          const DeepSeekV3Config& config) {
  return std::make_unique<DeepSeekV3Subject>(options, config);
}

}  // namespace passcheck::models
