// The processes a campaign runs its cases in, behind one interface so the campaign loop
// does not care how they are made. Three kinds (`passcheck fuzz --isolation`):
//  - per-case: the campaign process forks one child per case (the original design);
//    every child pays LibTorch's first-use costs again;
//  - fork-server: N pre-forked workers (N = --jobs) warm LibTorch, the generators and the
//    pass registry once, then receive case specs over a socketpair and fork a fresh
//    grandchild per case from that warm state (as AFL's fork server does). A case still
//    runs in a process of its own, so a crash or hang costs that case only; a worker that
//    dies itself is reported as the crash of its case and replaced;
//  - persistent: the same warm workers run each case themselves (no fork per case), the
//    default generator reset before each; a crash or hang kills the worker, whose case is
//    reported as a crash or timeout, and a new worker (forked from the campaign process,
//    so never from a state a case left) takes the next case. Cases of one worker share its
//    process; passes hold no mutable globals, and a worker is replaced every few hundred
//    cases.
// Either way the case body is run_case() (cases.h), which writes the pending repro before
// any pass runs, and the time limit is a SIGKILL: by the campaign process for per-case
// children and persistent workers, by the worker for its grandchild (and by the campaign
// process for a worker that stops answering).
#pragma once

#include "workflows/campaign/campaign.h"
#include "workflows/campaign/cases.h"
#include "framework/check/isolation.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace passcheck::campaign {

/// A case that ended, and how its process ended.
struct EndedCase {
  CaseSpec spec;
  check::ChildOutcome outcome;
  /// The case's decision counts (Coverage::serialize) when it has no coverage file: a
  /// persistent worker sends them with its answer.
  std::string coverage;
};

/// Where the cases of one campaign run.
class CaseProcesses {
 public:
  virtual ~CaseProcesses() = default;
  /// Whether another case can start now.
  virtual bool can_start() const = 0;
  /// Starts `spec` (its files already claimed); throws std::runtime_error when no process
  /// can be made.
  virtual void start(const CaseSpec& spec) = 0;
  /// Cases still running.
  virtual size_t running() const = 0;
  /// Waits at most `wait_ms` for cases to end (time limits applied); returns those that did.
  virtual std::vector<EndedCase> wait(int wait_ms) = 0;
  /// Kills every running case; returns their specs (for the caller to clean up files).
  virtual std::vector<CaseSpec> kill_all() = 0;
};

/// One fork()ed child per case from the calling process.
std::unique_ptr<CaseProcesses> per_case_processes(const CampaignOptions& options, const check::PassRegistry& registry);

/// `options.jobs` warm workers, each forking a grandchild per case, or running the cases
/// itself when options.isolation is Persistent. Throws std::runtime_error when a worker
/// cannot be started.
std::unique_ptr<CaseProcesses> fork_server_processes(const CampaignOptions& options, const check::PassRegistry& registry);

}  // namespace passcheck::campaign
