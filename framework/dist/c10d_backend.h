// PyTorch's functional collectives (_c10d_functional::*) find their process group by
// name in c10d's group registry. RankGroups registers, for one rank of a mesh, a c10d
// ProcessGroup under every group name the mesh defines ("dp", "tp", "dp_tp", "tp_dp",
// ...), each backed by a c10d::Backend that hands the collective to the rank's
// Communicator: the sim mesh, gloo or nccl. So the operators LibTorch defines, traced,
// executed and exported exactly as in a torch 2.x graph, run on passcheck's backends.
//
// The registry is per thread (c10d's thread-isolation mode, as PyTorch's threaded
// process-group tests use it): each sim rank thread sees its own groups, and the
// autograd engine's threads see those of the thread that started the backward.
#pragma once

#include "framework/dist/communicator.h"

#include <memory>

namespace passcheck::dist {

/// The c10d groups of one rank, registered for the lifetime of the object on the
/// calling thread (the names they replace are restored afterwards). Collectives issued
/// after it is gone fail with an error naming the rank; so does a wait on a collective
/// that outlived it.
class RankGroups {
 public:
  explicit RankGroups(const RankContext& context);
  ~RankGroups();
  RankGroups(const RankGroups&) = delete;
  RankGroups& operator=(const RankGroups&) = delete;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

/// Turns on c10d's per-thread group registry (idempotent). Called before any group is
/// registered; a process that runs passcheck ranks keeps it on.
void use_thread_local_group_registry();

}  // namespace passcheck::dist
