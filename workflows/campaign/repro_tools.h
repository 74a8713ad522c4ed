// What `passcheck repro` and `passcheck minimize` (and the campaign's own minimizer) do
// with a repro file beyond reading it: check that its graph is well formed before
// blaming a pass, choose the replay's time limit, and shrink the graph while the
// failure persists.
#pragma once

#include "framework/check/pass.h"
#include "framework/check/repro.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace passcheck::campaign {

/// Throws check::ReproError naming `path` and the line when the repro's graph is
/// itself malformed: the verifier rejects it, or it does not run on its inputs (unknown
/// operator, a declared type its node does not produce). A hand-edited graph that is
/// broken is bad input, not "the failure is still there". Runs the graph in this
/// process; call check::prepare_for_fork() first when children follow.
void check_repro_graph(const check::Repro& repro, const std::string& path);

/// The replay's time limit: `given` when the command line set one (>= 0, 0 meaning no
/// limit), else the limit the case timed out under for a timeout repro (or
/// kDefaultTimeoutMs when the file records none), else no limit.
int64_t replay_timeout_ms(const check::Repro& repro, int64_t given);

/// Where a running minimization stands.
struct MinimizeProgress {
  int candidates_tried = 0;
  size_t nodes = 0;  ///< size of the smallest failing graph so far
  double elapsed_s = 0;
};

struct MinimizeOutcome {
  size_t original_nodes = 0;  ///< the repro's original graph
  size_t before = 0;          ///< the graph minimizing started from
  size_t after = 0;
  int candidates_tried = 0;
  bool timed_out = false;
};

/// Shrinks the graph of the repro at `in` while it fails the same way (a crash still
/// crashes, in a child limited to `timeout_ms`; a violation shows a violation of the
/// same kind) and writes the repro with the minimized graph to `out` (may be `in`).
/// std::invalid_argument for a chunk case, a status other than failed or crash, or a
/// failure that does not reproduce; ReproError for a malformed graph; io::FileError
/// when `out` cannot be written (checked before minimizing starts).
MinimizeOutcome minimize_repro(const std::string& in, const std::string& out, const check::PassRegistry& registry,
                               double seconds, int64_t timeout_ms,
                               const std::function<void(const MinimizeProgress&)>& on_progress = {});

}  // namespace passcheck::campaign
