// The zoo models' configurations, decoder and training subjects (see zoo.h).
#include "oracles/models/zoo.h"

#include "framework/trace/module_scope.h"
#include "oracles/models/decoder.h"
#include "oracles/models/parallelize.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <stdexcept>

namespace passcheck::models {

namespace {

AttentionConfig qwen3_attention() {
  AttentionConfig a;
  a.dim = 256;
  a.n_heads = 16;
  a.n_kv_heads = 8;
  a.head_dim = 128;
  a.qk_norm_eps = 1e-6;
  a.rope = RopeStyle::RotateHalf;
  return a;
}

ZooConfig qwen3(int64_t n_layers, bool moe) {
  ZooConfig c;
  c.name = moe ? "qwen3_moe" : "qwen3";
  c.norm_eps = 1e-6;
  c.rope = RopeStyle::RotateHalf;
  c.rope_head_dim = 128;
  c.rope_theta = 1e6;
  c.tied_embeddings = !moe;
  for (int64_t i = 0; i < (n_layers ? n_layers : 8); ++i) c.layers.push_back({qwen3_attention(), moe, moe ? 0 : 3072});
  c.moe.n_experts = 64;
  c.moe.expert_hidden = 768;
  c.moe.router = {/*top_k=*/8, ScoreFunction::Softmax, /*renormalize=*/true, /*route_scale=*/1.0};
  return c;
}

ZooConfig llama4(int64_t n_layers) {
  ZooConfig c;
  c.name = "llama4";
  c.norm_eps = 1e-5;
  c.rope = RopeStyle::InterleavedPairs;
  c.rope_head_dim = 16;
  c.rope_theta = 500000.0;
  for (int64_t i = 0; i < (n_layers ? n_layers : 6); ++i) {
    ZooLayer l;
    l.attention.n_heads = l.attention.n_kv_heads = 16;
    l.attention.head_dim = 16;
    const bool nope = i % 4 == 0;  // layers 0 and 4 of the six
    l.attention.rope = nope ? RopeStyle::None : RopeStyle::InterleavedPairs;
    l.attention.mask = nope ? AttentionMask::Causal : AttentionMask::ChunkedCausal;
    l.attention.mask_window = nope ? 0 : 256;
    l.moe = i % 2 == 1;
    l.ffn_hidden = l.moe ? 0 : 768;
    c.layers.push_back(l);
  }
  c.moe.n_experts = 8;
  c.moe.expert_hidden = 512;
  c.moe.shared_expert_hidden = 512;
  c.moe.router = {/*top_k=*/1, ScoreFunction::Sigmoid, /*renormalize=*/false, /*route_scale=*/1.0};
  c.moe.score_before_experts = true;
  return c;
}

ZooConfig gpt_oss(int64_t n_layers) {
  ZooConfig c;
  c.name = "gpt_oss";
  c.norm_eps = 1e-5;
  c.rope = RopeStyle::RotateHalf;
  c.rope_head_dim = 64;
  c.rope_theta = 150000.0;
  for (int64_t i = 0; i < (n_layers ? n_layers : 4); ++i) {
    ZooLayer l;
    l.attention.n_heads = 64;
    l.attention.n_kv_heads = 8;
    l.attention.head_dim = 64;
    l.attention.bias = true;
    l.attention.sinks = true;
    l.attention.rope = RopeStyle::RotateHalf;
    l.attention.mask = i % 2 == 0 ? AttentionMask::SlidingWindow : AttentionMask::Causal;
    l.attention.mask_window = i % 2 == 0 ? 128 : 0;
    l.moe = true;
    c.layers.push_back(l);
  }
  c.moe.n_experts = 8;
  c.moe.expert_hidden = 2880;
  c.moe.router = {/*top_k=*/4, ScoreFunction::Softmax, /*renormalize=*/true, /*route_scale=*/1.0};
  c.moe.router_bias = true;
  c.moe.activation = ExpertActivation::ClampedSwiGLU;
  return c;
}

class ZooBlockImpl : public torch::nn::Module {
 public:
  ZooBlockImpl(const ZooConfig& c, const ZooLayer& l, const at::TensorOptions& o) {
    attention = register_module("attention", std::make_shared<AttentionImpl>(l.attention, o));
    if (l.moe)
      moe = register_module("moe", std::make_shared<MoEImpl>(c.moe, o));
    else
      feed_forward = register_module("feed_forward", std::make_shared<SwiGLUFeedForwardImpl>(c.dim, l.ffn_hidden, o));
    attention_norm = register_module("attention_norm", std::make_shared<RMSNormImpl>(c.dim, c.norm_eps, o));
    ffn_norm = register_module("ffn_norm", std::make_shared<RMSNormImpl>(c.dim, c.norm_eps, o));
  }
  at::Tensor forward(const std::string& fqn, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    SubmoduleForward attend = [this, cos, sin](const std::string& name, const at::Tensor& in) {
      return attention->forward(name, in, cos, sin);
    };
    return moe_or_dense_block_forward(fqn, x, *attention_norm, std::move(attend), *ffn_norm, moe.get(), feed_forward.get());
  }
  std::shared_ptr<AttentionImpl> attention;
  std::shared_ptr<SwiGLUFeedForwardImpl> feed_forward;  // dense layers only
  std::shared_ptr<MoEImpl> moe;                         // MoE layers only
  std::shared_ptr<RMSNormImpl> attention_norm, ffn_norm;
};

class ZooSubject : public LanguageModelSubject<ZooBlockImpl> {
 public:
  ZooSubject(SubjectOptions o, ZooConfig c) : LanguageModelSubject(std::move(o)), name_(c.name) {
    if (options_.batch_size) c.batch_size = options_.batch_size;
    if (options_.seq_len) c.seq_len = options_.seq_len;
    if (c.seq_len > c.max_seq_len)
      throw std::invalid_argument(c.name + ": sequence length " + std::to_string(c.seq_len) +
                                  " exceeds the rotary tables' " + std::to_string(c.max_seq_len));
    if (!options_.attention.empty())
      throw std::invalid_argument(c.name + " has one attention; option attention='" + options_.attention +
                                  "' is for deepseek_v3");
    plan_ = resolve_plan(c.name, options_.parallel, {"fsdp"});
    const at::TensorOptions to = at::TensorOptions().device(options_.device).dtype(options_.dtype);
    std::vector<std::shared_ptr<ZooBlockImpl>> blocks;
    for (const ZooLayer& l : c.layers) blocks.push_back(std::make_shared<ZooBlockImpl>(c, l, to));
    install_model(std::make_shared<DecoderModule<ZooBlockImpl>>(
                      c.vocab_size, c.dim, c.norm_eps, std::move(blocks),
                      rotary_buffers(c.rope, c.rope_head_dim, c.rope_theta, c.max_seq_len, to), to),
                  {c.batch_size, c.seq_len, c.vocab_size}, c.tied_embeddings);
  }
  std::string name() const override { return name_; }
  void before_optimizer_step() override {
    for (const auto& block : model_->blocks)
      if (block->moe) block->moe->update_bias(expert_count_group());
  }

 private:
  std::string name_;
};

}  // namespace

std::vector<std::string> zoo_models() { return {"qwen3", "qwen3_moe", "llama4", "gpt_oss"}; }

ZooConfig zoo_config(const std::string& name, int64_t n_layers) {
  if (n_layers < 0) throw std::invalid_argument(name + ": negative layer count " + std::to_string(n_layers));
  if (name == "qwen3") return qwen3(n_layers, /*moe=*/false);
  if (name == "qwen3_moe") return qwen3(n_layers, /*moe=*/true);
  if (name == "llama4") return llama4(n_layers);
  if (name == "gpt_oss") return gpt_oss(n_layers);
  throw std::invalid_argument("unknown zoo model '" + name + "'");
}

std::unique_ptr<TrainingSubject> make_zoo_subject(const std::string& name, const SubjectOptions& options) {
  return std::make_unique<ZooSubject>(options, zoo_config(name, options.n_layers));
}

std::unique_ptr<TrainingSubject> make_zoo_subject(const SubjectOptions& options, ZooConfig config) {
  return std::make_unique<ZooSubject>(options, std::move(config));
}

}  // namespace passcheck::models
