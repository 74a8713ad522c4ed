// deepseek_v3 debug model (see deepseek_v3.h for the two CPU-build simplifications).
// Module boundaries: "layers.N" takes only the hidden state [B, S, dim] (rotary tables
// are captured by value), and "layers.N.moe" takes x [B, S, dim] unflattened, so an
// interceptor (the eager-chunked oracle) can split batch (dim 0) or sequence (dim 1).
#include "oracles/models/deepseek_v3.h"

#include "framework/trace/module_scope.h"
#include "framework/dist/collectives.h"
#include "oracles/models/attention.h"
#include "oracles/models/layers.h"
#include "oracles/models/parallelize.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <cmath>
#include <tuple>

namespace passcheck::models {

namespace {

using trace::call_module;

MoeConfig moe_config(const DeepSeekV3Config& c) {
  MoeConfig m;
  m.dim = c.dim;
  m.n_experts = c.n_routed_experts;
  m.expert_hidden = c.expert_hidden;
  m.shared_expert_hidden = c.shared_expert_hidden;
  m.router.top_k = c.top_k;
  m.router.route_scale = c.route_scale;
  m.load_balance_coeff = c.load_balance_coeff;
  m.dispatch = c.capacity_factor > 0 ? MoeDispatch::Capacity : c.sparse_dispatch ? MoeDispatch::Sparse : MoeDispatch::Dense;
  m.capacity_factor = c.capacity_factor;
  m.capacity_groups = c.capacity_groups;
  return m;
}

LatentAttentionConfig latent_attention_config(const DeepSeekV3Config& c) {
  LatentAttentionConfig a;
  a.dim = c.dim;
  a.n_heads = c.n_heads;
  a.kv_lora_rank = c.kv_lora_rank;
  a.qk_nope_head_dim = c.qk_nope_head_dim;
  a.qk_rope_head_dim = c.qk_rope_head_dim;
  a.v_head_dim = c.v_head_dim;
  a.norm_eps = c.norm_eps;
  return a;
}

class TransformerBlockImpl : public torch::nn::Module {
 public:
  TransformerBlockImpl(const DeepSeekV3Config& c, bool dense, const at::TensorOptions& o) {
    if (c.attention == DeepSeekAttention::Latent)
      latent_attention =
          register_module("attention", std::make_shared<MultiHeadLatentAttentionImpl>(latent_attention_config(c), o));
    else
      attention = register_module("attention", std::make_shared<CausalSelfAttentionImpl>(c.dim, c.n_heads, o));
    if (dense)
      feed_forward =
          register_module("feed_forward", std::make_shared<SwiGLUFeedForwardImpl>(c.dim, c.dense_ffn_hidden, o));
    else
      moe = register_module("moe", std::make_shared<MoEImpl>(moe_config(c), o));
    attention_norm = register_module("attention_norm", std::make_shared<RMSNormImpl>(c.dim, c.norm_eps, o));
    ffn_norm = register_module("ffn_norm", std::make_shared<RMSNormImpl>(c.dim, c.norm_eps, o));
  }
  at::Tensor forward(const std::string& fqn, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    at::Tensor normed =
        call_module(fqn + ".attention_norm", x, [this](const at::Tensor& in) { return attention_norm->forward(in); });
    at::Tensor h = x + call_module(fqn + ".attention", normed, [this, fqn, cos, sin](const at::Tensor& in) {
                     return latent_attention ? latent_attention->forward(fqn + ".attention", in, cos, sin)
                                             : attention->forward(fqn + ".attention", in, cos, sin);
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
  std::shared_ptr<CausalSelfAttentionImpl> attention;               // MultiHead only
  std::shared_ptr<MultiHeadLatentAttentionImpl> latent_attention;  // Latent only
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
    const int64_t rotary_dim = c.attention == DeepSeekAttention::Latent ? c.qk_rope_head_dim : c.dim / c.n_heads;
    auto [cos, sin] = rotary_buffers(RopeStyle::InterleavedPairs, rotary_dim, c.rope_theta, c.max_seq_len, o);
    freqs_cos = register_buffer("freqs_cos", cos);
    freqs_sin = register_buffer("freqs_sin", sin);
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
    if (options_.attention == "mha") config_.attention = DeepSeekAttention::MultiHead;
    else if (!options_.attention.empty() && options_.attention != "mla")
      throw std::invalid_argument("deepseek_v3 attention '" + options_.attention + "' is unknown (known: mla, mha)");
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
    // Every ep (or dp) rank counted its own tokens: the bias must follow the global counts.
    for (const auto& block : model_->blocks)
      if (block->moe) block->moe->update_bias(!plan_ || plan_->fault == "moe-local-counts" ? "" : plan_->ep ? "ep" : plan_->fsdp ? "dp" : "");
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
