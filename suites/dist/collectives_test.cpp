// The collective operators on each backend against a single-process reference: every op,
// every reduce op, f32 and bf16, uneven all_to_all splits, the flattened mesh groups, the
// autograd formulas; and the failures a backend must report instead of hanging
// (mismatched collectives, a rank that fails, a read before the wait).
#include "framework/dist/collectives.h"
#include "framework/dist/mesh.h"
#include "framework/dist/sim.h"
#include "suites/dist/dist_test_support.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/module.h>

#include <atomic>
#include <thread>

namespace passcheck::testing {
namespace {

using dist::DeviceMesh;

class Collectives : public ::testing::TestWithParam<std::string> {
 protected:
  std::string backend() const { return GetParam(); }
};

at::Tensor reduce_reference(const std::vector<at::Tensor>& inputs, const std::string& op) {
  at::Tensor acc = inputs[0].clone();
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (op == "sum" || op == "avg") acc = acc + inputs[i];
    else if (op == "product") acc = acc * inputs[i];
    else if (op == "min") acc = at::minimum(acc, inputs[i]);
    else acc = at::maximum(acc, inputs[i]);
  }
  return op == "avg" ? acc / static_cast<double>(inputs.size()) : acc;
}

TEST_P(Collectives, AllGatherConcatenatesInGroupOrder) {
  for (c10::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    DeviceMesh mesh = DeviceMesh::parse("dp=4");
    std::string errors = run_ranks(backend(), mesh, [&](int64_t rank) {
      std::vector<at::Tensor> all;
      for (int64_t r = 0; r < 4; ++r) all.push_back(rank_input(1, r, {3, 5}, dtype));
      at::Tensor got = dist::wait_tensor(dist::all_gather_into_tensor(all[rank], 4, "dp"));
      expect_bitwise("all_gather", at::cat(all, 0), got);
    });
    EXPECT_EQ(errors, "") << c10::toString(dtype);
  }
}

TEST_P(Collectives, ReductionsMatchTheRankOrderReference) {
  // Reductions on sim are computed in rank order; other backends may add in another
  // order, so only sim must be bitwise, and small integers-valued inputs make every
  // order exact for the others.
  for (c10::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    for (std::string op : {"sum", "avg", "product", "min", "max"}) {
      DeviceMesh mesh = DeviceMesh::parse("dp=4");
      std::string errors = run_ranks(backend(), mesh, [&](int64_t rank) {
        std::vector<at::Tensor> all;
        for (int64_t r = 0; r < 4; ++r)
          all.push_back(backend() == "sim" ? rank_input(2, r, {8, 3}, dtype)
                                           : at::round(rank_input(2, r, {8, 3}, at::kFloat) * 2).to(dtype));
        at::Tensor full = reduce_reference(all, op);
        expect_bitwise("all_reduce " + op, full, dist::wait_tensor(dist::all_reduce(all[rank], op, "dp")));
        expect_bitwise("reduce_scatter " + op, full.chunk(4, 0)[rank],
                       dist::wait_tensor(dist::reduce_scatter_tensor(all[rank], op, 4, "dp")));
      });
      EXPECT_EQ(errors, "") << op << " " << c10::toString(dtype);
    }
  }
}

TEST_P(Collectives, AllToAllWithUnevenSplits) {
  for (c10::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    DeviceMesh mesh = DeviceMesh::parse("ep=3");
    // Rank i sends (i + j) % 3 + (j == 0) rows to rank j (zero-row chunks included).
    auto rows = [](int64_t i, int64_t j) { return (i + j) % 3 + (j == 0 ? 1 : 0); };
    std::string errors = run_ranks(backend(), mesh, [&](int64_t rank) {
      std::vector<std::vector<at::Tensor>> sent(3);
      std::vector<at::Tensor> inputs;
      for (int64_t i = 0; i < 3; ++i) {
        std::vector<int64_t> splits;
        for (int64_t j = 0; j < 3; ++j) splits.push_back(rows(i, j));
        int64_t total = 0;
        for (int64_t s : splits) total += s;
        inputs.push_back(rank_input(3, i, {total, 4}, dtype));
        sent[i] = inputs[i].split_with_sizes(splits, 0);
      }
      std::vector<int64_t> in_splits, out_splits;
      std::vector<at::Tensor> expected;
      for (int64_t j = 0; j < 3; ++j) in_splits.push_back(rows(rank, j));
      for (int64_t i = 0; i < 3; ++i) {
        out_splits.push_back(rows(i, rank));
        expected.push_back(sent[i][rank]);
      }
      at::Tensor got = dist::wait_tensor(dist::all_to_all_single(inputs[rank], out_splits, in_splits, "ep"));
      expect_bitwise("all_to_all", at::cat(expected, 0), got);
      // Equal splits when both lists are empty.
      at::Tensor even = rank_input(4, rank, {6, 2}, dtype);
      std::vector<at::Tensor> even_expected;
      for (int64_t i = 0; i < 3; ++i) even_expected.push_back(rank_input(4, i, {6, 2}, dtype).chunk(3, 0)[rank]);
      expect_bitwise("all_to_all equal splits", at::cat(even_expected, 0),
                     dist::wait_tensor(dist::all_to_all_single(even, {}, {}, "ep")));
    });
    EXPECT_EQ(errors, "") << c10::toString(dtype);
  }
}

TEST_P(Collectives, FlattenedGroupsEqualGathersInSequence) {
  // dp=4, tp=2, 3 rows per shard: gathering over dp then tp equals one gather over the
  // column-major group tp_dp; tp then dp equals the row-major group dp_tp; with shards
  // placed accordingly both give arange(24).
  DeviceMesh mesh = DeviceMesh::parse("dp=4,tp=2");
  std::string errors = run_ranks(backend(), mesh, [&](int64_t rank) {
    at::Tensor arange = at::arange(24, at::kFloat);
    int64_t d = mesh.coordinate(rank, "dp"), t = mesh.coordinate(rank, "tp");
    at::Tensor column_shard = arange.slice(0, 3 * (t * 4 + d), 3 * (t * 4 + d) + 3);
    at::Tensor row_shard = arange.slice(0, 3 * rank, 3 * rank + 3);
    at::Tensor dp_then_tp = dist::wait_tensor(
        dist::all_gather_into_tensor(dist::wait_tensor(dist::all_gather_into_tensor(column_shard, 4, "dp")), 2, "tp"));
    expect_bitwise("dp then tp", arange, dp_then_tp);
    expect_bitwise("tp_dp", arange, dist::wait_tensor(dist::all_gather_into_tensor(column_shard, 8, "tp_dp")));
    at::Tensor tp_then_dp = dist::wait_tensor(
        dist::all_gather_into_tensor(dist::wait_tensor(dist::all_gather_into_tensor(row_shard, 2, "tp")), 4, "dp"));
    expect_bitwise("tp then dp", arange, tp_then_dp);
    expect_bitwise("dp_tp", arange, dist::wait_tensor(dist::all_gather_into_tensor(row_shard, 8, "dp_tp")));
  });
  EXPECT_EQ(errors, "");
}

TEST_P(Collectives, AutogradFormulas) {
  DeviceMesh mesh = DeviceMesh::parse("dp=2");
  std::string errors = run_ranks(backend(), mesh, [&](int64_t rank) {
    std::vector<at::Tensor> x(2), gy(2);
    for (int64_t r = 0; r < 2; ++r) {
      x[r] = rank_input(5, r, {2, 3}, at::kFloat);
      gy[r] = rank_input(6, r, {4, 3}, at::kFloat);
    }
    // all_gather: the gradient of rank r's shard is the sum over ranks of their output
    // gradients' rows of r.
    at::Tensor leaf = x[rank].clone().requires_grad_(true);
    at::Tensor y = dist::wait_tensor(dist::all_gather_into_tensor(leaf, 2, "dp"));
    at::Tensor g = torch::autograd::grad({y}, {leaf}, {gy[rank]})[0];
    expect_bitwise("grad of all_gather", gy[0].chunk(2, 0)[rank] + gy[1].chunk(2, 0)[rank], g);
    // reduce_scatter avg: the gradient is the gathered output gradients over the group size.
    at::Tensor leaf2 = gy[rank].clone().requires_grad_(true);
    at::Tensor z = dist::wait_tensor(dist::reduce_scatter_tensor(leaf2, "avg", 2, "dp"));
    at::Tensor g2 = torch::autograd::grad({z}, {leaf2}, {x[rank]})[0];
    expect_bitwise("grad of reduce_scatter avg", at::cat({x[0], x[1]}, 0) / 2.0, g2);
    // copy_to_group: identity forward, gradient summed over the group.
    at::Tensor leaf3 = x[rank].clone().requires_grad_(true);
    at::Tensor w = dist::copy_to_group(leaf3, "dp") * (rank + 1.0);
    at::Tensor g3 = torch::autograd::grad({w.sum()}, {leaf3})[0];
    expect_bitwise("grad of copy_to_group", at::full({2, 3}, 3.0f), g3);
  });
  EXPECT_EQ(errors, "");
}

TEST_P(Collectives, AllToAllAndAllReduceGradientsMatchTheSingleProcessReference) {
  DeviceMesh mesh = DeviceMesh::parse("ep=3");
  // Rank i sends (i + 2j) % 3 + 1 rows to rank j: every rank sends and receives 6 rows,
  // but in different chunk sizes, so a backward that forgets to swap the split lists
  // still runs and puts the chunk boundaries in the wrong places.
  auto rows = [](int64_t i, int64_t j) { return (i + 2 * j) % 3 + 1; };
  std::string errors = run_ranks(backend(), mesh, [&](int64_t rank) {
    std::vector<int64_t> in_splits, out_splits;
    for (int64_t j = 0; j < 3; ++j) in_splits.push_back(rows(rank, j));
    for (int64_t i = 0; i < 3; ++i) out_splits.push_back(rows(i, rank));
    std::vector<at::Tensor> gy(3);
    for (int64_t r = 0; r < 3; ++r) gy[r] = rank_input(7, r, {6, 4}, at::kFloat);
    // The reference, from every rank's output gradient in one process: the rows rank
    // `rank` sent to rank j come back from the chunk of j's gradient that came from it.
    std::vector<at::Tensor> back;
    for (int64_t j = 0; j < 3; ++j) {
      std::vector<int64_t> j_out_splits;
      for (int64_t i = 0; i < 3; ++i) j_out_splits.push_back(rows(i, j));
      back.push_back(gy[j].split_with_sizes(j_out_splits, 0)[rank]);
    }
    const at::Tensor reference = at::cat(back, 0);
    at::Tensor leaf = rank_input(8, rank, {6, 4}, at::kFloat).requires_grad_(true);
    at::Tensor y = dist::wait_tensor(dist::all_to_all_single(leaf, out_splits, in_splits, "ep"));
    at::Tensor g = torch::autograd::grad({y}, {leaf}, {gy[rank]})[0];
    expect_bitwise("grad of all_to_all_single", reference, g);
    // The check tells the classic mistake apart: the forward's split lists, not swapped.
    at::Tensor unswapped = dist::wait_tensor(dist::all_to_all_single(gy[rank], out_splits, in_splits, "ep"));
    if (at::equal(unswapped, reference)) throw std::runtime_error("an unswapped backward matches the reference");
    // all_reduce: the identity (the reduced value is replicated, its loss counted once);
    // reducing the gradient again would count it three times.
    at::Tensor leaf2 = rank_input(9, rank, {2, 3}, at::kFloat).requires_grad_(true);
    at::Tensor z = dist::wait_tensor(dist::all_reduce(leaf2, "sum", "ep"));
    at::Tensor gz = rank_input(10, rank, {2, 3}, at::kFloat);
    expect_bitwise("grad of all_reduce", gz, torch::autograd::grad({z}, {leaf2}, {gz})[0]);
    at::Tensor reduced_again = dist::wait_tensor(dist::all_reduce(gz, "sum", "ep"));
    if (at::equal(reduced_again, gz)) throw std::runtime_error("a reducing backward matches the reference");
  });
  EXPECT_EQ(errors, "");
}

TEST_P(Collectives, MismatchedCollectiveIsReportedNotDeadlocked) {
  DeviceMesh mesh = DeviceMesh::parse("dp=2");
  std::string errors = run_ranks(backend(), mesh, [&](int64_t rank) {
    at::Tensor x = at::ones({4});
    at::Tensor y = rank == 0 ? dist::all_reduce(x, "sum", "dp") : dist::all_gather_into_tensor(x, 2, "dp");
    dist::wait_tensor(y);
  });
  EXPECT_NE(errors.find("rank 0"), std::string::npos) << errors;
  EXPECT_NE(errors.find("rank 1"), std::string::npos) << errors;
  EXPECT_NE(errors.find("disagree"), std::string::npos) << errors;
}

INSTANTIATE_TEST_SUITE_P(Backends, Collectives, ::testing::Values("sim", "gloo"));

TEST(SimMesh, AFailingRankIsNamedOnTheOthers) {
  std::string errors = run_ranks("sim", DeviceMesh::parse("dp=3"), [&](int64_t rank) {
    if (rank == 2) throw std::runtime_error("injected failure");
    dist::wait_tensor(dist::all_reduce(at::ones({2}), "sum", "dp"));
  });
  EXPECT_NE(errors.find("rank 0: rank 0: waiting for all_reduce"), std::string::npos) << errors;
  EXPECT_NE(errors.find("rank 2 failed (injected failure)"), std::string::npos) << errors;
}

TEST(SimMesh, ARankThatNeverIssuesTimesOutWithItsLastCollective) {
  dist::SimOptions options;
  options.timeout = std::chrono::milliseconds(300);
  dist::SimWorld world(DeviceMesh::parse("dp=2"), options);
  std::atomic<bool> release{false};
  auto outcomes = world.run([&](int64_t rank) {
    dist::wait_tensor(dist::all_reduce(at::ones({2}), "sum", "dp"));
    if (rank == 1) {
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return;
    }
    try {
      dist::wait_tensor(dist::all_reduce(at::ones({2}), "sum", "dp"));
    } catch (...) {
      release = true;
      throw;
    }
  });
  ASSERT_FALSE(outcomes[0].ok);
  EXPECT_NE(outcomes[0].error.find("timed out after 300 ms"), std::string::npos) << outcomes[0].error;
  EXPECT_NE(outcomes[0].error.find("not issued by rank 1 (last issued: all_reduce"), std::string::npos)
      << outcomes[0].error;
}

TEST(SimMesh, ResultReadBeforeItsWaitIsPoison) {
  std::string errors = run_ranks("sim", DeviceMesh::parse("dp=2"), [&](int64_t rank) {
    at::Tensor y = dist::all_reduce(at::ones({3}), "sum", "dp");
    if (!at::isnan(y).all().item<bool>()) throw std::runtime_error("unwaited result is not poison: " + y.toString());
    dist::wait_tensor(y);
    expect_bitwise("after wait", at::full({3}, 2.0f), y);
  });
  EXPECT_EQ(errors, "");
}

TEST(SimMesh, BadGroupsAreErrors) {
  std::string errors = run_ranks("sim", DeviceMesh::parse("dp=2"), [&](int64_t rank) {
    dist::all_gather_into_tensor(at::ones({2}), 4, "dp");
  });
  EXPECT_NE(errors.find("group 'dp' of mesh dp=2 has 2 members but the collective says group_size 4"), std::string::npos)
      << errors;
  errors = run_ranks("sim", DeviceMesh::parse("dp=2"), [&](int64_t) { dist::all_reduce(at::ones({2}), "sum", "tp"); });
  EXPECT_NE(errors.find("names dim 'tp', which mesh dp=2 does not have"), std::string::npos) << errors;
  errors = run_ranks("sim", DeviceMesh::parse("dp=2"), [&](int64_t) { dist::all_reduce(at::ones({2}), "mean", "dp"); });
  EXPECT_NE(errors.find("unknown reduce_op 'mean' (valid: sum, avg, product, min, max)"), std::string::npos) << errors;
}

TEST(Mesh, GroupsAndErrors) {
  DeviceMesh mesh = DeviceMesh::parse("dp=4, tp=2");
  EXPECT_EQ(mesh.world_size(), 8);
  EXPECT_EQ(mesh.group_members("dp", 3), (std::vector<int64_t>{1, 3, 5, 7}));
  EXPECT_EQ(mesh.group_members("tp", 3), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(mesh.group_members("dp_tp", 5), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(mesh.group_members("tp_dp", 5), (std::vector<int64_t>{0, 2, 4, 6, 1, 3, 5, 7}));
  EXPECT_EQ(mesh.all_groups("tp").size(), 4u);
  auto [sub, ranks] = mesh.submesh({"dp"}, 3);
  EXPECT_EQ(sub.str(), "dp=4");
  EXPECT_EQ(ranks, (std::vector<int64_t>{1, 3, 5, 7}));
  EXPECT_THROW(DeviceMesh::parse("dp=0"), dist::MeshError);
  EXPECT_THROW(DeviceMesh::parse("dp"), dist::MeshError);
  EXPECT_THROW(DeviceMesh::parse("dp=2,dp=2"), dist::MeshError);
  EXPECT_THROW(DeviceMesh::parse("d_p=2"), dist::MeshError);
  EXPECT_THROW(mesh.group_members("dp_dp", 0), dist::MeshError);
  EXPECT_THROW(mesh.coordinates(8), dist::MeshError);
  try {
    dist::check_mesh_world_size(mesh, 4);
    FAIL();
  } catch (const dist::MeshError& e) {
    EXPECT_STREQ(e.what(), "mesh dp=4,tp=2 has 8 ranks but the world has 4");
  }
}

}  // namespace
}  // namespace passcheck::testing
