// Shared pieces of the distributed suites: per-rank bodies that run unchanged on every
// mesh backend (each rank computes the single-process reference of what it must
// receive from the deterministic inputs of all ranks, and throws on a difference), and
// the runner that executes a body on a backend.
#pragma once

#include "framework/dist/mesh.h"
#include "oracles/distributed_driver.h"
#include "oracles/training_driver.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>
#include <string>

namespace passcheck::testing {

/// Rank r's input of a collective test: seeded, so every rank can rebuild every rank's input.
at::Tensor rank_input(int64_t seed, int64_t rank, at::IntArrayRef sizes, c10::ScalarType dtype);
/// Throws std::runtime_error naming `what` and the first difference unless bitwise equal.
void expect_bitwise(const std::string& what, const at::Tensor& expected, const at::Tensor& actual);

/// Driver options of a CI-sized parallelized model: 5 steps, 2 blocks, 1 sequence of 16
/// tokens per rank; deepseek_v3 with capacity dispatch (factor 1).
oracles::DriverOptions small_parallel(const std::string& model, const std::string& plan, const std::string& mesh);

/// The parameter tensors of llama3 at small_parallel's size: the all_gathers and
/// reduce_scatters an FSDP rank graph holds per step.
inline constexpr int64_t kLlamaParams = 17;

/// Runs `body(rank)` on every rank of `mesh` on `backend` ("sim", or "gloo": one process
/// per rank through the local launcher); returns "" when every rank succeeded, else the
/// failing ranks' errors.
std::string run_ranks(const std::string& backend, const dist::DeviceMesh& mesh,
                      const std::function<void(int64_t rank)>& body);

/// The per-rank traced-vs-eager driver on every rank of the sim mesh of
/// `options.subject.parallel.mesh`; the reports by rank (a rank's error fails the test).
std::vector<oracles::RankDriverReport> traced_vs_eager_on_every_rank(const oracles::DriverOptions& options);

/// The sharded run against the single-rank model on the sim mesh (rank 0's comparison,
/// printed).
oracles::ShardedComparison sharded_vs_single_rank(const oracles::DriverOptions& options);

}  // namespace passcheck::testing
