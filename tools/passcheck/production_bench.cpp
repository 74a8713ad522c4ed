// passcheck bench --production: its options and the markdown tables. The measuring is
// workflows/bench/production.h.
#include "tools/passcheck/commands.h"
#include "framework/io/files.h"
#include "framework/version.h"
#include "workflows/bench/production.h"

#include <ATen/Parallel.h>

#include <cstdio>
#include <iostream>

namespace passcheck::cli {

namespace {

using bench::ConfigFigures;
using bench::PassTiming;

std::string cell(const PassTiming& t) {
  if (t.status != "ok") return t.status;
  char text[64];
  std::snprintf(text, sizeof text, "%.0f (%.0f)", t.pass_ms, t.gated_ms);
  return text;
}

}  // namespace

int run_production_bench(const BenchArgs& args) {
  return guarded("bench", [&] {
    if (!args.json.empty()) io::check_writable(args.json, "--json report");
    at::set_num_threads(args.threads);  // 1 by default: the forked children run inline
    bench::ProductionOptions options;
    options.configs = bench::parse_production_configs(args.production_configs);
    options.plan = args.parallel.empty() ? "fsdp" : args.parallel;
    options.mesh = args.mesh.empty() ? "dp=128" : args.mesh;
    options.rank = args.rank;
    options.trace_only = args.production_trace_only;
    options.pass_limit_s = args.pass_limit_s;
    apply_model_variant(options.subject, args.n_layers, args.dtype, args.attention, "");
    options.subject.batch_size = args.batch_size;
    options.subject.seq_len = args.seq_len;
    const bench::ProductionReport report = bench::measure_production(options, std::cerr);
    const std::vector<ConfigFigures>& all = report.configs;
    const std::string& plan = options.plan;
    const std::string& mesh_text = options.mesh;
    const double baseline_rss = report.baseline_rss_mib;

    std::printf("passcheck bench --production  (passcheck %s, %d thread(s); meta device; per-rank plan %s %s; "
                "pass limit %.0f s; process RSS before tracing %.0f MiB)\n\n",
                PASSCHECK_VERSION, args.threads, plan.c_str(), mesh_text.c_str(), args.pass_limit_s, baseline_rss);
    std::printf("| config | parameters | ranks | nodes (1 rank) | build ms | trace ms | peak RSS MiB | nodes (per rank) "
                "| per-rank trace ms |\n|---|---|---|---|---|---|---|---|---|\n");
    for (const ConfigFigures& f : all) {
      std::string rank_nodes = f.rank_error.empty() ? std::to_string(f.rank_nodes) : "n/a";
      char rank_ms[32];
      std::snprintf(rank_ms, sizeof rank_ms, "%.0f", f.rank_trace_ms);
      std::printf("| %s:%s | %.2f B | %lld | %zu | %.0f | %.0f | %.0f | %s | %s |\n", f.model.c_str(), f.config.c_str(),
                  static_cast<double>(f.parameters) / 1e9, static_cast<long long>(f.ranks), f.nodes, f.build_ms,
                  f.trace_ms, f.peak_rss_mib, rank_nodes.c_str(), f.rank_error.empty() ? rank_ms : "n/a");
    }
    for (const ConfigFigures& f : all)
      if (!f.rank_error.empty())
        std::printf("\n%s:%s per rank (%s): %s\n", f.model.c_str(), f.config.c_str(), f.rank_plan.c_str(),
                    f.rank_error.c_str());
    if (!all.empty() && !all.front().passes.empty()) {
      std::printf("\nPass time in ms, gated time (verifier, changed-claim and claim checks) in parentheses; each pass "
                  "after its prerequisites, on the single-rank graph (autoparallel: on the per-rank graph).\n\n| pass |");
      for (const ConfigFigures& f : all) std::printf(" %s:%s |", f.model.c_str(), f.config.c_str());
      std::printf("\n|---|");
      for (size_t i = 0; i < all.size(); ++i) std::printf("---|");
      std::printf("\n");
      for (size_t p = 0; p < all.front().passes.size(); ++p) {
        std::printf("| %s |", all.front().passes[p].first.c_str());
        for (const ConfigFigures& f : all)
          std::printf(" %s |", p < f.passes.size() ? cell(f.passes[p].second).c_str() : "n/a");
        std::printf("\n");
      }
    }

    if (!args.json.empty()) {
      io::write_file(args.json, bench::production_json(report), "--json report");
      std::cerr << "wrote " << args.json << "\n";
    }
    return 0;
  });
}

}  // namespace passcheck::cli
