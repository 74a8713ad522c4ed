// passcheck bench: eager training-step time, traced-graph step time, tracing time
// (real and meta), joint-graph size and per-node executor overhead, measured side by
// side in one process on a fixed number of threads. Eager and traced runs alternate so
// drift in machine speed hits both alike. Figures are medians.
#include "tools/passcheck/commands.h"
#include "tools/passcheck/check_common.h"
#include "framework/io/files.h"

#include "framework/check/pipeline.h"
#include "framework/exec/executor.h"
#include "framework/trace/tracer.h"
#include "framework/version.h"
#include "oracles/models/configs.h"
#include "oracles/models/subject.h"
#include "oracles/training_driver.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

namespace passcheck::cli {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int run_bench(const BenchArgs& args) {
  if (args.production) return run_production_bench(args);
  if (!args.parallel.empty() || !args.mesh.empty()) return run_distributed_bench(args);
  if (!args.cudagraph.empty()) return run_cudagraph_bench(args);
  return guarded("bench", [&] {
    if (args.repeats < 1 || args.warmup < 0) throw std::invalid_argument("--repeats must be >= 1 and --warmup >= 0");
    if (!args.json.empty()) io::check_writable(args.json, "--json report");
    at::set_num_threads(args.threads);
    models::SubjectOptions subject_options;
    subject_options.batch_size = args.batch_size;
    subject_options.seq_len = args.seq_len;
    apply_model_variant(subject_options, args.n_layers, args.dtype, args.attention, args.config);
    models::check_buildable_on_device(args.model, subject_options);
    auto subject = models::make_subject(args.model, subject_options);
    std::vector<c10::IValue> batch = subject->batch(0);

    // Tracing time, real tensors and meta tensors.
    std::vector<double> trace_real, trace_meta;
    size_t nodes = 0;
    for (int i = 0; i < std::max(3, args.repeats / 2); ++i) {
      auto t0 = Clock::now();
      trace::TracedProgram p = oracles::trace_subject(*subject, batch, /*on_meta=*/false);
      trace_real.push_back(seconds_since(t0));
      nodes = p.graph().num_nodes();
      t0 = Clock::now();
      trace::TracedProgram m = oracles::trace_subject(*subject, batch, /*on_meta=*/true);
      trace_meta.push_back(seconds_since(t0));
    }

    trace::TracedProgram program = oracles::trace_subject(*subject, batch, /*on_meta=*/false);
    std::vector<double> eager_times, traced_times;
    for (int i = 0; i < args.warmup + args.repeats; ++i) {
      auto t0 = Clock::now();
      auto eager_out = oracles::eager_step(*subject, batch);
      double eager = seconds_since(t0);
      eager_out.clear();
      t0 = Clock::now();
      c10::IValue traced_out = program(batch);
      double traced = seconds_since(t0);
      if (i >= args.warmup) {
        eager_times.push_back(eager);
        traced_times.push_back(traced);
      }
    }

    // Executor overhead: time of a run outside the operator calls, per node.
    exec::ExecutorOptions timed;
    timed.time_kernels = true;
    exec::Executor timed_exec(program.graph(), timed);
    std::vector<double> overhead_per_node, kernel_share;
    for (int i = 0; i < args.warmup + args.repeats; ++i) {
      timed_exec.run(program.make_graph_inputs(batch));
      const auto& st = timed_exec.last_stats();
      if (i >= args.warmup) {
        overhead_per_node.push_back((st.total_seconds - st.kernel_seconds) / static_cast<double>(nodes));
        kernel_share.push_back(st.kernel_seconds / st.total_seconds);
      }
    }

    double eager = median(eager_times), traced = median(traced_times);
    double per_node_us = median(overhead_per_node) * 1e6;
    std::printf("passcheck bench --model %s  (passcheck %s, %d thread(s), %d warm-up, %d timed runs, medians)\n",
                args.model.c_str(), PASSCHECK_VERSION, args.threads, args.warmup, args.repeats);
    std::printf("  %-44s %10.2f ms\n", "eager training step", eager * 1e3);
    std::printf("  %-44s %10.2f ms   (%.3f x eager)\n", "traced-graph training step", traced * 1e3, traced / eager);
    std::printf("  %-44s %10.2f ms\n", "tracing, real tensors", median(trace_real) * 1e3);
    std::printf("  %-44s %10.2f ms\n", "tracing, meta tensors", median(trace_meta) * 1e3);
    std::printf("  %-44s %10zu\n", "nodes in the joint graph", nodes);
    std::printf("  %-44s %10.2f us\n", "executor overhead per node (outside kernels)", per_node_us);
    std::printf("  %-44s %10.1f %%\n", "share of traced step inside operator calls", median(kernel_share) * 100);

    nlohmann::json ac_json = nlohmann::json::object();
    if (args.ac_memory) {
      oracles::DriverOptions plain;
      plain.model = args.model;
      plain.subject = subject_options;
      plain.steps = 1;
      const int64_t no_ac = oracles::run_traced_vs_eager(plain).steps.at(0).traced_peak_bytes;
      std::printf("  %-44s %10.1f MiB\n", "peak, traced graph without AC", static_cast<double>(no_ac) / (1 << 20));
      ac_json["none"] = {{"traced_peak_bytes", no_ac}};
      for (const char* policy : {"default", "eager", "full", "op"}) {
        oracles::DriverOptions options = plain;
        options.eager_checkpoint = eager_checkpoint_for(policy, std::nullopt);
        const std::string pipeline = std::string("ac-regions,sac-tag{policy=") + policy + "},remat";
        options.transform = [&pipeline](trace::TracedProgram& program) {
          check::Pipeline::parse(pipeline).run(program.mutable_graph());
        };
        oracles::DriverReport report = oracles::run_traced_vs_eager(options);
        const oracles::StepReport& step = report.steps.at(0);
        std::printf("  %-44s %10.1f / %.1f MiB%s\n", (std::string("peak, AC ") + policy + ": traced+remat / eager").c_str(),
                    static_cast<double>(step.traced_peak_bytes) / (1 << 20),
                    static_cast<double>(step.eager_peak_bytes) / (1 << 20), report.equal() ? "" : "  (NOT bitwise)");
        ac_json[policy] = {{"traced_peak_bytes", step.traced_peak_bytes},
                           {"eager_peak_bytes", step.eager_peak_bytes},
                           {"bitwise", report.equal()}};
      }
    }

    if (!args.json.empty()) {
      nlohmann::json j = {{"model", args.model},
                          {"ac_memory", ac_json},
                          {"threads", args.threads},
                          {"repeats", args.repeats},
                          {"eager_step_ms", eager * 1e3},
                          {"traced_step_ms", traced * 1e3},
                          {"traced_over_eager", traced / eager},
                          {"trace_real_ms", median(trace_real) * 1e3},
                          {"trace_meta_ms", median(trace_meta) * 1e3},
                          {"graph_nodes", nodes},
                          {"executor_overhead_us_per_node", per_node_us},
                          {"kernel_share", median(kernel_share)}};
      io::write_file(args.json, j.dump(2) + "\n", "--json report");
      std::cerr << "wrote " << args.json << "\n";
    }
    return 0;
  });
}

}  // namespace passcheck::cli
