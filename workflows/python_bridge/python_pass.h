// Python passes as registered passes: the pass `python{pass="MODULE:FUNCTION",
// path="DIR"}` writes its graph as Python (python_writer.h), runs FUNCTION on the
// torch.fx GraphModule in a worker process (python/passcheck_fx/pass_worker.py), and
// reads the exported result back in place of the graph. Registered in the "python" pass
// set, so fuzz, repro and minimize check a Python pass exactly like a C++ one and a repro
// file names it; a campaign's cases share one fork server (PythonServer) instead of
// starting Python each. docs/python-passes.md describes the workflow.
#pragma once

#include "framework/check/pass.h"

#include <memory>
#include <string>

namespace passcheck::python_bridge {

/// The name of the pass set (check::Repro::registries) that holds the "python" pass.
inline constexpr const char* kPythonPassSet = "python";

/// The module pass a Python partitioner (a function marked passcheck_fx.partitioner) runs as.
inline constexpr const char* kPythonPartitionerPass = "python-partitioner";

/// Registers the "python" pass and the "python-partitioner" module pass in `registry`.
void register_python_pass(check::PassRegistry& registry);

/// The pipeline text that runs the Python pass `spec` ("MODULE:FUNCTION") with the
/// import directory `python_path` (made absolute, so a repro replays from anywhere), as
/// "python-partitioner" when `partitioner`.
std::string python_pass_pipeline(const std::string& spec, const std::string& python_path, bool partitioner = false);

/// Imports the pass in a worker without running it; returns whether it is a partitioner
/// (marked passcheck_fx.partitioner); throws std::invalid_argument with the worker's
/// message when MODULE:FUNCTION does not name a callable (bad input).
bool check_python_pass(const std::string& spec, const std::string& python_path);

/// A fork server of Python workers for one campaign: it imports torch and the pass once,
/// and every case process (which inherits PASSCHECK_PYTHON_SERVER) gets a fork of it
/// instead of starting Python. Stopped when destroyed; when it cannot start, cases start
/// their own workers as without it.
class PythonServer {
 public:
  PythonServer(const std::string& spec, const std::string& python_path);
  ~PythonServer();
  PythonServer(const PythonServer&) = delete;
  PythonServer& operator=(const PythonServer&) = delete;
  /// Whether cases use it.
  bool running() const { return pid_ > 0; }

 private:
  int pid_ = -1;
  std::string dir_;
};

/// A PythonServer for the first Python pass `pipeline` runs (the minimizer runs it on
/// every candidate); null when it runs none. Throws like check_python_pass when the pass
/// cannot be imported.
std::unique_ptr<PythonServer> serve_python_pass_of(const std::string& pipeline, const check::PassRegistry& registry);

/// check_python_pass for the Python pass `pipeline` runs, if any: a repro naming a module
/// this machine cannot import is bad input (exit 2), not the failure still showing.
void check_python_passes_of(const std::string& pipeline, const check::PassRegistry& registry);

}  // namespace passcheck::python_bridge
