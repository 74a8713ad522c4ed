// See training_step.h.
#include "workflows/bench/training_step.h"
#include "workflows/bench/timing.h"

#include "framework/check/pipeline.h"
#include "framework/exec/executor.h"
#include "framework/trace/tracer.h"
#include "oracles/eager_checkpoint.h"
#include "oracles/models/configs.h"
#include "oracles/training_driver.h"

#include <algorithm>
#include <chrono>

namespace passcheck::bench {


TrainingStepFigures measure_training_step(const std::string& model, const models::SubjectOptions& subject_options,
                                          int warmup, int repeats) {
  if (repeats < 1 || warmup < 0) throw std::invalid_argument("--repeats must be >= 1 and --warmup >= 0");
  models::check_buildable_on_device(model, subject_options);
  auto subject = models::make_subject(model, subject_options);
  std::vector<c10::IValue> batch = subject->batch(0);
  TrainingStepFigures f;

  // Tracing time, real tensors and meta tensors.
  std::vector<double> trace_real, trace_meta;
  for (int i = 0; i < std::max(3, repeats / 2); ++i) {
    auto t0 = Clock::now();
    trace::TracedProgram p = oracles::trace_subject(*subject, batch, /*on_meta=*/false);
    trace_real.push_back(seconds_since(t0));
    f.nodes = p.graph().num_nodes();
    t0 = Clock::now();
    trace::TracedProgram m = oracles::trace_subject(*subject, batch, /*on_meta=*/true);
    trace_meta.push_back(seconds_since(t0));
  }

  trace::TracedProgram program = oracles::trace_subject(*subject, batch, /*on_meta=*/false);
  std::vector<double> eager_times, traced_times;
  for (int i = 0; i < warmup + repeats; ++i) {
    auto t0 = Clock::now();
    auto eager_out = oracles::eager_step(*subject, batch);
    double eager = seconds_since(t0);
    eager_out.clear();
    t0 = Clock::now();
    c10::IValue traced_out = program(batch);
    double traced = seconds_since(t0);
    if (i >= warmup) {
      eager_times.push_back(eager);
      traced_times.push_back(traced);
    }
  }

  // Executor overhead: time of a run outside the operator calls, per node.
  exec::ExecutorOptions timed;
  timed.time_kernels = true;
  exec::Executor timed_exec(program.graph(), timed);
  std::vector<double> overhead_per_node, kernel_share;
  for (int i = 0; i < warmup + repeats; ++i) {
    timed_exec.run(program.make_graph_inputs(batch));
    const auto& st = timed_exec.last_stats();
    if (i >= warmup) {
      overhead_per_node.push_back((st.total_seconds - st.kernel_seconds) / static_cast<double>(f.nodes));
      kernel_share.push_back(st.kernel_seconds / st.total_seconds);
    }
  }
  f.eager_s = median(eager_times);
  f.traced_s = median(traced_times);
  f.trace_real_s = median(trace_real);
  f.trace_meta_s = median(trace_meta);
  f.overhead_per_node_s = median(overhead_per_node);
  f.kernel_share = median(kernel_share);
  return f;
}

std::vector<AcPeak> measure_ac_peaks(const std::string& model, const models::SubjectOptions& subject) {
  std::vector<AcPeak> peaks;
  oracles::DriverOptions plain;
  plain.model = model;
  plain.subject = subject;
  plain.steps = 1;
  peaks.push_back({"none", oracles::run_traced_vs_eager(plain).steps.at(0).traced_peak_bytes, 0, true});
  for (const char* policy : {"default", "eager", "full", "op"}) {
    oracles::DriverOptions options = plain;
    options.eager_checkpoint = oracles::eager_checkpoint_for(policy, std::nullopt, check::PassRegistry::global());
    const std::string pipeline = std::string("ac-regions,sac-tag{policy=") + policy + "},remat";
    options.transform = [&pipeline](trace::TracedProgram& program) {
      check::Pipeline::parse(pipeline).run(program.mutable_graph());
    };
    oracles::DriverReport report = oracles::run_traced_vs_eager(options);
    const oracles::StepReport& step = report.steps.at(0);
    peaks.push_back({policy, step.traced_peak_bytes, step.eager_peak_bytes, report.equal()});
  }
  return peaks;
}

}  // namespace passcheck::bench
