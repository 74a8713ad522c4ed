// The decoder every language model of the zoo is built from: a pre-norm block, the
// module around the blocks (embedding, layers.N, norm, output, rotary buffers), and the
// training subject of a token model. llama3, deepseek_v3 and the zoo models differ only
// in their blocks' attention and feed-forward and in their configurations.
#pragma once

#include "oracles/models/layers.h"
#include "oracles/models/moe.h"
#include "oracles/models/parallelize.h"
#include "oracles/models/subject.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/utils.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace passcheck::models {

/// A block's submodule called with its FQN and its input.
using SubmoduleForward = std::function<at::Tensor(const std::string& fqn, const at::Tensor& x)>;

/// A pre-norm block: h = x + attention(attention_norm(x)); h + ffn(ffn_norm(h)), each
/// submodule through call_module under fqn + ".attention_norm", ".attention",
/// ".ffn_norm" and "." + ffn_name. The closures handed to call_module hold `attention`
/// and `ffn` by value: an interceptor may run them again after this call returned.
at::Tensor pre_norm_block_forward(const std::string& fqn, const at::Tensor& x, RMSNormImpl& attention_norm,
                                  SubmoduleForward attention, RMSNormImpl& ffn_norm, const std::string& ffn_name,
                                  SubmoduleForward ffn);

/// pre_norm_block_forward through the block's MoE layer ("moe") when it has one, else its
/// dense feed-forward ("feed_forward"); the block keeps the modules alive.
at::Tensor moe_or_dense_block_forward(const std::string& fqn, const at::Tensor& x, RMSNormImpl& attention_norm,
                                      SubmoduleForward attention, RMSNormImpl& ffn_norm, MoEImpl* moe,
                                      SwiGLUFeedForwardImpl* feed_forward);

/// The decoder module: "tok_embeddings", "layers.N" (the blocks), "norm", "output", and
/// the rotary tables as buffers "freqs_cos"/"freqs_sin" so a traced graph lifts them by
/// FQN instead of baking constants. Block needs forward(fqn, h, cos, sin).
template <typename Block>
class DecoderModule : public torch::nn::Module {
 public:
  DecoderModule(int64_t vocab_size, int64_t dim, double norm_eps, std::vector<std::shared_ptr<Block>> decoder_blocks,
                std::pair<at::Tensor, at::Tensor> rotary_tables, const at::TensorOptions& o)
      : blocks(std::move(decoder_blocks)) {
    tok_embeddings = register_module("tok_embeddings", std::make_shared<EmbeddingImpl>(vocab_size, dim, o));
    layers = register_module("layers", torch::nn::ModuleList());
    for (const auto& block : blocks) layers->push_back(block);
    norm = register_module("norm", std::make_shared<RMSNormImpl>(dim, norm_eps, o));
    output = register_module("output", std::make_shared<LinearImpl>(dim, vocab_size, o));
    freqs_cos = register_buffer("freqs_cos", rotary_tables.first);
    freqs_sin = register_buffer("freqs_sin", rotary_tables.second);
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

  std::vector<std::shared_ptr<Block>> blocks;
  std::shared_ptr<EmbeddingImpl> tok_embeddings;
  torch::nn::ModuleList layers;
  std::shared_ptr<RMSNormImpl> norm;
  std::shared_ptr<LinearImpl> output;
  at::Tensor freqs_cos, freqs_sin;
};

/// Sizes of a language model's token batch (per rank under a plan).
struct TokenBatchShape {
  int64_t batch = 0, seq = 0, vocab = 0;
};

/// A language model's training subject: token batches (sliced per rank under a plan),
/// placements of the plan, cross-entropy training step. The derived subject builds
/// `model_` and resolves `plan_`.
template <typename Block>
class LanguageModelSubject : public TrainingSubject {
 public:
  std::shared_ptr<torch::nn::Module> module() const override { return model_; }
  std::vector<c10::IValue> batch(int64_t step) const override {
    return rank_token_batch(plan_, options_.seed, step, shape_.batch, shape_.seq, shape_.vocab, options_.device);
  }
  std::map<std::string, std::vector<std::string>> placements() const override {
    return plan_ ? placements_of(*model_, *plan_) : std::map<std::string, std::vector<std::string>>{};
  }
  c10::IValue train_step(const std::vector<c10::IValue>& args) override {
    return language_model_step(*model_, [this](const at::Tensor& tokens) { return model_->forward(tokens); }, args);
  }

 protected:
  explicit LanguageModelSubject(SubjectOptions options) : TrainingSubject(std::move(options)) {}

  /// Initialises the parameters from the options' seed, ties the embeddings when asked,
  /// then shards the model by the plan.
  void install_model(std::shared_ptr<DecoderModule<Block>> model, TokenBatchShape shape, bool tied_embeddings = false) {
    model_ = std::move(model);
    shape_ = shape;
    init_parameters(*model_, options_.seed);
    if (tied_embeddings) model_->tie_embeddings();
    if (plan_) parallelize(*model_, *plan_);
  }

  /// The mesh group whose token counts every MoE block's expert-bias update sums over:
  /// `ep` under expert parallelism, `dp` under FSDP, none single-rank or under the
  /// "moe-local-counts" fault (each rank follows its own counts, the bug it restores).
  std::string expert_count_group() const {
    if (!plan_ || plan_->fault == "moe-local-counts") return "";
    return plan_->ep ? "ep" : plan_->fsdp ? "dp" : "";
  }

  std::optional<ParallelPlan> plan_;
  std::shared_ptr<DecoderModule<Block>> model_;

 private:
  TokenBatchShape shape_;
};

}  // namespace passcheck::models
