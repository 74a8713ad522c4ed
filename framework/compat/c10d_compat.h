// LibTorch version differences of the c10d process groups, in one place: on 1.13 (Debian,
// CPU builds) ProcessGroupGloo and ProcessGroupNCCL derive from c10d::ProcessGroup and
// their Work is c10d::ProcessGroup::Work's alias c10d::Work; on 2.x (the GPU machine)
// they derive from c10d::Backend. framework/dist talks to a backend only through the
// names below: CollectiveBackend (allreduce, allgather, alltoall_base, getRank, getSize)
// and make_gloo_backend / make_nccl_backend. Only framework/dist includes this header
// (it needs USE_C10D_GLOO, defined on that target alone).
#pragma once

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>
#ifdef PASSCHECK_WITH_CUDA
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <string>

#ifndef USE_C10D_GLOO
#error "c10d_compat.h needs USE_C10D_GLOO (defined on the passcheck_dist target)"
#endif

namespace passcheck::compat {

#if TORCH_VERSION_MAJOR >= 2
/// What a process group's collectives are called on.
using CollectiveBackend = c10d::Backend;
#else
/// What a process group's collectives are called on.
using CollectiveBackend = c10d::ProcessGroup;
#endif

/// A gloo group of `size` ranks talking through `store` (already prefixed per group);
/// `hostname` picks the interface ("127.0.0.1" for local runs), empty for the default.
inline c10::intrusive_ptr<CollectiveBackend> make_gloo_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                                int size, std::chrono::milliseconds timeout,
                                                                const std::string& hostname,
                                                                const std::string& interface) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  if (!interface.empty()) options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
  else if (!hostname.empty()) options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(hostname));
  else options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  // One worker thread: a rank's collectives on one group run in issue order anyway, and
  // test meshes put several ranks on few cores.
  options->threads = 1;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
}

#ifdef PASSCHECK_WITH_CUDA
/// An NCCL group of `size` ranks (one GPU each) talking through `store`.
inline c10::intrusive_ptr<CollectiveBackend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                                int size, std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
}
#endif

}  // namespace passcheck::compat
