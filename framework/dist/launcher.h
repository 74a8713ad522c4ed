// The local launcher: runs one process per rank on this machine, the way torchrun does
// (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; the launcher hosts the
// rendezvous store and sets TORCHELASTIC_USE_AGENT_STORE=True), and supervises them: a
// rank that dies is recorded in the store (passcheck/dead/<rank>) so the others name it
// in their errors, and the ranks still running once the others had timeout + grace to
// notice are killed. Every rank's verdict comes back; nothing is left running.
//
// launch_local() executes a command per rank; run_forked() forks the calling process
// (no exec) and runs a function per rank on the gloo backend, for tests.
#pragma once

#include "framework/dist/mesh.h"
#include "framework/dist/sim.h"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace passcheck::dist {

/// How the launcher runs and supervises the ranks.
struct LaunchOptions {
  /// The ranks' collective timeout (passed as PASSCHECK_DIST_TIMEOUT_MS).
  std::chrono::milliseconds timeout{60000};
  /// Once a rank has failed, the others get timeout + grace to finish before they are killed.
  std::chrono::milliseconds grace{5000};
  /// launch_local: also print each rank's output, every line prefixed "[rank N] ".
  bool echo_output = true;
  /// run_forked: the backend the ranks use ("gloo").
  std::string backend = "gloo";
};

/// How one rank's process ended.
struct LaunchOutcome {
  int64_t rank = 0;
  bool ok = false;
  int exit_code = -1;  ///< -1 when it ended by a signal
  int signal = 0;      ///< 0 when it exited
  /// "exited with code 0", "exited with code 3", "killed by signal 9", "killed by the
  /// launcher: still running 6000 ms after rank 2 failed".
  std::string how_ended;
  /// Everything the rank wrote to stdout and stderr.
  std::string output;
};

/// Runs `argv` (argv[0] looked up in PATH) as `world_size` ranks on this machine and
/// waits for all of them; throws std::invalid_argument for an empty argv or world_size < 1.
std::vector<LaunchOutcome> launch_local(const std::vector<std::string>& argv, int64_t world_size,
                                        const LaunchOptions& options = {});

/// Forks one process per rank of `mesh`; each connects to `options.backend`, runs
/// `body(rank)` under its RankScope, waits for its pending collectives and reports. A
/// rank that died has the reason as its error ("died (killed by signal 9)").
std::vector<RankOutcome> run_forked(const DeviceMesh& mesh, const std::function<void(int64_t rank)>& body,
                                    const LaunchOptions& options = {});

}  // namespace passcheck::dist
