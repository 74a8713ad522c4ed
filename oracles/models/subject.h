// A training subject: a debug model plus its training step and a deterministic batch
// stream. The same subject code runs eagerly (the oracle) and under the tracer, so
// "traced == eager" compares one program executed two ways.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace passcheck::models {

/// How a subject is split over a device mesh (empty plan: one rank holds everything).
/// The rank is the calling thread's (framework/dist/communicator.h: dist::current_rank()).
struct ParallelOptions {
  /// Comma-separated parallelisms: "fsdp" (parameters sharded S(0) over dim "dp"),
  /// "tp" (tensor parallel over dim "tp"), "ep" (experts over dim "ep").
  std::string plan;
  /// The mesh spec, e.g. "dp=2,tp=2" (framework/dist/mesh.h).
  std::string mesh;
  /// Test-only deliberately wrong variants, to show the checks fail: "fsdp-sum-gradient"
  /// (the unshard's backward reduce-scatters with "sum" instead of "avg"),
  /// "tp-no-copy-to-group" (column-parallel inputs skip Megatron's f), "moe-local-counts"
  /// (each rank moves its expert biases by its own token counts, not the global ones).
  /// Empty: correct.
  std::string fault;
  bool enabled() const { return !plan.empty(); }
};

struct SubjectOptions {
  uint64_t seed = 0;
  c10::Device device = c10::Device(c10::DeviceType::CPU);
  /// Batch size and sequence length overrides (0 keeps the model's default).
  int64_t batch_size = 0;
  int64_t seq_len = 0;
  /// Number of transformer blocks of the language models (0 keeps the default): small
  /// models for the distributed suites.
  int64_t n_layers = 0;
  /// deepseek_v3 routed experts at a fixed per-expert capacity (deepseek_v3.h); 0 keeps
  /// the dense dispatch. Expert parallelism needs it.
  double moe_capacity_factor = 0;
  /// deepseek_v3 capacity groups: the token batch split in this many equal groups of rows,
  /// each with its own capacity (an EP rank is one group; single-rank runs compared with
  /// an ep-way run use ep groups). 0 keeps 1.
  int64_t moe_capacity_groups = 0;
  /// Parameter dtype of the language models (Float; BFloat16 for the bf16 variants of
  /// qwen3 and qwen3_moe). Buffers that count (MoE balancing) stay float32.
  c10::ScalarType dtype = c10::ScalarType::Float;
  /// deepseek_v3's attention: "" or "mla" (multi-head latent attention), "mha" (the
  /// standard multi-head simplification); llama3's: "" (scaled_dot_product_attention) or
  /// "flex" (FlexAttention's computation, annotated for a regional compiler).
  std::string attention;
  ParallelOptions parallel;
  /// Named configuration (configs.h): "" or "debug" for the debug sizes, else a
  /// production shape such as llama3 "405b" (meant for the meta device).
  std::string config;
};

class TrainingSubject {
 public:
  virtual ~TrainingSubject() = default;
  virtual std::string name() const = 0;
  /// The root module; parameter and buffer FQNs are relative to it.
  virtual std::shared_ptr<torch::nn::Module> module() const = 0;
  /// Arguments of the training step for step number `step` (deterministic).
  virtual std::vector<c10::IValue> batch(int64_t step) const = 0;
  /// Forward, loss and gradients: returns [loss, grad of each parameter in
  /// named_parameters() order] as a tensor list.
  virtual c10::IValue train_step(const std::vector<c10::IValue>& args) = 0;
  /// State updates a model makes between steps outside autograd (none by default).
  virtual void before_optimizer_step() {}
  /// Placement of each parameter and buffer of a parallelized subject on its mesh: FQN
  /// -> one entry per mesh dim, major to minor ("S(0)", "R", "P(sum)"). Empty for a
  /// single-rank subject.
  virtual std::map<std::string, std::vector<std::string>> placements() const { return {}; }
  const SubjectOptions& options() const { return options_; }

 protected:
  explicit TrainingSubject(SubjectOptions options) : options_(std::move(options)) {}
  SubjectOptions options_;
};

/// Names accepted by make_subject: the small programs "mlp", "two_matmul", "dropout_mlp"
/// and the seven debug models "llama3", "deepseek_v3", "qwen3", "qwen3_moe", "llama4",
/// "gpt_oss" (zoo.h).
std::vector<std::string> available_subjects();
/// The seven debug models of the zoo (available_subjects() without the small programs).
std::vector<std::string> debug_models();
/// The sizes the suites that run every pass or pipeline on every model use (registry
/// properties, cudagraph training, partition budgets, fuzz cases): llama3 at batch 1 x 16
/// tokens; the zoo models at batch 1 x 16 tokens with two blocks (qwen3_moe one: a
/// block is 39 M parameters), which keeps each model's distinctive layers (llama4: a NoPE
/// dense block and a chunked-RoPE MoE block; gpt_oss: a sliding-window and a full block);
/// deepseek_v3 with two blocks (its dense block and a MoE block); the small programs at
/// their defaults. `passcheck check` trains the full sizes.
SubjectOptions suite_options(const std::string& name);

/// Builds a subject; throws std::invalid_argument for an unknown name, listing the known ones.
std::unique_ptr<TrainingSubject> make_subject(const std::string& name, const SubjectOptions& options = {});

}  // namespace passcheck::models
