// deepseek_v3 debug model (see deepseek_v3.h for the two CPU-build simplifications).
// Module boundaries: "layers.N" takes only the hidden state [B, S, dim] (rotary tables
// are captured by value), and "layers.N.moe" takes x [B, S, dim] unflattened, so an
// interceptor (the eager-chunked oracle) can split batch (dim 0) or sequence (dim 1).
#include "oracles/models/deepseek_v3.h"

#include "framework/trace/module_scope.h"
#include "framework/dist/collectives.h"
#include "oracles/models/attention.h"
#include "oracles/models/decoder.h"
#include "oracles/models/layers.h"
#include "oracles/models/parallelize.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <cmath>
#include <tuple>

namespace passcheck::models {

namespace {

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

class DeepSeekV3BlockImpl : public torch::nn::Module {
 public:
  DeepSeekV3BlockImpl(const DeepSeekV3Config& c, bool dense, const at::TensorOptions& o) {
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
    SubmoduleForward attend = [this, cos, sin](const std::string& name, const at::Tensor& in) {
      return latent_attention ? latent_attention->forward(name, in, cos, sin) : attention->forward(name, in, cos, sin);
    };
    return moe_or_dense_block_forward(fqn, x, *attention_norm, std::move(attend), *ffn_norm, moe.get(), feed_forward.get());
  }
  std::shared_ptr<CausalSelfAttentionImpl> attention;               // MultiHead only
  std::shared_ptr<MultiHeadLatentAttentionImpl> latent_attention;  // Latent only
  std::shared_ptr<SwiGLUFeedForwardImpl> feed_forward;  // dense layers only
  std::shared_ptr<MoEImpl> moe;                         // MoE layers only
  std::shared_ptr<RMSNormImpl> attention_norm, ffn_norm;
};

class DeepSeekV3Subject : public LanguageModelSubject<DeepSeekV3BlockImpl> {
 public:
  DeepSeekV3Subject(SubjectOptions o, DeepSeekV3Config c) : LanguageModelSubject(std::move(o)) {
    if (options_.batch_size) c.batch_size = options_.batch_size;
    if (options_.seq_len) c.seq_len = options_.seq_len;
    if (options_.n_layers) c.n_layers = options_.n_layers;
    if (options_.moe_capacity_factor) c.capacity_factor = options_.moe_capacity_factor;
    if (options_.moe_capacity_groups) c.capacity_groups = options_.moe_capacity_groups;
    if (options_.attention == "mha") c.attention = DeepSeekAttention::MultiHead;
    else if (!options_.attention.empty() && options_.attention != "mla")
      throw std::invalid_argument("deepseek_v3 attention '" + options_.attention + "' is unknown (known: mla, mha)");
    plan_ = resolve_plan("deepseek_v3", options_.parallel, {"fsdp", "ep"});
    if (plan_ && plan_->ep && c.capacity_factor <= 0)
      throw std::invalid_argument("deepseek_v3 with ep needs capacity dispatch: set moe_capacity_factor > 0");
    const at::TensorOptions to = at::TensorOptions().device(options_.device);
    std::vector<std::shared_ptr<DeepSeekV3BlockImpl>> blocks;
    for (int64_t i = 0; i < c.n_layers; ++i)
      blocks.push_back(std::make_shared<DeepSeekV3BlockImpl>(c, /*dense=*/i < c.n_dense_layers, to));
    const int64_t rotary_dim = c.attention == DeepSeekAttention::Latent ? c.qk_rope_head_dim : c.dim / c.n_heads;
    install_model(std::make_shared<DecoderModule<DeepSeekV3BlockImpl>>(
                      c.vocab_size, c.dim, c.norm_eps, std::move(blocks),
                      rotary_buffers(RopeStyle::InterleavedPairs, rotary_dim, c.rope_theta, c.max_seq_len, to), to),
                  {c.batch_size, c.seq_len, c.vocab_size});
    if (plan_)
      for (const auto& block : model_->blocks)
        if (block->moe) block->moe->ep_size = plan_->ep_size;
  }
  std::string name() const override { return "deepseek_v3"; }
  void before_optimizer_step() override {
    for (const auto& block : model_->blocks)
      if (block->moe) block->moe->update_bias(expert_count_group());
  }
};

}  // namespace

std::unique_ptr<TrainingSubject> make_deepseek_v3_subject(const SubjectOptions& options,
                                                          const DeepSeekV3Config& config) {
  return std::make_unique<DeepSeekV3Subject>(options, config);
}

}  // namespace passcheck::models
