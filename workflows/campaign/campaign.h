// Fuzz campaigns as a library: generated cases through a pipeline, each case in a
// process apart from the campaign's (warm workers, a fork per case, or a child per case:
// Isolation, case_processes.h) with a time limit, a repro file for every failing case (minimized
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
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace passcheck::campaign {

/// Where a campaign draws its case graphs from.
enum class CaseSource { Programs, Models, Situations };

/// The kinds of case a campaign runs: graphs (from the CaseSource) through the pipeline,
/// per-rank graphs of chained all_gathers run on every rank of a sim mesh, and chunkable
/// programs in chunk mode "batch". A mixed campaign (`--mix`) alternates between kinds.
enum class CaseKind { Graph = 0, SimMesh = 1, Chunk = 2 };

/// How each case is isolated (`--isolation`): warm workers that run cases themselves, a
/// crash or timeout costing the worker, which is replaced (persistent, the default); a
/// warm fork server whose workers fork a process per case; or one child per case forked
/// by the campaign itself (per-case, the original design).
enum class Isolation { ForkServer, Persistent, PerCase };

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
  Isolation isolation = Isolation::Persistent;
  /// The kinds a mixed campaign cycles through, case i taking mix[i % size]; empty: one
  /// kind, Chunk when `chunk` is set and Graph otherwise.
  std::vector<CaseKind> mix;
  /// In a mix: the pass sim-mesh cases run (fuse-chained-allgathers or a mutant of it).
  std::string sim_mesh_pass = "fuse-chained-allgathers";
  /// In a mix: the chunk or concretize pass chunk cases run ("": chunk,concretize).
  std::string chunk_pass;
  /// Generator features added to program and model cases (gen::feature_names; `--features`).
  std::vector<std::string> features;
};

/// The name of a case kind as `--mix` spells it: programs, sim-mesh, chunk.
std::string kind_name(CaseKind kind);
/// Parses a `--mix` list ("programs,sim-mesh,chunk"); std::invalid_argument names a bad entry.
std::vector<CaseKind> parse_mix(const std::string& text);
/// The kind of case `index` of a campaign under `options`.
CaseKind case_kind(const CampaignOptions& options, int64_t index);

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
  std::string kind_of_case = "programs";  ///< kind_name() of the case
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
  /// A mixed campaign: each kind's name and the pipeline of its first case, in mix order.
  std::vector<std::pair<std::string, std::string>> mix_pipelines;
  /// Cases run per kind, by kind_name().
  std::map<std::string, int64_t> cases_by_kind;
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
/// The pipeline a case of `kind` with `case_seed` runs (a sim-mesh case adds the options
/// its generated chain needs when it runs).
std::string case_pipeline(const CampaignOptions& options, CaseKind kind, uint64_t case_seed);

/// What the passes under test changed over a campaign's cases (its coverage's
/// case_changes): one line per pass, and the passes that changed no case's graph (a
/// campaign in which the pass under test never acted checked nothing it does).
struct ChangeVerdict {
  std::vector<std::string> lines;
  std::vector<std::string> unchanged;  ///< passes that ran in cases but changed none
};
ChangeVerdict change_verdict(const CampaignReport& report, const std::vector<std::string>& passes);

/// Checks the options against `registry` before anything runs (unknown pass or
/// baseline pass, conflicting sources, chunk mode limits, counts out of range); throws
/// std::invalid_argument naming the option.
void validate(const CampaignOptions& options, const check::PassRegistry& registry);

/// Runs the campaign. Throws std::invalid_argument for bad options (validate()) and
/// io::FileError when `out` cannot be created or written, both before any case runs.
CampaignReport run_campaign(const CampaignOptions& options, const check::PassRegistry& registry,
                            const CampaignCallbacks& callbacks = {});

}  // namespace passcheck::campaign
