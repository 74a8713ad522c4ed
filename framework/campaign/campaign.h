// Fuzz campaigns as a library: generated cases through a pipeline, each case in its own
// fork()ed process with a time limit, a repro file for every failing case (minimized
// when asked), and the decision coverage summed over all cases. `passcheck fuzz` is a
// thin front end over run_campaign(); tests run small campaigns through it directly.
//
// Repro files are never lost: every case file is created exclusively (O_EXCL) under a
// name no earlier run left in --out, and a campaign removes only the files it created
// itself for cases that passed. A second campaign into the same directory therefore
// leaves the first one's repros untouched, whatever the seeds.
#pragma once

#include "framework/check/coverage.h"
#include "framework/check/pass.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace passcheck::campaign {

/// Where a campaign draws its case graphs from.
enum class CaseSource { Programs, Models, Situations };

/// The most cases a campaign runs at once (`--jobs`): each is a process holding a graph
/// and LibTorch, so more than this only thrashes the machine.
constexpr int kMaxJobs = 256;

/// A case's default time limit in milliseconds (`--timeout-ms`), also the limit a
/// timeout repro written without one is replayed under.
constexpr int64_t kDefaultTimeoutMs = 20000;

struct CampaignOptions {
  /// The pipeline every case runs, or empty with `pass` set.
  std::string pipeline;
  /// One pass, run after the passes it needs (remat: ac-regions, sac-tag first).
  std::string pass;
  /// Chunk mode ("batch"): chunkable programs through "<chunk pass>,<concretize pass>".
  std::string chunk;
  /// Stop after this many cases (0: no limit; with seconds also 0, 100 cases).
  int64_t cases = 0;
  /// Stop starting cases after this long (0: no limit).
  double seconds = 0;
  uint64_t seed = 1;
  int jobs = 1;
  /// Directory of the repro files (created when missing).
  std::string out = "repros";
  int64_t timeout_ms = kDefaultTimeoutMs;
  /// Stop after this many failures (0: run every case).
  int64_t max_failures = 0;
  CaseSource source = CaseSource::Programs;
  bool minimize = true;
  double minimize_seconds = 60;
  /// Differential mode: a failure counts only when the pipeline with this pass in place
  /// of `pass` survives the case.
  std::string baseline_pass;
  /// The extra pass sets the registry holds ("mutants", "test", "python"), recorded in every repro
  /// so a replay builds the same registry.
  std::vector<std::string> registries;
};

/// Where a running campaign stands (the progress callback's argument).
struct CampaignProgress {
  int64_t done = 0;      ///< cases finished
  int64_t total = 0;     ///< cases planned (0: bounded by time only)
  int64_t failures = 0;  ///< violations, crashes and timeouts so far
  double elapsed_s = 0;
};

/// One failing case.
struct CaseFailure {
  int64_t index = 0;
  uint64_t seed = 0;
  std::string kind;    ///< violation, crash, timeout
  std::string detail;  ///< "property violated", "killed by signal 11 (SIGSEGV)", ...
  std::string repro;   ///< the repro file, "" when the case failed before writing its graph
  bool minimized = false;       ///< a minimizer ran and finished
  size_t nodes_before = 0;      ///< original graph size (0 when not minimized)
  size_t nodes_after = 0;       ///< size after minimizing
  std::string minimizer_note;   ///< why minimizing stopped early or failed ("" when fine)
  double found_at_s = 0;        ///< seconds into the campaign
};

struct CampaignReport {
  std::string pipeline;          ///< the pipeline of case 0
  bool policy_varies = false;    ///< the sac-tag policy varies with the case seed
  int64_t cases_run = 0;
  int64_t violations = 0, crashes = 0, timeouts = 0;
  int64_t repro_files = 0;       ///< failing repros written (and kept)
  int64_t baseline_failures = 0; ///< cases not counted: the baseline fails them too
  double seconds = 0;
  std::vector<CaseFailure> failures;  ///< in the order they were found
  check::Coverage coverage;      ///< decisions over all cases
  int64_t failure_count() const { return violations + crashes + timeouts; }
};

struct CampaignCallbacks {
  /// After every finished case and about twice a second while cases run.
  std::function<void(const CampaignProgress&)> on_progress;
  /// After every failing case (once its repro is complete and minimized).
  std::function<void(const CaseFailure&)> on_failure;
};

/// The pipeline the case with `case_seed` runs under `options` (the AC passes vary the
/// sac-tag policy with the seed, so one campaign covers every policy).
std::string case_pipeline(const CampaignOptions& options, uint64_t case_seed);

/// Checks the options against `registry` before anything runs (unknown pass or
/// baseline pass, conflicting sources, chunk mode limits, counts out of range); throws
/// std::invalid_argument naming the option.
void validate(const CampaignOptions& options, const check::PassRegistry& registry);

/// Runs the campaign. Throws std::invalid_argument for bad options (validate()) and
/// io::FileError when `out` cannot be created or written, both before any case runs.
CampaignReport run_campaign(const CampaignOptions& options, const check::PassRegistry& registry,
                            const CampaignCallbacks& callbacks = {});

}  // namespace passcheck::campaign
