// Multi-step traced-vs-eager driver (see training_driver.h).
#include "oracles/training_driver.h"

#include "framework/exec/memory.h"
#include "framework/trace/tracer.h"

#include <torch/nn/module.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <map>
#include <set>

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace passcheck::oracles {

OptimizerKind parse_optimizer(const std::string& name) {
  if (name == "sgd") return OptimizerKind::SGD;
  if (name == "adam") return OptimizerKind::Adam;
  throw std::invalid_argument("unknown optimizer '" + name + "' (known: sgd, adam)");
}

const char* to_string(OptimizerKind kind) { return kind == OptimizerKind::SGD ? "sgd" : "adam"; }

std::unique_ptr<torch::optim::Optimizer> make_optimizer(OptimizerKind kind, std::vector<at::Tensor> params, double lr) {
  if (kind == OptimizerKind::SGD)
    return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr).momentum(0.9));
  return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr));
}

namespace {

const c10::StorageImpl* storage_of(const at::Tensor& t) { return t.storage().unsafeGetStorageImpl(); }

}  // namespace

std::vector<at::Tensor> optimizer_parameters(const torch::nn::Module& module) {
  std::vector<at::Tensor> out;
  std::set<const c10::StorageImpl*> seen;
  for (const at::Tensor& p : module.parameters(/*recurse=*/true))
    if (seen.insert(storage_of(p)).second) out.push_back(p);
  return out;
}

std::vector<at::Tensor> assign_gradients(const torch::nn::Module& module, const std::vector<at::Tensor>& outputs) {
  std::vector<at::Tensor> params = module.parameters(/*recurse=*/true);
  if (outputs.size() != params.size() + 1)
    throw std::runtime_error("the step returned " + std::to_string(outputs.size()) + " tensors for " +
                             std::to_string(params.size()) + " parameters and the loss");
  std::map<const c10::StorageImpl*, size_t> first;  // storage -> index of its optimizer parameter
  std::set<const c10::TensorImpl*> counted;
  std::vector<at::Tensor> stepped;
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor& p = params[i];
    if (!counted.insert(p.unsafeGetTensorImpl()).second) continue;  // the same tensor again
    at::Tensor grad = outputs[i + 1].detach();
    auto [it, fresh] = first.emplace(storage_of(p), stepped.size());
    if (fresh) {
      params[i].mutable_grad() = grad;
      stepped.push_back(p);
    } else {
      at::Tensor& sum = stepped[it->second].mutable_grad();
      sum = sum + grad;
    }
  }
  return stepped;
}

void drop_gradients(const std::vector<at::Tensor>& params) {
  for (at::Tensor p : params) p.mutable_grad() = at::Tensor();
}

bool StepReport::equal() const {
  if (!problems.empty()) return false;
  for (const auto& c : comparisons)
    if (!c.equal) return false;
  return true;
}

bool DriverReport::equal() const {
  if (steps.empty()) return false;
  for (const auto& s : steps)
    if (!s.equal()) return false;
  return true;
}

namespace {
std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

at::Tensor to_meta(const at::Tensor& t) {
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
}
}  // namespace

std::string DriverReport::format_header() const {
  char line[256];
  std::snprintf(line, sizeof line, "model %s: joint graph of %zu nodes, %zu inputs, traced in %.3f s\n", model.c_str(),
                graph_nodes, graph_inputs, trace_seconds);
  std::string out = line;
  std::snprintf(line, sizeof line, "%-5s %-10s %-8s %-13s %-13s %-15s %s\n", "step", "compared", "equal", "eager peak",
                "traced peak", "traced live", "first difference");
  return out + line;
}

std::string DriverReport::format_step(const StepReport& s) {
  size_t equal_count = 0;
  const check::TensorComparison* first_bad = nullptr;
  for (const auto& c : s.comparisons) {
    if (c.equal) ++equal_count;
    else if (!first_bad) first_bad = &c;
  }
  char line[512];
  std::string counts = std::to_string(equal_count) + "/" + std::to_string(s.comparisons.size());
  std::snprintf(line, sizeof line, "%-5d %-10s %-8s %-13s %-13s %-15s %s\n", s.step, counts.c_str(),
                s.equal() ? "yes" : "NO", mib(s.eager_peak_bytes).c_str(), mib(s.traced_peak_bytes).c_str(),
                mib(s.traced_peak_live_bytes).c_str(),
                !s.problems.empty() ? s.problems.front().c_str() : first_bad ? first_bad->describe().c_str() : "-");
  return line;
}

namespace {
// What the CUDA-graph wrappers did: per captured part, its phase and copies at each step,
// then the pool against the eager step's peak (the seed's memory comparison).
std::string format_captures(const std::vector<StepReport>& steps) {
  const StepReport& last = steps.back();
  std::string out = "cudagraph: " + std::to_string(last.captured.size()) + " captured part(s); per step: phase, inputs copied\n";
  for (size_t p = 0; p < last.captured.size(); ++p) {
    out += "  " + last.captured[p].part + ":";
    for (const StepReport& s : steps) {
      if (p >= s.captured.size()) continue;
      const exec::CaptureCall& c = s.captured[p].call;
      out += " " + std::to_string(s.step) + "=" + exec::to_string(c.phase);
      if (c.phase == exec::CaptureCall::Phase::Replay)
        out += "(" + std::to_string(c.copies) + " copied, " + std::to_string(c.copy_bytes) + " B)";
    }
    out += "\n";
  }
  int64_t eager_peak = 0;
  for (const StepReport& s : steps) eager_peak = std::max(eager_peak, s.eager_peak_bytes);
  char line[320];
  std::snprintf(line, sizeof line,
                "cudagraph pool: %s shared (%s with one pool per part), %s of kept argument buffers; eager step peak "
                "%s (pool = %.1f %% of it)\n",
                mib(last.pool_bytes).c_str(), mib(last.unshared_pool_bytes).c_str(), mib(last.kept_input_bytes).c_str(),
                mib(eager_peak).c_str(), eager_peak > 0 ? 100.0 * static_cast<double>(last.pool_bytes) / eager_peak : 0.0);
  return out + line;
}
}  // namespace

std::string DriverReport::format_footer() const {
  std::string out;
  char line[256];
  size_t total = 0, differing = 0;
  for (const StepReport& s : steps) {
    total += s.comparisons.size();
    for (const auto& c : s.comparisons) differing += c.equal ? 0 : 1;
  }
  if (!steps.empty() && !steps.back().eager_checkpoint.regions.empty()) {
    const EagerCheckpointStats& ac = steps.back().eager_checkpoint;
    std::snprintf(line, sizeof line,
                  "eager checkpointing (last step): %zu regions, %lld outputs stored (%s), %lld replayed, %lld "
                  "operators recomputed\n",
                  ac.regions.size(), static_cast<long long>(ac.saved_ops()), mib(ac.saved_bytes()).c_str(),
                  static_cast<long long>(ac.replayed_ops()), static_cast<long long>(ac.rerun_ops()));
    out += line;
  }
  if (!steps.empty() && steps.back().eager_chunking.intercepted_calls() > 0) {
    std::snprintf(line, sizeof line, "eager chunking (last step): %lld module calls split in two chunks\n",
                  static_cast<long long>(steps.back().eager_chunking.intercepted_calls()));
    out += line;
  }
  if (!steps.empty() && !steps.back().captured.empty()) out += format_captures(steps);
  std::snprintf(line, sizeof line, "verdict: %s (%zu tensors compared over %zu steps, %zu differ)\n",
                equal() ? "BITWISE EQUAL" : "MISMATCH", total, steps.size(), differing);
  out += line;
  return out;
}

std::string DriverReport::format() const {
  std::string out = format_header();
  for (const StepReport& s : steps) out += format_step(s);
  return out + format_footer();
}

std::vector<at::Tensor> eager_step(models::TrainingSubject& subject, const std::vector<c10::IValue>& args) {
  at::AutoGradMode grad_on(true);
  return subject.train_step(args).toTensorVector();
}

trace::TracedProgram trace_subject(models::TrainingSubject& subject, const std::vector<c10::IValue>& example_args,
                                   bool on_meta) {
  if (!on_meta) {
    // Tracing runs the step for real, so in-place buffer updates (running statistics)
    // would leave the traced copy one step ahead of its eager twin: put them back.
    std::vector<std::pair<at::Tensor, at::Tensor>> saved;
    for (const at::Tensor& b : subject.module()->buffers(true)) saved.emplace_back(b, b.clone());
    trace::TracedProgram program = trace::trace_step(
        {{"", subject.module()}}, [&](const std::vector<c10::IValue>& args) { return subject.train_step(args); },
        example_args);
    torch::NoGradGuard no_grad;
    for (auto& [live, copy] : saved) live.copy_(copy);
    return program;
  }
  models::SubjectOptions meta_options = subject.options();
  meta_options.device = c10::Device(c10::DeviceType::Meta);
  std::unique_ptr<models::TrainingSubject> meta_subject = models::make_subject(subject.name(), meta_options);
  std::vector<c10::IValue> meta_args;
  for (const c10::IValue& a : example_args) meta_args.push_back(a.isTensor() ? c10::IValue(to_meta(a.toTensor())) : a);
  trace::TracedProgram program = trace::trace_step(
      {{"", meta_subject->module()}},
      [&](const std::vector<c10::IValue>& args) { return meta_subject->train_step(args); }, meta_args);
  ir::retarget_device(program.mutable_graph(), meta_options.device, subject.options().device);
  program.bind({{"", subject.module()}});
  return program;
}

std::vector<check::PassRecord> apply_pipeline(trace::TracedProgram& program, const check::Pipeline& pipeline,
                                              const check::PipelineOptions& options,
                                              const std::function<void(const ir::Module&)>& after_module) {
  if (!pipeline.has_module_pass()) return pipeline.run(program.mutable_graph(), options);
  ir::Module module = ir::Module::of_graph(program.graph().clone());
  std::vector<check::PassRecord> records = pipeline.run(module, options);
  if (after_module) after_module(module);
  program.run_as_module(std::move(module));
  return records;
}

DriverReport run_traced_vs_eager(const DriverOptions& options) {
  if (options.steps < 1) throw std::invalid_argument("--steps must be at least 1");
  DriverReport report;
  report.model = options.model;
  if (options.eager_checkpoint && options.eager_chunking)
    throw std::invalid_argument("eager checkpointing and eager chunking cannot be combined: each installs the one "
                                "module interceptor of the thread");
  if (options.make_subject && options.trace_on_meta)
    throw std::invalid_argument("trace_on_meta needs a named model, not a make_subject factory");
  auto build = [&] {
    return options.make_subject ? options.make_subject() : models::make_subject(options.model, options.subject);
  };
  auto eager = build();
  auto traced = build();

  auto t0 = std::chrono::steady_clock::now();
  trace::TracedProgram program = trace_subject(*traced, traced->batch(0), options.trace_on_meta);
  report.trace_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (options.transform) options.transform(program);
  exec::ExecutorOptions exec_options = options.executor;
  exec_options.track_live_bytes = true;
  program.set_executor_options(exec_options);
  report.graph_nodes = program.graph().num_nodes();
  report.graph_inputs = program.graph().inputs().size();

  std::vector<std::string> param_names, buffer_names;
  for (const auto& item : eager->module()->named_parameters(true)) param_names.push_back(item.key());
  for (const auto& item : eager->module()->named_buffers(true)) buffer_names.push_back(item.key());
  auto eager_opt = make_optimizer(options.optimizer, optimizer_parameters(*eager->module()), options.learning_rate);
  auto traced_opt = make_optimizer(options.optimizer, optimizer_parameters(*traced->module()), options.learning_rate);
  c10::Device device = traced->options().device;

  for (int step = 1; step <= options.steps; ++step) {
    StepReport sr;
    sr.step = step;
    std::vector<at::Tensor> eager_out, traced_out;
    {
      exec::PeakMemoryScope scope(device);
      std::optional<EagerCheckpointGuard> checkpointing;
      if (options.eager_checkpoint) {
        EagerCheckpointConfig config = *options.eager_checkpoint;
        if (!config.region_parameters) config.region_parameters = module_parameters(eager->module());
        checkpointing.emplace(std::move(config));
      }
      std::optional<EagerChunkGuard> chunking;
      if (options.eager_chunking) chunking.emplace(*options.eager_chunking);
      at::manual_seed(options.rng_seed + static_cast<uint64_t>(step));
      eager_out = eager_step(*eager, eager->batch(step));
      sr.eager_peak_bytes = scope.peak_above_start();
      if (checkpointing) sr.eager_checkpoint = checkpointing->stats();
      if (chunking) sr.eager_chunking = chunking->stats();
    }
    {
      exec::PeakMemoryScope scope(device);
      at::manual_seed(options.rng_seed + static_cast<uint64_t>(step));
      try {
        traced_out = program(traced->batch(step)).toTensorVector();
      } catch (const exec::ReplayHazard& hazard) {
        // The captured graph would have replayed on stale memory: the step has no result
        // to compare, and the run stops here.
        sr.problems.push_back(hazard.what());
        report.steps.push_back(std::move(sr));
        if (options.on_step) options.on_step(report, report.steps.back());
        return report;
      }
      sr.traced_peak_bytes = scope.peak_above_start();
      if (const exec::ModuleRunStats& ms = program.last_module_stats(); !ms.captured.empty()) {
        sr.captured = ms.captured;
        sr.pool_bytes = ms.pool_bytes;
        sr.unshared_pool_bytes = ms.unshared_pool_bytes;
        sr.kept_input_bytes = ms.kept_input_bytes;
      }
      // Outputs recorded by autograd mean the executor built a second, hidden graph that
      // keeps every forward intermediate alive (historical bug 4).
      for (size_t i = 0; i < traced_out.size(); ++i)
        if (traced_out[i].defined() && traced_out[i].grad_fn())
          sr.problems.push_back("traced step output " + std::to_string(i) + " carries autograd history (" +
                                traced_out[i].grad_fn()->name() +
                                "): the executor recorded autograd, which keeps forward intermediates alive");
      sr.traced_peak_live_bytes = program.last_stats().peak_bytes_above_inputs();
    }
    for (auto& t : traced_out) t = t.detach();  // the optimizer must not see the history either
    if (eager_out.size() != traced_out.size())
      throw std::runtime_error("the traced step returned " + std::to_string(traced_out.size()) + " tensors, eager " +
                               std::to_string(eager_out.size()));
    sr.comparisons.push_back(check::compare_bitwise("loss", eager_out[0], traced_out[0]));
    for (size_t i = 1; i < eager_out.size(); ++i)
      sr.comparisons.push_back(check::compare_bitwise("grad " + param_names.at(i - 1), eager_out[i], traced_out[i]));

    // Optimizer step on both paths with the gradients each produced.
    auto apply = [&](models::TrainingSubject& subject, torch::optim::Optimizer& opt, std::vector<at::Tensor>& out) {
      std::vector<at::Tensor> params = assign_gradients(*subject.module(), out);
      subject.before_optimizer_step();
      opt.step();
      drop_gradients(params);
    };
    apply(*eager, *eager_opt, eager_out);
    apply(*traced, *traced_opt, traced_out);
    if (options.after_step) options.after_step(step, *traced);

    auto eager_params = eager->module()->parameters(true), traced_params = traced->module()->parameters(true);
    for (size_t i = 0; i < eager_params.size(); ++i)
      sr.comparisons.push_back(check::compare_bitwise("param " + param_names[i], eager_params[i], traced_params[i]));
    auto eager_buffers = eager->module()->buffers(true), traced_buffers = traced->module()->buffers(true);
    for (size_t i = 0; i < eager_buffers.size(); ++i)
      sr.comparisons.push_back(check::compare_bitwise("buffer " + buffer_names[i], eager_buffers[i], traced_buffers[i]));
    bool ok = sr.equal();
    report.steps.push_back(std::move(sr));
    if (options.on_step) options.on_step(report, report.steps.back());
    if (!ok && !options.continue_after_mismatch) break;
  }
  return report;
}

}  // namespace passcheck::oracles
