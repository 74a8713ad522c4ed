// passcheck bench --cudagraph BACKEND: its options and the printed figures. The measuring
// is workflows/bench/cudagraph.h.
#include "tools/passcheck/commands.h"
#include "oracles/models/subject.h"

#include "framework/exec/memory.h"
#include "framework/version.h"
#include "workflows/bench/cudagraph.h"

#include <ATen/Parallel.h>

#include <cstdio>

namespace passcheck::cli {

int run_cudagraph_bench(const BenchArgs& args) {
  return guarded("bench", [&] {
    bench::CudagraphBenchOptions options;
    options.model = args.model;
    options.backend = args.cudagraph;
    options.device = args.device;
    options.pipeline = args.pipeline;
    options.repeats = args.repeats;
    options.warmup = args.warmup;
    options.batch_size = args.batch_size;
    options.seq_len = args.seq_len;
    models::SubjectOptions estimate_options;
    estimate_options.batch_size = args.batch_size;
    estimate_options.seq_len = args.seq_len;
    // Eager, traced and captured steps side by side, plus the capture pool.
    check_training_memory(args.model, estimate_options, FootprintShape{3, 1, 1, args.memory_budget});
    at::set_num_threads(args.threads);
    const bench::CudagraphBenchResult r = bench::measure_cudagraph_step(options);
    const exec::ModuleRunStats& stats = r.captured_stats;
    const double e = r.eager_s, p = r.traced_s, c = r.captured_s;
    const int64_t eager_peak = r.eager_peak_bytes;
    std::printf("passcheck bench --model %s --cudagraph %s --device %s  (passcheck %s, %d thread(s), %d timed runs, "
                "medians)\n",
                args.model.c_str(), args.cudagraph.c_str(), c10::Device(args.device).str().c_str(), PASSCHECK_VERSION,
                args.threads, args.repeats);
    std::printf("  pipeline: %s\n", r.pipeline.c_str());
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
