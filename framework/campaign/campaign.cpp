// The campaign loop (see campaign.h).
//
// Isolation design: the parent never runs a tensor operation. It only schedules cases,
// each in a fork()ed child that generates its graph, writes the pending repro file,
// runs the property checks and reports through its exit status (cases.h: CaseExit;
// anything else or a signal is a crash). LibTorch is set to one intra-op thread before
// the first fork, so no pool thread can hold a lock a child inherits; children _exit()
// without static destructors. A child past the time limit is SIGKILLed. Minimization
// also runs in a child with a time limit; for crashes, every candidate it tries runs in
// a grandchild. A child counts the rules and guards its passes reach (through a
// counting copy of the registry) and leaves them in its coverage file for the parent,
// which sums them into the campaign's coverage table.
//
// File ownership: the parent claims each case's repro and coverage files with O_EXCL
// before the child starts, under a name nothing in --out holds yet, and removes only
// those claimed files (a passing case's repro, every coverage file). Failing repros stay.
#include "framework/campaign/campaign.h"

#include "framework/campaign/cases.h"
#include "framework/campaign/repro_tools.h"
#include "framework/check/isolation.h"
#include "framework/check/pipeline.h"
#include "framework/check/repro.h"
#include "framework/io/files.h"
#include "framework/ir/text.h"

#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

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
void claim_case_files(const std::string& out, CaseSpec& spec) {
  std::string stem = out + "/case-" + std::to_string(spec.index) + "-" + std::to_string(spec.seed);
  for (int k = 1;; ++k) {
    std::string base = k == 1 ? stem : stem + "-run" + std::to_string(k);
    if (!io::create_exclusively(base + ".repro", "repro file")) continue;
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
  std::string text;
  try {
    text = io::read_file(path, "case coverage file");
  } catch (const io::FileError&) {
  }
  ::unlink(path.c_str());
  if (!text.empty()) into.merge(check::Coverage::parse(text));
}

struct Running {
  pid_t pid = -1;
  CaseSpec spec;
  Clock::time_point start;
};

class Campaign {
 public:
  Campaign(const CampaignOptions& options, const check::PassRegistry& registry, const CampaignCallbacks& callbacks)
      : options_(options), registry_(registry), callbacks_(callbacks) {
    max_cases_ = options.cases > 0 ? options.cases : (options.seconds > 0 ? 0 : 100);
    report_.pipeline = case_pipeline(options, 0);
    report_.policy_varies = report_.pipeline != case_pipeline(options, 1);
  }

  CampaignReport run() {
    start_ = Clock::now();
    try {
      loop();
    } catch (...) {
      for (const Running& r : running_) {
        check::kill_child(r.pid);
        ::unlink(r.spec.coverage_path.c_str());
        if (!holds_content(r.spec.repro_path)) ::unlink(r.spec.repro_path.c_str());
      }
      throw;
    }
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
    Running r;
    r.spec.index = started_++;
    r.spec.seed = splitmix64(options_.seed * 0x100000001b3ULL + static_cast<uint64_t>(r.spec.index));
    r.spec.pipeline = case_pipeline(options_, r.spec.seed);
    r.spec.baseline = baseline_pipeline(options_, r.spec.seed);
    claim_case_files(options_.out, r.spec);
    r.start = Clock::now();
    r.pid = check::spawn_child([&]() -> int { return run_case(r.spec, options_, registry_); });
    if (r.pid < 0) {
      ::unlink(r.spec.repro_path.c_str());
      ::unlink(r.spec.coverage_path.c_str());
      throw std::runtime_error("cannot start a case process (fork failed)");
    }
    running_.push_back(r);
  }

  void loop() {
    Clock::time_point last_progress = start_;
    while (true) {
      while (static_cast<int>(running_.size()) < options_.jobs && !stop_starting()) start_case();
      if (running_.empty()) break;
      for (size_t i = 0; i < running_.size();) {
        check::ChildOutcome o;
        bool ended = check::poll_child(running_[i].pid, o);
        if (!ended && options_.timeout_ms > 0 &&
            since(running_[i].start) * 1000 > static_cast<double>(options_.timeout_ms)) {
          check::kill_child(running_[i].pid);
          o.kind = check::ChildOutcome::Kind::TimedOut;
          ended = true;
        }
        if (!ended) {
          ++i;
          continue;
        }
        Running r = running_[i];
        running_.erase(running_.begin() + static_cast<long>(i));
        finish(r, o);
        progress();
        last_progress = Clock::now();
      }
      if (since(last_progress) >= 0.5) {
        progress();
        last_progress = Clock::now();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // A finished case: remove its (own) pending repro, or complete and minimize it.
  void finish(const Running& r, const check::ChildOutcome& o) {
    ++report_.cases_run;
    collect_coverage(r.spec.coverage_path, report_.coverage);
    const std::string& path = r.spec.repro_path;
    CaseFailure failure;
    failure.index = r.spec.index;
    failure.seed = r.spec.seed;
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
    if (have_repro && options_.minimize && failure.kind != "timeout" && options_.chunk.empty()) minimize(failure);
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
  std::vector<Running> running_;
  CampaignReport report_;
};

}  // namespace

void validate(const CampaignOptions& options, const check::PassRegistry& registry) {
  if (!options.pipeline.empty() && !options.pass.empty()) throw std::invalid_argument("give at most one of --pipeline and --pass");
  if (options.pipeline.empty() && options.pass.empty() && options.chunk.empty())
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
  // Unknown pass names and bad options fail here, before any case runs.
  check::parse_pipeline(case_pipeline(options, 0), registry);
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
    if (!have_program_generators())
      throw std::invalid_argument("--chunk needs the program generator, which this build does not have");
  }
  if (options.source == CaseSource::Situations && !have_program_generators())
    throw std::invalid_argument("--situations needs the generators, which this build does not have");
}

CampaignReport run_campaign(const CampaignOptions& given, const check::PassRegistry& registry,
                            const CampaignCallbacks& callbacks) {
  validate(given, registry);
  CampaignOptions options = given;
  if (!have_program_generators()) options.source = CaseSource::Models;
  io::ensure_directory(options.out, "repro directory --out");
  check::prepare_for_fork();
  return Campaign(options, registry, callbacks).run();
}

}  // namespace passcheck::campaign
