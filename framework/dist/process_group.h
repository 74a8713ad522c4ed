// The real mesh backends: a Communicator over c10d process groups, one process per rank
// (gloo on CPU; nccl on CUDA builds), meeting through torchrun's rendezvous variables.
// It behaves like the simulated mesh (sim.h) wherever the backends can agree: results are
// defined after the wait, all_gather concatenates in group order, all_to_all honours split
// sizes, reductions are native (avg = sum / group size, reduce_scatter = all_reduce then
// this rank's chunk, since gloo has neither). Faults are named as sim names them: before
// a collective is handed to c10d every member publishes its call in the store and checks
// the others' (so a mismatch is reported, not deadlocked); a member that stopped, died
// (the launcher records `passcheck/dead/<rank>`) or did not issue the collective within
// the timeout is named with the last collective it issued.
#pragma once

#include "framework/dist/communicator.h"

#include <chrono>
#include <memory>
#include <string>

namespace passcheck::dist {

/// Store key under which a launcher records how a rank's process ended abnormally
/// ("killed by signal 9", "exited with code 3").
std::string dead_rank_key(int64_t rank);
/// Store key under which a rank records why it stopped ("finished its run", "failed (...)").
std::string stopped_rank_key(int64_t rank);
/// Store key holding the last collective a rank issued (its description).
std::string last_issued_key(int64_t rank);

/// TCPStore connections get at least this long (a shorter connect timeout can fail before
/// a loaded host has the store up); waits on keys use the
/// rendezvous timeout.
extern const std::chrono::milliseconds kMinimumStoreTimeout;

/// Where a rank meets the others: torchrun's conventions.
struct RendezvousInfo {
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  /// The launcher hosts the store (TORCHELASTIC_USE_AGENT_STORE=True): every rank is a
  /// client; otherwise rank 0 hosts it.
  bool agent_store = false;
  /// How long a rank waits for the others to issue a collective and for a collective
  /// to complete (PASSCHECK_DIST_TIMEOUT_MS).
  std::chrono::milliseconds timeout{60000};
};

/// Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT,
/// TORCHELASTIC_USE_AGENT_STORE and PASSCHECK_DIST_TIMEOUT_MS; throws std::invalid_argument
/// naming the missing or invalid variable.
RendezvousInfo rendezvous_from_environment();

/// A communicator over c10d process groups: one group per distinct member list, created
/// the first time a collective uses it (only members take part in creating a group: its
/// store prefix is derived from its member list, so ranks need not agree on an order).
class ProcessGroupCommunicator : public Communicator {
 public:
  /// Connects to the store and prepares `backend` ("gloo", or "nccl" on CUDA builds);
  /// throws std::invalid_argument for an unknown backend, CollectiveError when the store
  /// cannot be reached within the timeout.
  ProcessGroupCommunicator(const RendezvousInfo& info, const std::string& backend = "gloo");
  /// After a failure the c10d groups are left to the process exit: their destructors
  /// would wait for collectives that can no longer complete.
  ~ProcessGroupCommunicator() override;
  ProcessGroupCommunicator(const ProcessGroupCommunicator&) = delete;
  ProcessGroupCommunicator& operator=(const ProcessGroupCommunicator&) = delete;

  std::string backend() const override;
  int64_t rank() const override;
  int64_t world_size() const override;
  void all_gather(const at::Tensor& input, const at::Tensor& output, const Group& group) override;
  void reduce_scatter(const at::Tensor& input, const at::Tensor& output, ReduceOp op, const Group& group) override;
  void all_reduce(const at::Tensor& input, const at::Tensor& output, ReduceOp op, const Group& group) override;
  void all_to_all(const at::Tensor& input, const at::Tensor& output, const std::vector<int64_t>& output_splits,
                  const std::vector<int64_t>& input_splits, const Group& group) override;
  void wait(const at::Tensor& result) override;
  void wait_all() override;

  /// Publishes why this rank stopped ("finished its run", "failed (<error>)"), so the
  /// members still waiting for it name the reason instead of timing out.
  void mark_stopped(const std::string& reason);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// rendezvous_from_environment() and a communicator on `backend`.
std::unique_ptr<ProcessGroupCommunicator> init_from_environment(const std::string& backend = "gloo");

}  // namespace passcheck::dist
