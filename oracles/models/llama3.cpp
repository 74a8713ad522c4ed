// llama3 debug model. Attention, SwiGLU and RMSNorm come from layers.h (on
// scaled_dot_product_attention and rms_norm, as torchtitan's model). Rotary
// embeddings use the real-valued form of torchtitan's complex rotation over interleaved
// pairs; the cos/sin tables are buffers so the traced graph lifts them by FQN.
#include "oracles/models/llama3.h"

#include "framework/trace/module_scope.h"
#include "oracles/models/attention.h"
#include "oracles/models/decoder.h"
#include "oracles/models/layers.h"
#include "oracles/models/parallelize.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>

namespace passcheck::models {

namespace {

class Llama3BlockImpl : public torch::nn::Module {
 public:
  Llama3BlockImpl(const Llama3Config& c, const at::TensorOptions& o) {
    attention = register_module("attention", std::make_shared<CausalSelfAttentionImpl>(c.dim, c.n_heads, o, c.n_kv_heads));
    attention->flex = c.flex_attention;
    feed_forward = register_module("feed_forward", std::make_shared<SwiGLUFeedForwardImpl>(c.dim, c.ffn_hidden, o));
    attention_norm = register_module("attention_norm", std::make_shared<RMSNormImpl>(c.dim, c.norm_eps, o));
    ffn_norm = register_module("ffn_norm", std::make_shared<RMSNormImpl>(c.dim, c.norm_eps, o));
  }
  at::Tensor forward(const std::string& fqn, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    return pre_norm_block_forward(
        fqn, x, *attention_norm,
        [this, cos, sin](const std::string& name, const at::Tensor& in) { return attention->forward(name, in, cos, sin); },
        *ffn_norm, "feed_forward",
        [this](const std::string& name, const at::Tensor& in) { return feed_forward->forward(name, in); });
  }
  std::shared_ptr<CausalSelfAttentionImpl> attention;
  std::shared_ptr<SwiGLUFeedForwardImpl> feed_forward;
  std::shared_ptr<RMSNormImpl> attention_norm, ffn_norm;
};

class Llama3Subject : public LanguageModelSubject<Llama3BlockImpl> {
 public:
  Llama3Subject(SubjectOptions o, Llama3Config c) : LanguageModelSubject(std::move(o)) {
    if (options_.batch_size) c.batch_size = options_.batch_size;
    if (options_.seq_len) c.seq_len = options_.seq_len;
    if (options_.n_layers) c.n_layers = options_.n_layers;
    if (options_.attention == "flex") c.flex_attention = true;
    plan_ = resolve_plan("llama3", options_.parallel, {"fsdp", "fsdp2d", "tp"});
    if (plan_ && c.n_kv_heads && c.n_kv_heads != c.n_heads) plan_->qkv_block_heads = {c.n_heads, c.n_kv_heads, c.n_kv_heads};
    const at::TensorOptions to = at::TensorOptions().device(options_.device);
    std::vector<std::shared_ptr<Llama3BlockImpl>> blocks;
    for (int64_t i = 0; i < c.n_layers; ++i) blocks.push_back(std::make_shared<Llama3BlockImpl>(c, to));
    install_model(std::make_shared<DecoderModule<Llama3BlockImpl>>(
                      c.vocab_size, c.dim, c.norm_eps, std::move(blocks),
                      rotary_buffers(RopeStyle::InterleavedPairs, c.dim / c.n_heads, c.rope_theta, c.max_seq_len, to), to),
                  {c.batch_size, c.seq_len, c.vocab_size});
  }
  std::string name() const override { return "llama3"; }
};

}  // namespace

std::unique_ptr<TrainingSubject> make_llama3_subject(const SubjectOptions& options, const Llama3Config& config) {
  return std::make_unique<Llama3Subject>(options, config);
}

}  // namespace passcheck::models
