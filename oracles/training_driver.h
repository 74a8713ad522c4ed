// The multi-step oracle: trains two identical copies of a subject for N optimizer
// steps, one eagerly with autograd (the eager oracle) and one through its traced joint
// graph, and compares loss, every gradient, every parameter and every buffer bit for
// bit after every step.
#pragma once

#include "framework/check/compare.h"
#include "framework/check/pipeline.h"
#include "framework/exec/executor.h"
#include "framework/trace/traced_program.h"
#include "oracles/eager_checkpoint.h"
#include "oracles/eager_chunked.h"
#include "oracles/models/subject.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torch::optim {
class Optimizer;
}

namespace passcheck::oracles {

/// Optimizers from LibTorch, configured identically on both paths.
enum class OptimizerKind { SGD, Adam };
OptimizerKind parse_optimizer(const std::string& name);
const char* to_string(OptimizerKind kind);
/// The optimizer both paths use (SGD with momentum 0.9, or Adam) over `params`.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(OptimizerKind kind, std::vector<at::Tensor> params, double lr);

/// The parameters an optimizer steps: one tensor per storage, so a tied parameter (the
/// same storage under several FQNs, e.g. qwen3's embedding and output) is stepped once.
std::vector<at::Tensor> optimizer_parameters(const torch::nn::Module& module);

/// Sets the gradient of every optimizer parameter of `module` from a training step's
/// outputs [loss, gradient per FQN in named_parameters() order] and returns those
/// parameters. The gradients of FQNs sharing one storage are summed in FQN order (each
/// covers its own FQN's uses); an FQN registered with the very tensor of an earlier one
/// adds nothing (autograd already returned that tensor's whole gradient for both).
std::vector<at::Tensor> assign_gradients(const torch::nn::Module& module, const std::vector<at::Tensor>& outputs);

/// Drops the gradients (rather than zeroing them: a traced gradient may be a view, e.g.
/// a transposed mm result, which zero_grad cannot detach in place).
void drop_gradients(const std::vector<at::Tensor>& params);

struct DriverReport;
struct StepReport;

struct DriverOptions {
  std::string model = "llama3";
  models::SubjectOptions subject;
  /// When set, builds each of the two subjects instead of models::make_subject(model):
  /// random programs (generators/program.h) run through the driver this way. It must
  /// return identical subjects on every call; trace_on_meta is not supported with it.
  std::function<std::unique_ptr<models::TrainingSubject>()> make_subject;
  int steps = 5;
  OptimizerKind optimizer = OptimizerKind::SGD;
  double learning_rate = 1e-2;
  /// Trace a meta-device copy of the model (no computation), then bind the real one.
  bool trace_on_meta = false;
  /// Optional rewrite of the traced program before training (passes plug in here).
  std::function<void(trace::TracedProgram&)> transform;
  /// Keep going after the first step that differs (report every step).
  bool continue_after_mismatch = true;
  /// Run the eager path with activation checkpointing (a fresh EagerCheckpointGuard per
  /// step; region_parameters defaults to the eager subject's module tree). The traced
  /// path is untouched: graph AC passes plug in through `transform`.
  std::optional<EagerCheckpointConfig> eager_checkpoint;
  /// Run the eager path with the matching module calls split in two chunks (a fresh
  /// EagerChunkGuard per step): the oracle graph chunking is compared against. The
  /// traced path is untouched: chunking passes plug in through `transform`. Exclusive
  /// with eager_checkpoint (one module interceptor per thread).
  std::optional<EagerChunkConfig> eager_chunking;
  /// Executor options of the traced path (live-byte tracking is always switched on).
  exec::ExecutorOptions executor;
  /// Seed of the default generators, reset before each step of each path so random
  /// operators draw the same numbers eagerly and traced.
  uint64_t rng_seed = 1234;
  /// Called after each step's optimizer update with the traced subject (tests re-allocate
  /// a parameter there, same values in new memory, as a checkpoint load does).
  std::function<void(int step, models::TrainingSubject& traced)> after_step;
  /// Called after each step with the report so far (header fields filled in) and that
  /// step's row, so a long run shows its rows as they finish.
  std::function<void(const DriverReport& so_far, const StepReport& step)> on_step;
};

struct StepReport {
  int step = 0;
  std::vector<check::TensorComparison> comparisons;
  /// Non-numeric failures of the traced step (e.g. outputs carrying autograd history).
  std::vector<std::string> problems;
  /// Every comparison bitwise equal and no problem.
  bool equal() const;
  /// Peak CPU/CUDA bytes allocated during the eager step and the traced step.
  int64_t eager_peak_bytes = 0;
  int64_t traced_peak_bytes = 0;
  /// Peak bytes the executor held beyond its inputs during the traced step.
  int64_t traced_peak_live_bytes = 0;
  /// What eager checkpointing did in this step (no regions when it is off).
  EagerCheckpointStats eager_checkpoint;
  /// The module calls eager chunking split in this step (none when it is off).
  EagerChunkStats eager_chunking;
  /// Parts run under the CUDA-graph wrapper in this step (none without the cudagraph
  /// pass): what each did (warm-up, capture, replay) and the inputs it copied; the shared
  /// pool's bytes (modelled on the replay backend), the pool one per wrapper would need,
  /// and the argument buffers the wrappers keep.
  std::vector<exec::ModuleRunStats::CapturedPart> captured;
  int64_t pool_bytes = 0;
  int64_t unshared_pool_bytes = 0;
  int64_t kept_input_bytes = 0;
};

struct DriverReport {
  std::string model;
  size_t graph_nodes = 0;
  size_t graph_inputs = 0;
  double trace_seconds = 0;
  std::vector<StepReport> steps;
  bool equal() const;
  /// A per-step table of what was compared and the verdict: format_header(), a
  /// format_step() row per step, format_footer().
  std::string format() const;
  std::string format_header() const;
  static std::string format_step(const StepReport& step);
  /// Checkpointing/chunking statistics of the last step and the verdict line.
  std::string format_footer() const;
};

/// Runs `pipeline` on the traced program's graph; when it holds a partitioner, on a module
/// made from that graph, which the program then runs instead (TracedProgram::run_as_module).
/// `after_module` (optional) sees the module once the pipeline is done.
std::vector<check::PassRecord> apply_pipeline(trace::TracedProgram& program, const check::Pipeline& pipeline,
                                              const check::PipelineOptions& options = {},
                                              const std::function<void(const ir::Module&)>& after_module = nullptr);

/// Runs the comparison; throws on setup errors (unknown model, tracing failure).
DriverReport run_traced_vs_eager(const DriverOptions& options);

/// Runs `subject.train_step(args)` eagerly (grad mode on): the eager oracle.
std::vector<at::Tensor> eager_step(models::TrainingSubject& subject, const std::vector<c10::IValue>& args);

/// Traces the subject's training step on `example_args` (optionally on a meta copy).
trace::TracedProgram trace_subject(models::TrainingSubject& subject, const std::vector<c10::IValue>& example_args,
                                   bool on_meta);

}  // namespace passcheck::oracles
