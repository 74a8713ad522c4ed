// passcheck bench --cudagraph BACKEND: the traced training step with and without the
// CUDA-graph wrapper, side by side in one process (calls alternate so drift hits both),
// with the eager step for reference; then the wrapper's pool against the eager step's
// peak and the inputs each replay copies. On `cuda` this is the launch-overhead saving
// the seed measured; on `replay` (CPU) the wrapper only adds the copies and the output
// writes, so the figure there is the model's cost, not a speedup.
#include "framework/cli/commands.h"

#include "framework/check/pipeline.h"
#include "framework/exec/memory.h"
#include "framework/version.h"
#include "oracles/models/subject.h"
#include "oracles/training_driver.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

namespace passcheck::cli {

namespace {

using Clock = std::chrono::steady_clock;

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// One timed call; reading the loss back waits for the device.
template <class Step>
double timed(Step&& step) {
  auto t0 = Clock::now();
  std::vector<at::Tensor> out = step();
  (void)out.at(0).to(at::kCPU);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int run_cudagraph_bench(const BenchArgs& args) {
  return guarded("bench", [&] {
    if (args.repeats < 1 || args.warmup < 0) throw std::invalid_argument("--repeats must be >= 1 and --warmup >= 0");
    if (args.cudagraph != "replay" && args.cudagraph != "cuda")
      throw std::invalid_argument("--cudagraph " + args.cudagraph + ": expected replay or cuda");
    c10::Device device(args.device);
    if (device.is_cuda() && !at::hasCUDA()) throw std::invalid_argument("--device cuda: no CUDA device is available");
    if (args.cudagraph == "cuda" && !device.is_cuda())
      throw std::invalid_argument("--cudagraph cuda captures CUDA graphs: give --device cuda");
    at::set_num_threads(args.threads);
    models::SubjectOptions options;
    options.device = device;
    options.batch_size = args.batch_size;
    options.seq_len = args.seq_len;
    auto eager = models::make_subject(args.model, options);
    auto plain_subject = models::make_subject(args.model, options);
    auto captured_subject = models::make_subject(args.model, options);
    trace::TracedProgram plain = oracles::trace_subject(*plain_subject, plain_subject->batch(0), false);
    trace::TracedProgram captured = oracles::trace_subject(*captured_subject, captured_subject->batch(0), false);
    const std::string pipeline = args.pipeline.empty() ? "cudagraph{backend=" + args.cudagraph + "}" : args.pipeline;
    oracles::apply_pipeline(captured, check::Pipeline::parse(pipeline));

    std::vector<double> eager_times, plain_times, captured_times;
    int64_t eager_peak = 0;
    for (int i = 0; i < args.warmup + 2 + args.repeats; ++i) {
      // A new batch every call, as in training: the wrapper copies it in.
      const std::vector<c10::IValue> batch = eager->batch(i);
      exec::PeakMemoryScope scope(device);
      double e = timed([&] { return oracles::eager_step(*eager, batch); });
      eager_peak = std::max(eager_peak, scope.peak_above_start());
      double p = timed([&] { return plain(batch).toTensorVector(); });
      double c = timed([&] { return captured(batch).toTensorVector(); });
      if (i < args.warmup + 2) continue;  // the wrapper's warm-up and capture calls
      eager_times.push_back(e);
      plain_times.push_back(p);
      captured_times.push_back(c);
    }
    const exec::ModuleRunStats& stats = captured.last_module_stats();
    const double e = median_of(eager_times), p = median_of(plain_times), c = median_of(captured_times);
    std::printf("passcheck bench --model %s --cudagraph %s --device %s  (passcheck %s, %d thread(s), %d timed runs, "
                "medians)\n",
                args.model.c_str(), args.cudagraph.c_str(), device.str().c_str(), PASSCHECK_VERSION, args.threads,
                args.repeats);
    std::printf("  pipeline: %s\n", pipeline.c_str());
    std::printf("  %-46s %10.3f ms\n", "eager training step", e * 1e3);
    std::printf("  %-46s %10.3f ms\n", "traced step", p * 1e3);
    std::printf("  %-46s %10.3f ms   (speedup over traced %.2fx)\n", "traced step under the CUDA-graph wrapper",
                c * 1e3, p / c);
    for (const auto& part : stats.captured)
      std::printf("  %-46s %10lld copies, %lld bytes\n", ("copied per replay by " + part.part).c_str(),
                  static_cast<long long>(part.call.copies), static_cast<long long>(part.call.copy_bytes));
    std::printf("  %-46s %10s (%s with one pool per part)\n", "graph pool", exec::format_bytes(stats.pool_bytes).c_str(),
                exec::format_bytes(stats.unshared_pool_bytes).c_str());
    std::printf("  %-46s %10s\n", "kept argument buffers", exec::format_bytes(stats.kept_input_bytes).c_str());
    std::printf("  %-46s %10s (pool = %.1f %% of it)\n", "eager step peak", exec::format_bytes(eager_peak).c_str(),
                eager_peak > 0 ? 100.0 * static_cast<double>(stats.pool_bytes) / static_cast<double>(eager_peak) : 0.0);
    return 0;
  });
}

}  // namespace passcheck::cli
