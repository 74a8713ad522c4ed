// The zoo models' configurations, decoder and training subjects (see zoo.h).
#include "oracles/models/zoo.h"

#include "framework/trace/module_scope.h"
#include "oracles/models/parallelize.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <stdexcept>

namespace passcheck::models {

namespace {

using trace::call_module;

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
  std::shared_ptr<AttentionImpl> attention;
  std::shared_ptr<SwiGLUFeedForwardImpl> feed_forward;  // dense layers only
  std::shared_ptr<MoEImpl> moe;                         // MoE layers only
  std::shared_ptr<RMSNormImpl> attention_norm, ffn_norm;
};

class ZooModule : public torch::nn::Module {
 public:
  ZooModule(const ZooConfig& c, const at::TensorOptions& o) {
    tok_embeddings = register_module("tok_embeddings", std::make_shared<EmbeddingImpl>(c.vocab_size, c.dim, o));
    layers = register_module("layers", torch::nn::ModuleList());
    for (const ZooLayer& l : c.layers) {
      blocks.push_back(std::make_shared<ZooBlockImpl>(c, l, o));
      layers->push_back(blocks.back());
    }
    norm = register_module("norm", std::make_shared<RMSNormImpl>(c.dim, c.norm_eps, o));
    output = register_module("output", std::make_shared<LinearImpl>(c.dim, c.vocab_size, o));
    auto [cos, sin] = rotary_buffers(c.rope, c.rope_head_dim, c.rope_theta, c.max_seq_len, o);
    freqs_cos = register_buffer("freqs_cos", cos);
    freqs_sin = register_buffer("freqs_sin", sin);
  }

  /// The output projection reads the embedding's storage from now on (both stay
  /// parameters under their own FQN, as upstream's tracer lifts tied weights).
  void tie_embeddings() {
    torch::NoGradGuard no_grad;
    output->weight.set_data(tok_embeddings->weight);
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
  std::vector<std::shared_ptr<ZooBlockImpl>> blocks;
  std::shared_ptr<RMSNormImpl> norm;
  std::shared_ptr<LinearImpl> output;
  at::Tensor freqs_cos, freqs_sin;
};

class ZooSubject : public TrainingSubject {
 public:
  ZooSubject(SubjectOptions o, ZooConfig c) : TrainingSubject(std::move(o)), config_(std::move(c)) {
    if (options_.batch_size) config_.batch_size = options_.batch_size;
    if (options_.seq_len) config_.seq_len = options_.seq_len;
    if (config_.seq_len > config_.max_seq_len)
      throw std::invalid_argument(config_.name + ": sequence length " + std::to_string(config_.seq_len) +
                                  " exceeds the rotary tables' " + std::to_string(config_.max_seq_len));
    if (!options_.attention.empty())
      throw std::invalid_argument(config_.name + " has one attention; option attention='" + options_.attention +
                                  "' is for deepseek_v3");
    plan_ = resolve_plan(config_.name, options_.parallel, {"fsdp"});
    model_ = std::make_shared<ZooModule>(config_, at::TensorOptions().device(options_.device).dtype(options_.dtype));
    init_parameters(*model_, options_.seed);
    if (config_.tied_embeddings) model_->tie_embeddings();
    if (plan_) parallelize(*model_, *plan_);
  }
  std::string name() const override { return config_.name; }
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
    // Every dp rank counted its own tokens: the bias must follow the global counts.
    for (const auto& block : model_->blocks)
      if (block->moe) block->moe->update_bias(!plan_ || plan_->fault == "moe-local-counts" ? "" : plan_->fsdp ? "dp" : "");
  }

 private:
  ZooConfig config_;
  std::optional<ParallelPlan> plan_;
  std::shared_ptr<ZooModule> model_;
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

}  // namespace passcheck::models
