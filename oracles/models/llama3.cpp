// llama3 debug model. Attention, SwiGLU and RMSNorm come from layers.h, written from
// primitives (no scaled_dot_product_attention / rms_norm on the CPU build). Rotary
// embeddings use the real-valued form of torchtitan's complex rotation over interleaved
// pairs; the cos/sin tables are buffers so the traced graph lifts them by FQN.
#include "oracles/models/llama3.h"

#include "framework/trace/module_scope.h"
#include "oracles/models/attention.h"
#include "oracles/models/layers.h"
#include "oracles/models/parallelize.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

namespace passcheck::models {

namespace {

using trace::call_module;

class TransformerBlockImpl : public torch::nn::Module {
 public:
  TransformerBlockImpl(const Llama3Config& c, const at::TensorOptions& o) {
    attention = register_module("attention", std::make_shared<CausalSelfAttentionImpl>(c.dim, c.n_heads, o));
    feed_forward = register_module("feed_forward", std::make_shared<SwiGLUFeedForwardImpl>(c.dim, c.ffn_hidden, o));
    attention_norm = register_module("attention_norm", std::make_shared<RMSNormImpl>(c.dim, c.norm_eps, o));
    ffn_norm = register_module("ffn_norm", std::make_shared<RMSNormImpl>(c.dim, c.norm_eps, o));
  }
  at::Tensor forward(const std::string& fqn, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    at::Tensor normed = call_module(fqn + ".attention_norm", x, [this](const at::Tensor& in) { return attention_norm->forward(in); });
    at::Tensor h = x + call_module(fqn + ".attention", normed, [this, fqn, cos, sin](const at::Tensor& in) {
                     return attention->forward(fqn + ".attention", in, cos, sin);
                   });
    at::Tensor normed2 = call_module(fqn + ".ffn_norm", h, [this](const at::Tensor& in) { return ffn_norm->forward(in); });
    return h + call_module(fqn + ".feed_forward", normed2, [this, fqn](const at::Tensor& in) {
             return feed_forward->forward(fqn + ".feed_forward", in);
           });
  }
  std::shared_ptr<CausalSelfAttentionImpl> attention;
  std::shared_ptr<SwiGLUFeedForwardImpl> feed_forward;
  std::shared_ptr<RMSNormImpl> attention_norm, ffn_norm;
};

class Llama3Module : public torch::nn::Module {
 public:
  Llama3Module(const Llama3Config& c, const at::TensorOptions& o) : config(c) {
    tok_embeddings = register_module("tok_embeddings", std::make_shared<EmbeddingImpl>(c.vocab_size, c.dim, o));
    layers = register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.n_layers; ++i) {
      blocks.push_back(std::make_shared<TransformerBlockImpl>(c, o));
      layers->push_back(blocks.back());
    }
    norm = register_module("norm", std::make_shared<RMSNormImpl>(c.dim, c.norm_eps, o));
    output = register_module("output", std::make_shared<LinearImpl>(c.dim, c.vocab_size, o));
    auto [cos, sin] = rotary_buffers(RopeStyle::InterleavedPairs, c.dim / c.n_heads, c.rope_theta, c.max_seq_len, o);
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

  Llama3Config config;
  std::shared_ptr<EmbeddingImpl> tok_embeddings;
  torch::nn::ModuleList layers;
  std::vector<std::shared_ptr<TransformerBlockImpl>> blocks;
  std::shared_ptr<RMSNormImpl> norm;
  std::shared_ptr<LinearImpl> output;
  at::Tensor freqs_cos, freqs_sin;
};

class Llama3Subject : public TrainingSubject {
 public:
  Llama3Subject(SubjectOptions o, Llama3Config c) : TrainingSubject(std::move(o)), config_(c) {
    if (options_.batch_size) config_.batch_size = options_.batch_size;
    if (options_.seq_len) config_.seq_len = options_.seq_len;
    if (options_.n_layers) config_.n_layers = options_.n_layers;
    plan_ = resolve_plan("llama3", options_.parallel, {"fsdp", "fsdp2d", "tp"});
    model_ = std::make_shared<Llama3Module>(config_, at::TensorOptions().device(options_.device));
    init_parameters(*model_, options_.seed);
    if (plan_) parallelize(*model_, *plan_);
  }
  std::string name() const override { return "llama3"; }
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

 private:
  Llama3Config config_;
  std::optional<ParallelPlan> plan_;
  std::shared_ptr<Llama3Module> model_;
};

}  // namespace

std::unique_ptr<TrainingSubject> make_llama3_subject(const SubjectOptions& options, const Llama3Config& config) {
  return std::make_unique<Llama3Subject>(options, config);
}

}  // namespace passcheck::models
