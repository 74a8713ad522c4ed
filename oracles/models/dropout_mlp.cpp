// dropout_mlp: a one-layer MLP with dropout inside the checkpointable block
// ("layers.0": fc1 -> dropout(p=0.25) -> gelu -> fc2, sum loss). It exists to test how
// activation checkpointing treats random ops: rematerialization must refuse to
// recompute the dropout, or replay its generator state bit for bit.
#include "oracles/models/dropout_mlp.h"

#include "framework/trace/module_scope.h"
#include "oracles/models/layers.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>

namespace passcheck::models {

namespace {

class Block : public torch::nn::Module {
 public:
  explicit Block(const at::TensorOptions& o) {
    fc1 = register_module("fc1", std::make_shared<LinearImpl>(16, 32, o));
    fc2 = register_module("fc2", std::make_shared<LinearImpl>(32, 16, o));
  }
  at::Tensor forward(const std::string& fqn, const at::Tensor& x) {
    at::Tensor h = trace::call_module(fqn + ".fc1", x, [&](const at::Tensor& in) { return fc1->forward(in); });
    h = at::gelu(at::dropout(h, 0.25, /*train=*/true));
    return trace::call_module(fqn + ".fc2", h, [&](const at::Tensor& in) { return fc2->forward(in); });
  }
  std::shared_ptr<LinearImpl> fc1, fc2;
};

class DropoutMlp : public torch::nn::Module {
 public:
  explicit DropoutMlp(const at::TensorOptions& o) {
    layers = register_module("layers", torch::nn::ModuleList());
    block = std::make_shared<Block>(o);
    layers->push_back(block);
  }
  torch::nn::ModuleList layers;
  std::shared_ptr<Block> block;
};

class DropoutMlpSubject : public TrainingSubject {
 public:
  explicit DropoutMlpSubject(SubjectOptions o) : TrainingSubject(std::move(o)) {
    model_ = std::make_shared<DropoutMlp>(at::TensorOptions().device(options_.device));
    init_parameters(*model_, options_.seed);
  }
  std::string name() const override { return "dropout_mlp"; }
  std::shared_ptr<torch::nn::Module> module() const override { return model_; }
  std::vector<c10::IValue> batch(int64_t step) const override {
    int64_t b = options_.batch_size ? options_.batch_size : 8;
    return {seeded_normal(options_.seed * 1000003 + step, {b, 16}, options_.device)};
  }
  c10::IValue train_step(const std::vector<c10::IValue>& args) override {
    at::Tensor y = trace::call_module("layers.0", args.at(0).toTensor(),
                                      [&](const at::Tensor& in) { return model_->block->forward("layers.0", in); });
    at::Tensor loss;
    {
      trace::ModuleScope scope("loss", ir::Phase::Loss);
      loss = y.sum();
    }
    return loss_and_gradients(*model_, loss);
  }

 private:
  std::shared_ptr<DropoutMlp> model_;
};

}  // namespace

std::unique_ptr<TrainingSubject> make_dropout_mlp_subject(const SubjectOptions& options) {
  return std::make_unique<DropoutMlpSubject>(options);
}

}  // namespace passcheck::models
