// Python passes as registered passes: the pass `python{pass="MODULE:FUNCTION",
// path="DIR"}` writes its graph as Python (python_writer.h), runs FUNCTION on the
// torch.fx GraphModule in a worker process (python/passcheck_fx/pass_worker.py), and
// reads the exported result back in place of the graph. Registered in the "python" pass
// set, so fuzz, repro and minimize check a Python pass exactly like a C++ one and a repro
// file names it; a campaign's cases share one fork server (PythonServer) instead of
// starting Python each. docs/python-passes.md describes the workflow.
#pragma once

#include "framework/check/pass.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace passcheck::python_bridge {

/// The name of the pass set (check::Repro::registries) that holds the "python" pass.
inline constexpr const char* kPythonPassSet = "python";

/// The module pass a Python partitioner (a function marked passcheck_fx.partitioner) runs as.
inline constexpr const char* kPythonPartitionerPass = "python-partitioner";

/// Registers the "python" pass and the "python-partitioner" module pass in `registry`.
void register_python_pass(check::PassRegistry& registry);

/// What a Python pass is handed (the pass option `hand-over`): "caller", the graph as its
/// real caller hands it (meta["val"] FakeTensors from one fake mode, stack traces, the
/// context an inductor pass runs in; python/passcheck_fx/callers.py), or "bare", the
/// graph with tensor_meta only and no context (what earlier releases handed).
inline constexpr const char* kHandOverCaller = "caller";
inline constexpr const char* kHandOverBare = "bare";

/// The pipeline text that runs the Python pass `spec` ("MODULE:FUNCTION") with the
/// import directory `python_path` (made absolute, so a repro replays from anywhere), as
/// "python-partitioner" when `partitioner`, handed the graph as `hand_over` says (named
/// in the pipeline only when not "caller"), and with a declared tolerance of
/// `tolerance_ulp` ULP (0: bit for bit; check::declared_tolerance_ulp).
std::string python_pass_pipeline(const std::string& spec, const std::string& python_path, bool partitioner = false,
                                 const std::string& hand_over = kHandOverCaller, int64_t tolerance_ulp = 0);

/// The time limit of importing a Python pass when the caller gives none (ms): the
/// campaign's default --timeout-ms (campaign::kDefaultTimeoutMs).
inline constexpr int64_t kDefaultImportTimeoutMs = 20000;

/// Imports the pass in a worker without running it; returns whether it is a partitioner
/// (marked passcheck_fx.partitioner); throws std::invalid_argument naming the module and
/// what happened when it cannot be imported: MODULE:FUNCTION does not name a callable, the
/// import raised anything (SystemExit and KeyboardInterrupt included), ended the worker,
/// or did not finish within `timeout_ms` (<= 0: kDefaultImportTimeoutMs). Bad input.
bool check_python_pass(const std::string& spec, const std::string& python_path,
                       int64_t timeout_ms = kDefaultImportTimeoutMs);

/// A fork server of Python workers for one campaign: it imports torch and the pass once,
/// and every case process (which inherits PASSCHECK_PYTHON_SERVER) gets a fork of it
/// instead of starting Python. It runs in a session (and process group) of its own and
/// makes this process a child subreaper; destroyed, it kills its group and then every
/// stray descendant (reap_descendants). When it cannot start, cases start their own
/// workers as without it, unless the pass's import is at fault (import_failure()).
class PythonServer {
 public:
  /// Waits at most `start_timeout_ms` (<= 0: kDefaultImportTimeoutMs) for the server to
  /// import torch and the pass.
  PythonServer(const std::string& spec, const std::string& python_path,
               int64_t start_timeout_ms = kDefaultImportTimeoutMs);
  ~PythonServer();
  PythonServer(const PythonServer&) = delete;
  PythonServer& operator=(const PythonServer&) = delete;
  /// Whether cases use it.
  bool running() const { return pid_ > 0; }
  /// While running: whether the pass is a partitioner (marked passcheck_fx.partitioner),
  /// as the server said once it had imported it; saves check_python_pass's second import.
  bool partitioner() const { return partitioner_; }
  /// Why the server did not start when the pass's import is at fault (it raised, ended
  /// the process, or passed the time limit), in check_python_pass's words; "" when it
  /// runs or did not start for another reason.
  const std::string& import_failure() const { return import_failure_; }

 private:
  int pid_ = -1;
  bool partitioner_ = false;
  std::string dir_;
  std::string import_failure_;
};

/// A PythonServer for the first Python pass `pipeline` runs (the minimizer runs it on
/// every candidate); null when it runs none. Throws like check_python_pass when the pass
/// cannot be imported (within `timeout_ms`).
std::unique_ptr<PythonServer> serve_python_pass_of(const std::string& pipeline, const check::PassRegistry& registry,
                                                   int64_t timeout_ms = kDefaultImportTimeoutMs);

/// A Python pass a pipeline runs: the pass ("python" or "python-partitioner"), its
/// MODULE:FUNCTION and its import directory ("" : only the default import path).
struct PythonPassUse {
  std::string pass;
  std::string spec;
  std::string path;
  std::string invocation;  ///< as the pipeline spells it: python{pass=...,path=...}
};

/// Every Python pass `pipeline` runs, in order (none: empty). Parses the pipeline (throws
/// on an unknown pass like check::parse_pipeline).
std::vector<PythonPassUse> python_passes_of(const std::string& pipeline, const check::PassRegistry& registry);

// ---- Strays ----------------------------------------------------------------------------
// Nothing a Python pass starts may outlive its worker: a pass may fork, double-fork a
// daemon, even call setsid. Workers and the fork server start in a session of their own
// (so nothing they start can join this process's process group), the process that starts
// them is a child subreaper (so what they abandon is reparented to it, not to init), and
// when a worker ends its group is killed and then every stray descendant.

/// Makes this process a child subreaper (prctl(PR_SET_CHILD_SUBREAPER)): orphans among its
/// descendants are reparented to it. Not inherited by fork; harmless to repeat.
void become_subreaper();

/// Kills (SIGKILL) and reaps every descendant of this process (the parent ids of
/// /proc/*/stat followed from it) except this process's own children that share its
/// process group (its case processes: what they started is theirs to clean up), the
/// workers and PythonServers it runs now (another thread's), and `spare`, each with its
/// descendants. Returns how many processes it killed.
int reap_descendants(int spare = -1);

/// While it lives this process is a child subreaper; destroyed, it reaps the descendants
/// Python passes left (reap_descendants, sparing nothing but its own case processes).
/// `passcheck fuzz`, `repro` and `minimize` hold one while Python passes may run.
class StrayReaper {
 public:
  StrayReaper() { become_subreaper(); }
  ~StrayReaper() { reap_descendants(); }
  StrayReaper(const StrayReaper&) = delete;
  StrayReaper& operator=(const StrayReaper&) = delete;
};

}  // namespace passcheck::python_bridge
