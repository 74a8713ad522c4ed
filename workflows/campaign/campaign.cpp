// The campaign loop (see campaign.h).
//
// Isolation design: the parent never runs a tensor operation. It only schedules cases,
// each in a fork()ed process (case_processes.h: a grandchild of a warm fork-server
// worker, or with --isolation per-case a child of the parent) that generates its graph, writes the pending repro file,
// runs the property checks and reports through its exit status (cases.h: CaseExit;
// anything else or a signal is a crash). LibTorch is set to one intra-op thread before
// the first fork, so no pool thread can hold a lock a child inherits; children _exit()
// without static destructors. A child past the time limit is SIGKILLed. Minimization
// also runs in a child with a time limit; for crashes, every candidate it tries runs in
// a grandchild. A child counts the rules and guards its passes reach (through a
// counting copy of the registry) and leaves them in its coverage file for the parent
// (a persistent worker sends them with its answer instead: no coverage file), which
// sums them into the campaign's coverage table.
//
// File ownership: the parent claims each case's repro (and, unless persistent, coverage) files with O_EXCL
// before the child starts, under a name nothing in --out holds yet, and removes only
// those claimed files (a passing case's repro, every coverage file). Failing repros stay.
#include "workflows/campaign/campaign.h"

#include "workflows/campaign/case_processes.h"
#include "workflows/campaign/cases.h"
#include "workflows/campaign/repro_tools.h"
#include "framework/check/isolation.h"
#include "framework/check/pipeline.h"
#include "framework/check/repro.h"
#include "framework/io/files.h"
#include "framework/ir/text.h"
#include "framework/trace/tracer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <memory>

namespace passcheck::campaign {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string baseline_pipeline(const CampaignOptions& options, uint64_t case_seed) {
  if (options.baseline_pass.empty()) return "";
  CampaignOptions base = options;
  base.pass = options.baseline_pass;
  return case_pipeline(base, case_seed);
}

// Claims fresh repro and coverage files for a case: "case-<index>-<seed>.repro", or with
// "-run<k>" added when an earlier campaign left that name in the directory.
// A persistent worker sends the case's counts back with its answer: no coverage file.
void claim_case_files(const std::string& out, CaseSpec& spec, bool coverage_file) {
  std::string stem = out + "/case-" + std::to_string(spec.index) + "-" + std::to_string(spec.seed);
  for (int k = 1;; ++k) {
    std::string base = k == 1 ? stem : stem + "-run" + std::to_string(k);
    if (!io::create_exclusively(base + ".repro", "repro file")) continue;
    if (!coverage_file) {
      spec.repro_path = base + ".repro";
      spec.coverage_path.clear();
      return;
    }
    if (!io::create_exclusively(base + ".repro.coverage", "case coverage file")) {
      ::unlink((base + ".repro").c_str());  // ours: claimed just above
      continue;
    }
    spec.repro_path = base + ".repro";
    spec.coverage_path = base + ".repro.coverage";
    return;
  }
}

bool holds_content(const std::string& path) {
  try {
    return io::kind_of(path) == io::PathKind::Regular && !io::read_file(path, "repro file").empty();
  } catch (const io::FileError&) {
    return false;
  }
}

// Reads and removes a child's counts (the parent created the file); an empty file (the
// child crashed or timed out before writing) adds nothing.
void collect_coverage(const std::string& path, check::Coverage& into) {
  if (path.empty()) return;
  std::string text;
  try {
    text = io::read_file(path, "case coverage file");
  } catch (const io::FileError&) {
  }
  ::unlink(path.c_str());
  if (!text.empty()) into.merge_case(check::Coverage::parse(text));
}

class Campaign {
 public:
  Campaign(const CampaignOptions& options, const check::PassRegistry& registry, const CampaignCallbacks& callbacks)
      : options_(options), registry_(registry), callbacks_(callbacks) {
    max_cases_ = options.cases > 0 ? options.cases : (options.seconds > 0 ? 0 : 100);
    report_.pipeline = case_pipeline(options, case_kind(options, 0), 0);
    report_.policy_varies = report_.pipeline != case_pipeline(options, case_kind(options, 0), 1);
    for (size_t i = 0; i < options.mix.size(); ++i)
      report_.mix_pipelines.emplace_back(kind_name(options.mix[i]), case_pipeline(options, options.mix[i], 0));
  }

  CampaignReport run() {
    start_ = Clock::now();
    try {
      processes_ = options_.isolation == Isolation::PerCase ? per_case_processes(options_, registry_)
                                                             : fork_server_processes(options_, registry_);  // or persistent
      loop();
    } catch (...) {
      if (processes_) {
        for (const CaseSpec& spec : processes_->kill_all()) {
          if (!spec.coverage_path.empty()) ::unlink(spec.coverage_path.c_str());
          if (!holds_content(spec.repro_path)) ::unlink(spec.repro_path.c_str());
        }
      }
      throw;
    }
    processes_.reset();  // the fork server's workers end here
    report_.seconds = since(start_);
    progress();
    return std::move(report_);
  }

 private:
  bool stop_starting() const {
    if (max_cases_ > 0 && started_ >= max_cases_) return true;
    if (options_.seconds > 0 && since(start_) >= options_.seconds) return true;
    return options_.max_failures > 0 && report_.failure_count() >= options_.max_failures;
  }

  void progress() {
    if (!callbacks_.on_progress) return;
    CampaignProgress p;
    p.done = report_.cases_run;
    p.total = max_cases_;
    p.failures = report_.failure_count();
    p.elapsed_s = since(start_);
    callbacks_.on_progress(p);
  }

  void start_case() {
    CaseSpec spec;
    spec.index = started_++;
    spec.seed = splitmix64(options_.seed * 0x100000001b3ULL + static_cast<uint64_t>(spec.index));
    spec.kind = case_kind(options_, spec.index);
    spec.pipeline = case_pipeline(options_, spec.kind, spec.seed);
    // Differential mode compares the pass under --pass; a mix's other kinds have none.
    if (spec.kind == CaseKind::Graph || options_.mix.empty()) spec.baseline = baseline_pipeline(options_, spec.seed);
    claim_case_files(options_.out, spec, options_.isolation != Isolation::Persistent);
    try {
      processes_->start(spec);
    } catch (...) {
      ::unlink(spec.repro_path.c_str());
      if (!spec.coverage_path.empty()) ::unlink(spec.coverage_path.c_str());
      throw;
    }
  }

  void loop() {
    Clock::time_point last_progress = start_;
    while (true) {
      while (processes_->can_start() && !stop_starting()) start_case();
      if (processes_->running() == 0) break;
      for (const EndedCase& e : processes_->wait(500)) {
        if (!e.coverage.empty()) {
          try {
            report_.coverage.merge_case(check::Coverage::parse(e.coverage));
          } catch (const std::invalid_argument&) {
            // The table then misses one case; the verdict does not depend on it.
          }
        }
        finish(e.spec, e.outcome);
        progress();
        last_progress = Clock::now();
      }
      if (since(last_progress) >= 0.5) {
        progress();
        last_progress = Clock::now();
      }
    }
  }

  // A finished case: remove its (own) pending repro, or complete and minimize it.
  void finish(const CaseSpec& spec, const check::ChildOutcome& o) {
    ++report_.cases_run;
    ++report_.cases_by_kind[kind_name(spec.kind)];
    collect_coverage(spec.coverage_path, report_.coverage);
    const std::string& path = spec.repro_path;
    CaseFailure failure;
    failure.index = spec.index;
    failure.seed = spec.seed;
    failure.kind_of_case = kind_name(spec.kind);
    if (o.kind == check::ChildOutcome::Kind::Exited && (o.exit_code == kCasePassed || o.exit_code == kCaseBaselineFailsToo)) {
      report_.baseline_failures += o.exit_code == kCaseBaselineFailsToo;
      ::unlink(path.c_str());  // created by this run for this case
      return;
    }
    bool have_repro = holds_content(path);
    if (o.kind == check::ChildOutcome::Kind::Exited && o.exit_code == kCaseViolated) {
      ++report_.violations;
      failure.kind = "violation";
      failure.detail = "property violated";
    } else {
      bool timeout = o.kind == check::ChildOutcome::Kind::TimedOut;
      ++(timeout ? report_.timeouts : report_.crashes);
      failure.kind = timeout ? "timeout" : "crash";
      failure.detail = o.describe(options_.timeout_ms);
      if (have_repro) {
        check::Repro repro = check::read_repro(path);
        repro.status = failure.kind;
        repro.property = failure.kind;
        repro.messages = {"the case process " + failure.detail};
        if (timeout) repro.timeout_ms = options_.timeout_ms;
        check::write_repro(path, repro);
      }
    }
    if (!have_repro) ::unlink(path.c_str());  // the empty file this run claimed
    failure.repro = have_repro ? path : "";
    report_.repro_files += have_repro;
    failure.found_at_s = since(start_);
    // Graph cases only: a chunk case is a program and a sim-mesh case runs on a mesh.
    if (have_repro && options_.minimize && failure.kind != "timeout" && spec.kind == CaseKind::Graph) minimize(failure);
    report_.failures.push_back(failure);
    if (callbacks_.on_failure) callbacks_.on_failure(failure);
  }

  // Minimizes in a child too: the minimizer runs the buggy pass again and again.
  void minimize(CaseFailure& failure) {
    const std::string& path = failure.repro;
    check::ChildOutcome m = check::run_in_child(
        [&] {
          minimize_repro(path, path, registry_, options_.minimize_seconds, options_.timeout_ms);
          return 0;
        },
        static_cast<int64_t>(options_.minimize_seconds * 1000) + 2 * options_.timeout_ms + 5000);
    try {
      check::Repro repro = check::read_repro(path);
      failure.nodes_before = ir::parse_graph(repro.original, path)->num_nodes();
      failure.nodes_after = ir::parse_graph(repro.graph_text(), path)->num_nodes();
      failure.minimized = m.kind == check::ChildOutcome::Kind::Exited && m.exit_code == 0;
      if (!failure.minimized) failure.minimizer_note = "minimizer " + m.describe();
    } catch (const std::exception& e) {
      failure.minimizer_note = std::string("minimizer left an unreadable repro: ") + e.what();
    }
  }

  const CampaignOptions& options_;
  const check::PassRegistry& registry_;
  const CampaignCallbacks& callbacks_;
  int64_t max_cases_ = 0;
  int64_t started_ = 0;
  Clock::time_point start_;
  std::unique_ptr<CaseProcesses> processes_;
  CampaignReport report_;
};

}  // namespace

namespace {

// The options of a mixed campaign (--mix): its kinds' passes exist and fit their kind.
void validate_mix(const CampaignOptions& options, const check::PassRegistry& registry) {
  if (!options.chunk.empty())
    throw std::invalid_argument("--chunk and --mix: a mixed campaign's chunk cases come from the mix (--mix ...,chunk; "
                                "--chunk-pass names their pass)");
  for (CaseKind kind : options.mix) {
    if (kind == CaseKind::SimMesh) {
      if (!registry.contains(options.sim_mesh_pass))
        throw std::invalid_argument("--sim-mesh-pass " + options.sim_mesh_pass + ": no such pass (see `passcheck passes`)");
      if (options.sim_mesh_pass.rfind("fuse-chained-allgathers", 0) != 0 &&
          options.sim_mesh_pass.rfind("mutant-fuse-chained-allgathers", 0) != 0)
        throw std::invalid_argument("--sim-mesh-pass " + options.sim_mesh_pass +
                                    ": sim-mesh cases are chained all_gathers; the pass must be fuse-chained-allgathers "
                                    "or one of its mutants");
    }
    if (kind == CaseKind::Chunk) chunk_passes_of(case_pipeline(options, kind, 0), registry);
  }
}

}  // namespace

void validate(const CampaignOptions& options, const check::PassRegistry& registry) {
  if (!options.pipeline.empty() && !options.pass.empty()) throw std::invalid_argument("give at most one of --pipeline and --pass");
  const bool has_graph_cases =
      options.mix.empty() || std::find(options.mix.begin(), options.mix.end(), CaseKind::Graph) != options.mix.end();
  if (options.pipeline.empty() && options.pass.empty() && options.chunk.empty() && has_graph_cases)
    throw std::invalid_argument("give one of --pipeline and --pass");
  if (!options.baseline_pass.empty() && options.pass.empty()) throw std::invalid_argument("--baseline-pass needs --pass");
  if (options.cases < 0) throw std::invalid_argument("--cases must be at least 1, got " + std::to_string(options.cases));
  if (options.seconds < 0) throw std::invalid_argument("--seconds must be positive");
  if (options.jobs < 1 || options.jobs > kMaxJobs)
    throw std::invalid_argument("--jobs must be between 1 and " + std::to_string(kMaxJobs) + ", got " +
                                std::to_string(options.jobs));
  if (options.timeout_ms < 1) throw std::invalid_argument("--timeout-ms must be at least 1 ms");
  if (options.max_failures < 0) throw std::invalid_argument("--max-failures must not be negative");
  if (options.minimize_seconds < 0) throw std::invalid_argument("--minimize-seconds must not be negative");
  if (options.out.empty()) throw std::invalid_argument("--out must name a directory");
  if (!options.mix.empty()) validate_mix(options, registry);
  // Unknown pass names and bad options fail here, before any case runs.
  if (has_graph_cases) check::parse_pipeline(case_pipeline(options, CaseKind::Graph, 0), registry);
  if (!options.baseline_pass.empty()) {
    if (!registry.contains(options.baseline_pass))
      throw std::invalid_argument("--baseline-pass " + options.baseline_pass + ": no such pass (see `passcheck passes`)");
    check::parse_pipeline(baseline_pipeline(options, 0), registry);
  }
  if (!options.chunk.empty()) {
    if (options.chunk != "batch")
      throw std::invalid_argument("--chunk " + options.chunk + ": generated programs have no sequence dimension; "
                                  "only batch chunking can be fuzzed");
    if (options.source == CaseSource::Models)
      throw std::invalid_argument("--chunk draws chunkable programs; it cannot be combined with --models");
    if (options.source == CaseSource::Situations)
      throw std::invalid_argument("--chunk draws chunkable programs; it cannot be combined with --situations");
    chunk_passes_of(case_pipeline(options, 0), registry);
  }
}

CampaignReport run_campaign(const CampaignOptions& given, const check::PassRegistry& registry,
                            const CampaignCallbacks& callbacks) {
  validate(given, registry);
  CampaignOptions options = given;
  io::ensure_directory(options.out, "repro directory --out");
  check::prepare_for_fork();
  // Dispatcher registrations only (no tensor operation): inherited by every worker.
  trace::prepare_tracing();
  return Campaign(options, registry, callbacks).run();
}

ChangeVerdict change_verdict(const CampaignReport& report, const std::vector<std::string>& passes) {
  ChangeVerdict verdict;
  const auto& changes = report.coverage.case_changes();
  for (const std::string& pass : passes) {
    auto found = changes.find(pass);
    const check::ChangeCounts c = found == changes.end() ? check::ChangeCounts{} : found->second;
    if (c.runs == 0) {
      verdict.lines.push_back(pass + " ran in no case (every case failed or was skipped before it)");
      verdict.unchanged.push_back(pass);
      continue;
    }
    if (c.changed() == 0) {
      verdict.lines.push_back(pass + " changed no case's graph (0 of " + std::to_string(c.runs) +
                              " cases): the campaign checked nothing the pass does; the generated cases give it no "
                              "work, or it reads metadata they lack");
      verdict.unchanged.push_back(pass);
      continue;
    }
    verdict.lines.push_back(pass + " changed the graph in " + std::to_string(c.changed()) + " of " +
                            std::to_string(c.runs) + " cases (" + std::to_string(c.computation) + " the computation, " +
                            std::to_string(c.metadata_only) + " metadata only)");
  }
  return verdict;
}

}  // namespace passcheck::campaign
