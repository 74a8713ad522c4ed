// passcheck bench: its options, the printed figures and the JSON; it dispatches to the
// production, distributed and CUDA-graph forms. The measuring is
// workflows/bench/training_step.h.
#include "tools/passcheck/commands.h"
#include "framework/io/files.h"
#include "framework/version.h"
#include "oracles/models/configs.h"
#include "oracles/models/subject.h"
#include "workflows/bench/training_step.h"

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace passcheck::cli {

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
    check_training_memory(args.model, subject_options, FootprintShape{2, 1, 1, args.memory_budget});
    const bench::TrainingStepFigures f =
        bench::measure_training_step(args.model, subject_options, args.warmup, args.repeats);
    const double eager = f.eager_s, traced = f.traced_s;
    const double per_node_us = f.overhead_per_node_s * 1e6;
    std::printf("passcheck bench --model %s  (passcheck %s, %d thread(s), %d warm-up, %d timed runs, medians)\n",
                args.model.c_str(), PASSCHECK_VERSION, args.threads, args.warmup, args.repeats);
    std::printf("  %-44s %10.2f ms\n", "eager training step", eager * 1e3);
    std::printf("  %-44s %10.2f ms   (%.3f x eager)\n", "traced-graph training step", traced * 1e3, traced / eager);
    std::printf("  %-44s %10.2f ms\n", "tracing, real tensors", f.trace_real_s * 1e3);
    std::printf("  %-44s %10.2f ms\n", "tracing, meta tensors", f.trace_meta_s * 1e3);
    std::printf("  %-44s %10zu\n", "nodes in the joint graph", f.nodes);
    std::printf("  %-44s %10.2f us\n", "executor overhead per node (outside kernels)", per_node_us);
    std::printf("  %-44s %10.1f %%\n", "share of traced step inside operator calls", f.kernel_share * 100);

    nlohmann::json ac_json = nlohmann::json::object();
    if (args.ac_memory) {
      for (const bench::AcPeak& peak : bench::measure_ac_peaks(args.model, subject_options)) {
        if (peak.policy == "none") {
          std::printf("  %-44s %10.1f MiB\n", "peak, traced graph without AC",
                      static_cast<double>(peak.traced_peak_bytes) / (1 << 20));
          ac_json["none"] = {{"traced_peak_bytes", peak.traced_peak_bytes}};
          continue;
        }
        std::printf("  %-44s %10.1f / %.1f MiB%s\n", ("peak, AC " + peak.policy + ": traced+remat / eager").c_str(),
                    static_cast<double>(peak.traced_peak_bytes) / (1 << 20),
                    static_cast<double>(peak.eager_peak_bytes) / (1 << 20), peak.bitwise ? "" : "  (NOT bitwise)");
        ac_json[peak.policy] = {{"traced_peak_bytes", peak.traced_peak_bytes},
                                {"eager_peak_bytes", peak.eager_peak_bytes},
                                {"bitwise", peak.bitwise}};
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
                          {"trace_real_ms", f.trace_real_s * 1e3},
                          {"trace_meta_ms", f.trace_meta_s * 1e3},
                          {"graph_nodes", f.nodes},
                          {"executor_overhead_us_per_node", per_node_us},
                          {"kernel_share", f.kernel_share}};
      io::write_file(args.json, j.dump(2) + "\n", "--json report");
      std::cerr << "wrote " << args.json << "\n";
    }
    return 0;
  });
}

}  // namespace passcheck::cli
