// The production-shapes benchmark behind `passcheck bench --production`: the production
// configurations (oracles/models/configs.h) traced on the meta device, then every
// registered pass and the named pipelines run on the traced graphs with the gate on (the
// verifier after every pass). Per configuration: the time to build the model on meta, the
// meta trace time and node count of the single-rank graph and of one rank's graph under
// a parallel plan, the peak resident set size of the process while building and tracing,
// and per pass the time of the pass itself and of the pass with its gate. Each pass runs
// in a forked child, so a pass over the time limit is stopped and reported as skipped, a
// crash is reported instead of ending the bench, and the child's own peak RSS is
// measured. Nothing runs any kernel: every tensor is on meta.
#include "workflows/bench/production.h"
#include "workflows/bench/timing.h"

#include "framework/check/pipeline.h"
#include "framework/dist/mesh.h"
#include "framework/io/files.h"
#include "framework/ir/module.h"
#include "framework/trace/tracer.h"
#include "oracles/distributed_driver.h"
#include "oracles/models/configs.h"
#include "oracles/models/subject.h"
#include "oracles/pass_on_models.h"
#include "oracles/symbolic_trace.h"
#include "oracles/training_driver.h"

#include <nlohmann/json.hpp>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

namespace passcheck::bench {

namespace {

// The process's peak resident set (VmHWM) in MiB; reset_peak_rss() restarts it where the
// kernel allows (/proc/self/clear_refs "5"), so each configuration gets its own peak.
double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

double current_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

void reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  if (clear) clear << "5";
}

nlohmann::json timing_json(const PassTiming& t) {
  return {{"status", t.status}, {"pass_ms", t.pass_ms}, {"gated_ms", t.gated_ms}, {"prerequisites_ms", t.prerequisites_ms},
          {"nodes_after", t.nodes_after}, {"child_peak_rss_mib", t.child_peak_rss_mib}};
}

// Runs `prerequisites` (untimed in the figures) then `timed` on a copy of `graph` (a
// module when either holds a partitioner) with the gate on; returns the figures as JSON.
nlohmann::json run_pipelines(const ir::Graph& graph, const std::string& prerequisites, const std::string& timed) {
  const check::Pipeline before =
      prerequisites.empty() ? check::Pipeline(std::vector<check::PassInvocation>{}) : check::Pipeline::parse(prerequisites);
  const check::Pipeline measured = check::Pipeline::parse(timed);
  const bool as_module = before.has_module_pass() || measured.has_module_pass();
  std::unique_ptr<ir::Graph> copy = graph.clone();
  std::optional<ir::Module> module;
  if (as_module) module.emplace(ir::Module::of_graph(std::move(copy)));
  auto run = [&](const check::Pipeline& p) { return as_module ? p.run(*module) : p.run(*copy); };
  auto t0 = Clock::now();
  if (!before.passes().empty()) run(before);
  const double prerequisites_ms = ms_since(t0);
  t0 = Clock::now();
  std::vector<check::PassRecord> records = run(measured);
  const double gated_ms = ms_since(t0);
  double pass_ms = 0;
  for (const check::PassRecord& r : records) pass_ms += r.seconds * 1e3;
  return {{"pass_ms", pass_ms}, {"gated_ms", gated_ms}, {"prerequisites_ms", prerequisites_ms},
          {"nodes_after", as_module ? module->num_nodes() : copy->num_nodes()}};
}

// run_pipelines in a forked child, stopped after `limit_s` seconds.
PassTiming timed_in_child(const ir::Graph& graph, const std::string& prerequisites, const std::string& timed,
                          double limit_s) {
  PassTiming timing;
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  std::cout.flush();
  std::cerr.flush();
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    close(fds[0]);
    nlohmann::json out;
    try {
      out = run_pipelines(graph, prerequisites, timed);
      out["status"] = "ok";
    } catch (const std::exception& e) {
      std::string message = e.what();
      out = {{"status", "failed: " + message.substr(0, message.find('\n'))}};
    }
    const std::string text = out.dump();
    size_t written = 0;
    while (written < text.size()) {
      ssize_t n = write(fds[1], text.data() + written, text.size() - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  const auto deadline = Clock::now() + std::chrono::duration<double>(limit_s);
  bool timed_out = false;
  for (;;) {
    const double left_ms = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
    if (left_ms <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd p {fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min(left_ms, 1000.0)) + 1);
    if (ready <= 0) continue;
    char buffer[4096];
    const ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(child, SIGKILL);
  int wstatus = 0;
  struct rusage usage {};
  wait4(child, &wstatus, 0, &usage);
  timing.child_peak_rss_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
  if (timed_out) {
    char status[64];
    std::snprintf(status, sizeof status, "skipped: > %.0f s", limit_s);
    timing.status = status;
    return timing;
  }
  if (WIFSIGNALED(wstatus)) {
    timing.status = "crashed: signal " + std::to_string(WTERMSIG(wstatus));
    return timing;
  }
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    timing.status = j.at("status").get<std::string>();
    if (timing.status == "ok") {
      timing.pass_ms = j.at("pass_ms").get<double>();
      timing.gated_ms = j.at("gated_ms").get<double>();
      timing.prerequisites_ms = j.at("prerequisites_ms").get<double>();
      timing.nodes_after = j.at("nodes_after").get<size_t>();
    }
  } catch (const std::exception&) {
    timing.status = "failed: no result from the child";
  }
  return timing;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parse_production_configs(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  if (text.empty()) {
    for (const models::ModelConfigInfo& c : models::production_configs()) out.emplace_back(c.model, c.name);
    return out;
  }
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos)
      throw std::invalid_argument("--configs item '" + item + "' is not MODEL:CONFIG (e.g. llama3:405b)");
    out.emplace_back(item.substr(0, colon), item.substr(colon + 1));
    models::check_config(out.back().first, out.back().second);
  }
  return out;
}

ProductionReport measure_production(const ProductionOptions& given, std::ostream& progress) {
  if (given.pass_limit_s <= 0) throw std::invalid_argument("--pass-limit must be > 0 seconds");
  const auto configs = given.configs.empty() ? parse_production_configs("") : given.configs;
  const dist::DeviceMesh mesh = dist::DeviceMesh::parse(given.mesh);
  mesh.coordinates(given.rank);

  // Every registered pass after its prerequisites, then the named pipelines.
  std::vector<std::pair<std::string, std::string>> passes;  // name, prerequisites
  if (!given.trace_only)
    for (const check::RegisteredPass* pass : check::PassRegistry::global().list()) {
      const std::string& name = pass->info.name;
      // chunk runs on a graph traced with a symbolic batch instead (below).
      if (!oracles::runs_on_traced_subjects(name)) continue;
      const std::string full = oracles::pipeline_with_prerequisites(name, "llama3");
      const size_t last = full.rfind(',');
      passes.emplace_back(last == std::string::npos ? full : full.substr(last + 1),
                          last == std::string::npos ? "" : full.substr(0, last));
    }

  ProductionReport report;
  report.baseline_rss_mib = current_rss_mib();
  for (const auto& [model, config] : configs) {
    ConfigFigures f;
    f.model = model;
    f.config = config;
    models::SubjectOptions options = given.subject;
    options.config = config;
    options.device = c10::Device(c10::DeviceType::Meta);
    f.parameters = models::parameter_count(model, options);
    progress << "[" << model << ":" << config << "] tracing on meta\n";

    reset_peak_rss();
    auto t0 = Clock::now();
    auto subject = models::make_subject(model, options);
    f.build_ms = ms_since(t0);
    t0 = Clock::now();
    trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), /*on_meta=*/false);
    f.trace_ms = ms_since(t0);
    f.nodes = program.graph().num_nodes();
    f.peak_rss_mib = peak_rss_mib();
    std::shared_ptr<ir::Graph> single = program.shared_graph();

    std::shared_ptr<ir::Graph> per_rank;
    f.rank_plan = given.plan + " " + given.mesh + " rank " + std::to_string(given.rank);
    f.ranks = mesh.world_size();
    try {
      t0 = Clock::now();
      models::SubjectOptions rank_options = options;
      rank_options.parallel.plan = given.plan;
      per_rank = oracles::trace_rank_graph(model, rank_options, mesh, given.rank);
      f.rank_trace_ms = ms_since(t0);
      f.rank_nodes = per_rank->num_nodes();
    } catch (const std::exception& e) {
      f.rank_error = e.what();
    }

    for (const auto& [name, prerequisites] : passes) {
      progress << "[" << model << ":" << config << "] " << name << "\n";
      f.passes.emplace_back(name, timed_in_child(*single, prerequisites, name, given.pass_limit_s));
    }
    if (!given.trace_only) {
      // chunk (and concretize after it) on the step traced with a symbolic batch: four
      // meta traces at batch 2 and its neighbours, symbolized (oracles/symbolic_trace.h).
      // The production batch of 1 cannot be halved, so this graph is traced at batch 2.
      progress << "[" << model << ":" << config << "] chunk on a symbolic-batch trace\n";
      try {
        oracles::SymbolicTraceOptions symbolic;
        symbolic.model = model;
        symbolic.subject = options;
        symbolic.subject.batch_size = 2;
        symbolic.dim = oracles::SymbolicDim::Batch;
        symbolic.trace_on_meta = true;
        const std::shared_ptr<ir::Graph> chunkable = oracles::trace_symbolic(symbolic).graph;
        f.passes.emplace_back("chunk (symbolic batch 2)", timed_in_child(*chunkable, "", "chunk", given.pass_limit_s));
        f.passes.emplace_back("concretize (after chunk)",
                              timed_in_child(*chunkable, "chunk", "concretize", given.pass_limit_s));
      } catch (const std::exception& e) {
        std::string message = e.what();
        PassTiming failed;
        failed.status = "failed: symbolic trace: " + message.substr(0, message.find('\n'));
        f.passes.emplace_back("chunk (symbolic batch 2)", failed);
        f.passes.emplace_back("concretize (after chunk)", failed);
      }
      progress << "[" << model << ":" << config << "] default pipeline\n";
      f.passes.emplace_back("default", timed_in_child(*single, "", "default", given.pass_limit_s));
      if (per_rank) {
        progress << "[" << model << ":" << config << "] autoparallel pipeline on " << f.rank_plan << "\n";
        f.passes.emplace_back("autoparallel (per rank)", timed_in_child(*per_rank, "", "autoparallel", given.pass_limit_s));
      }
    }
    report.configs.push_back(std::move(f));
  }
  return report;
}

std::string production_json(const ProductionReport& report) {
  nlohmann::json j = nlohmann::json::array();
  for (const ConfigFigures& f : report.configs) {
    nlohmann::json passes_json = nlohmann::json::object();
    for (const auto& [name, timing] : f.passes) passes_json[name] = timing_json(timing);
    j.push_back({{"model", f.model},
                 {"config", f.config},
                 {"parameters", f.parameters},
                 {"build_ms", f.build_ms},
                 {"trace_ms", f.trace_ms},
                 {"nodes", f.nodes},
                 {"peak_rss_mib", f.peak_rss_mib},
                 {"rank_plan", f.rank_plan},
                 {"ranks", f.ranks},
                 {"rank_nodes", f.rank_nodes},
                 {"rank_trace_ms", f.rank_trace_ms},
                 {"rank_error", f.rank_error},
                 {"passes", passes_json}});
  }
  return nlohmann::json{{"baseline_rss_mib", report.baseline_rss_mib}, {"configs", j}}.dump(2) + "\n";
}

}  // namespace passcheck::bench
