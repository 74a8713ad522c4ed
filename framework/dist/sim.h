// The simulated mesh: N ranks as N threads of one process, each with its own
// communicator, meeting in lockstep at every collective. Results are computed from the
// inputs of every member in group order (reductions add rank 0's input, then rank 1's,
// ...), so a run is deterministic and its numbers do not depend on thread timing: the
// exact oracle for tests and fuzzing. Each rank's collectives reach it through c10d: the
// rank's groups are registered under their names with a backend over its communicator
// (c10d_backend.h), so PyTorch's _c10d_functional operators dispatch into the sim.
//
// Collectives are asynchronous as on a real backend: a call snapshots its input and
// fills the output c10d allocated with poison (NaN, or the byte 0x55 for integer and
// bool tensors); the wait fills it. A graph that reads a collective's result before its
// wait_tensor, or never waits, reads poison. Every wait checks that all members issued
// the same collective (op, group, reduce op, dtype, shape; all_to_all split sizes that
// agree); a rank that threw, finished without issuing the collective, or did not issue
// it within the timeout fails the wait with an error naming it.
#pragma once

#include "framework/dist/communicator.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace passcheck::dist {

struct SimOptions {
  /// How long a wait may block for members that have not issued the collective.
  std::chrono::milliseconds timeout{60000};
};

/// The outcome of one rank of a run.
struct RankOutcome {
  int64_t rank = 0;
  bool ok = false;
  /// The rank's error (its own exception, or the collective error it got).
  std::string error;
};

/// The most ranks a SimWorld runs (one thread each).
inline constexpr int64_t kMaxSimRanks = 256;
/// Throws MeshError naming the mesh when a SimWorld cannot run it (more than kMaxSimRanks).
void check_simulable(const DeviceMesh& mesh);

class SimWorld {
 public:
  SimWorld(DeviceMesh mesh, SimOptions options = {});
  ~SimWorld();
  const DeviceMesh& mesh() const;
  /// Runs `fn(rank)` on one thread per rank, each under a RankScope for its rank; returns
  /// every rank's outcome once all threads have finished.
  std::vector<RankOutcome> run(const std::function<void(int64_t rank)>& fn);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

/// Reduces `inputs` (one per member, in group order) by adding, multiplying, ... rank 0's
/// input, then rank 1's, ...: the sim mesh's result, which backends without a native
/// reduction for a dtype reproduce exactly. Avg needs a floating-point dtype.
at::Tensor reduce_in_rank_order(const std::vector<at::Tensor>& inputs, ReduceOp op);

/// Runs `fn(rank)` on a sim mesh and throws CollectiveError with every failing rank's
/// error when any rank fails.
void run_sim(const DeviceMesh& mesh, const std::function<void(int64_t rank)>& fn, SimOptions options = {});

}  // namespace passcheck::dist
