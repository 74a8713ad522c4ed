// Shared pieces of the distributed suites (dist_test_support.h).
#include "suites/dist/dist_test_support.h"

#include "framework/check/compare.h"
#include "framework/dist/launcher.h"
#include "framework/dist/sim.h"

#include <ATen/ATen.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>

namespace passcheck::testing {

at::Tensor rank_input(int64_t seed, int64_t rank, at::IntArrayRef sizes, c10::ScalarType dtype) {
  at::Generator gen = at::detail::createCPUGenerator(static_cast<uint64_t>(seed * 7919 + rank));
  return at::randn(sizes, gen, at::TensorOptions().dtype(at::kFloat)).to(dtype);
}

void expect_bitwise(const std::string& what, const at::Tensor& expected, const at::Tensor& actual) {
  check::TensorComparison c = check::compare_bitwise(what, expected, actual);
  if (!c.equal) throw std::runtime_error(c.describe());
}

oracles::DriverOptions small_parallel(const std::string& model, const std::string& plan, const std::string& mesh) {
  oracles::DriverOptions o;
  o.model = model;
  o.steps = 5;
  o.subject.batch_size = 1;
  o.subject.seq_len = 16;
  o.subject.n_layers = 2;
  o.subject.parallel.plan = plan;
  o.subject.parallel.mesh = mesh;
  if (model == "deepseek_v3") o.subject.moe_capacity_factor = 1.0;
  return o;
}

std::string run_ranks(const std::string& backend, const dist::DeviceMesh& mesh,
                      const std::function<void(int64_t rank)>& body) {
  std::vector<dist::RankOutcome> outcomes;
  if (backend == "sim") {
    dist::SimOptions options;
    options.timeout = std::chrono::milliseconds(20000);
    outcomes = dist::SimWorld(mesh, options).run(body);
  } else if (backend == "gloo") {
    dist::LaunchOptions options;
    options.timeout = std::chrono::milliseconds(20000);
    options.grace = std::chrono::milliseconds(2000);
    outcomes = dist::run_forked(mesh, body, options);
  } else {
    throw std::invalid_argument("unknown backend " + backend);
  }
  std::string errors;
  for (const dist::RankOutcome& o : outcomes)
    if (!o.ok) errors += "rank " + std::to_string(o.rank) + ": " + o.error + "\n";
  return errors;
}

std::vector<oracles::RankDriverReport> traced_vs_eager_on_every_rank(const oracles::DriverOptions& options) {
  dist::DeviceMesh mesh = dist::DeviceMesh::parse(options.subject.parallel.mesh);
  std::vector<oracles::RankDriverReport> reports(mesh.world_size());
  std::string errors = run_ranks("sim", mesh, [&](int64_t rank) {
    reports[rank] = oracles::run_rank_traced_vs_eager(options);
  });
  EXPECT_EQ(errors, "");
  return reports;
}

oracles::ShardedComparison sharded_vs_single_rank(const oracles::DriverOptions& options) {
  dist::DeviceMesh mesh = dist::DeviceMesh::parse(options.subject.parallel.mesh);
  oracles::ShardedComparison on_rank0;
  std::string errors = run_ranks("sim", mesh, [&](int64_t rank) {
    oracles::ShardedComparison c = oracles::compare_sharded_with_single_rank(options);
    if (rank == 0) on_rank0 = c;
  });
  EXPECT_EQ(errors, "");
  std::printf("%s %s on %s:\n%s", options.model.c_str(), options.subject.parallel.plan.c_str(),
              options.subject.parallel.mesh.c_str(), on_rank0.format().c_str());
  return on_rank0;
}

}  // namespace passcheck::testing
