// Registry of training subjects and the small programs of specs/models.md:
// mlp (Linear -> GELU -> Linear, sum loss) and the two-matmul layer of pytorch issue
// 178935 (y = gelu(x @ w1) @ w2, loss = y.sum()).
#include "oracles/models/subject.h"

#include "framework/trace/module_scope.h"
#include "oracles/models/configs.h"
#include "oracles/models/deepseek_v3.h"
#include "oracles/models/dropout_mlp.h"
#include "oracles/models/layers.h"
#include "oracles/models/llama3.h"
#include "oracles/models/zoo.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <stdexcept>

namespace passcheck::models {

namespace {

class MlpModule : public torch::nn::Module {
 public:
  explicit MlpModule(const at::TensorOptions& options) {
    fc1 = register_module("fc1", std::make_shared<LinearImpl>(16, 32, options));
    fc2 = register_module("fc2", std::make_shared<LinearImpl>(32, 8, options));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor h = trace::call_module("fc1", x, [this](const at::Tensor& in) { return fc1->forward(in); });
    h = at::gelu(h);
    return trace::call_module("fc2", h, [this](const at::Tensor& in) { return fc2->forward(in); });
  }
  std::shared_ptr<LinearImpl> fc1, fc2;
};

class MlpSubject : public TrainingSubject {
 public:
  explicit MlpSubject(SubjectOptions o) : TrainingSubject(std::move(o)) {
    model_ = std::make_shared<MlpModule>(at::TensorOptions().device(options_.device));
    init_parameters(*model_, options_.seed);
  }
  std::string name() const override { return "mlp"; }
  std::shared_ptr<torch::nn::Module> module() const override { return model_; }
  std::vector<c10::IValue> batch(int64_t step) const override {
    int64_t b = options_.batch_size ? options_.batch_size : 4;
    return {seeded_normal(options_.seed * 1000003 + step, {b, 16}, options_.device)};
  }
  c10::IValue train_step(const std::vector<c10::IValue>& args) override {
    at::Tensor y = model_->forward(args.at(0).toTensor());
    at::Tensor loss;
    {
      trace::ModuleScope scope("loss", ir::Phase::Loss);
      loss = y.sum();
    }
    return loss_and_gradients(*model_, loss);
  }

 private:
  std::shared_ptr<MlpModule> model_;
};

class TwoMatmulModule : public torch::nn::Module {
 public:
  explicit TwoMatmulModule(const at::TensorOptions& options) {
    w1 = register_parameter("w1", at::empty({4, 8}, options));
    w2 = register_parameter("w2", at::empty({8, 4}, options));
  }
  at::Tensor w1, w2;
};

class TwoMatmulSubject : public TrainingSubject {
 public:
  explicit TwoMatmulSubject(SubjectOptions o) : TrainingSubject(std::move(o)) {
    model_ = std::make_shared<TwoMatmulModule>(at::TensorOptions().device(options_.device));
    init_parameters(*model_, options_.seed, /*std=*/1.0);
  }
  std::string name() const override { return "two_matmul"; }
  std::shared_ptr<torch::nn::Module> module() const override { return model_; }
  std::vector<c10::IValue> batch(int64_t step) const override {
    int64_t b = options_.batch_size ? options_.batch_size : 2;
    return {seeded_normal(options_.seed * 1000003 + step, {b, 4}, options_.device)};
  }
  c10::IValue train_step(const std::vector<c10::IValue>& args) override {
    const at::Tensor& x = args.at(0).toTensor();
    at::Tensor y = trace::call_module("layer", x, [this](const at::Tensor& in) {
      return at::mm(at::gelu(at::mm(in, model_->w1)), model_->w2);
    });
    at::Tensor loss;
    {
      trace::ModuleScope scope("loss", ir::Phase::Loss);
      loss = y.sum();
    }
    return loss_and_gradients(*model_, loss);
  }

 private:
  std::shared_ptr<TwoMatmulModule> model_;
};

}  // namespace

std::vector<std::string> available_subjects() {
  std::vector<std::string> names{"mlp", "two_matmul", "llama3", "dropout_mlp", "deepseek_v3"};
  for (const std::string& zoo : zoo_models()) names.push_back(zoo);
  return names;
}

std::vector<std::string> debug_models() {
  std::vector<std::string> names{"llama3", "deepseek_v3"};
  for (const std::string& zoo : zoo_models()) names.push_back(zoo);
  return names;
}

SubjectOptions suite_options(const std::string& name) {
  SubjectOptions options;
  const std::vector<std::string> zoo = zoo_models();
  const bool is_zoo = std::find(zoo.begin(), zoo.end(), name) != zoo.end();
  if (name == "llama3" || is_zoo) {
    options.batch_size = 1;
    options.seq_len = 16;
  }
  if (is_zoo) options.n_layers = name == "qwen3_moe" ? 1 : 2;
  if (name == "deepseek_v3") options.n_layers = 2;  // a dense block and a MoE block
  return options;
}

std::unique_ptr<TrainingSubject> make_subject(const std::string& name, const SubjectOptions& options) {
  const std::vector<std::string> zoo = zoo_models();
  const bool is_zoo = std::find(zoo.begin(), zoo.end(), name) != zoo.end();
  const bool configured = !options.config.empty() && options.config != kDebugConfig;
  if (is_zoo) return configured ? make_configured_subject(name, options) : make_zoo_subject(name, options);
  if (options.dtype != c10::ScalarType::Float)
    throw std::invalid_argument("model '" + name + "' is built in float32 only; a " +
                                std::string(c10::toString(options.dtype)) + " variant exists for the zoo models (" +
                                "qwen3, qwen3_moe, llama4, gpt_oss)");
  if (!options.attention.empty() && name != "deepseek_v3" && !(name == "llama3" && options.attention == "flex"))
    throw std::invalid_argument("option attention='" + options.attention +
                                "' is for deepseek_v3 (mla, mha) or llama3 (flex), not '" + name + "'");
  if (configured) return make_configured_subject(name, options);
  if (name == "mlp") return std::make_unique<MlpSubject>(options);
  if (name == "two_matmul") return std::make_unique<TwoMatmulSubject>(options);
  if (name == "llama3") return make_llama3_subject(options);
  if (name == "dropout_mlp") return make_dropout_mlp_subject(options);
  if (name == "deepseek_v3") return make_deepseek_v3_subject(options);
  std::string known;
  for (const auto& n : available_subjects()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown model '" + name + "' (known: " + known + ")");
}

}  // namespace passcheck::models
