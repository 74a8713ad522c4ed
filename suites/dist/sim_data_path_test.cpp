// The sim mesh's data path (framework/dist/sim.cpp): every member moves its own result's
// data at its wait, reducing its own chunk (reduce_scatter) or parts of a shared result
// (all_reduce). These tests hold it to the whole-tensor reduction in rank order
// (dist::reduce_in_rank_order, the sim's definition) bit for bit, on group sizes that are
// and are not powers of two, element counts that are not multiples of any vector width,
// signed zeros and NaNs; to the input as it was at the call; and to waits issued in a
// different order on every rank.
#include "framework/dist/collectives.h"
#include "framework/dist/mesh.h"
#include "framework/dist/sim.h"
#include "suites/dist/dist_test_support.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace passcheck::testing {
namespace {

using dist::DeviceMesh;

// Rank r's input: seeded values, with signed zeros (and NaNs where the dtype has them) in
// fixed places so min/max meet -0 vs +0 and NaN in every rank order.
at::Tensor data_path_input(int64_t rank, at::IntArrayRef sizes, c10::ScalarType dtype) {
  at::Tensor x = rank_input(7, rank, sizes, at::kDouble);
  if (!at::isFloatingType(dtype)) return (x * 50).round().to(dtype);
  at::Tensor flat = x.view({-1});
  at::Tensor zeros_at = at::arange(rank % 13, flat.numel(), 13, at::kLong);
  at::Tensor positive = at::remainder(zeros_at + rank, 2).to(at::kBool);
  flat.index_put_({zeros_at}, at::where(positive, at::zeros({}, at::kDouble), at::full({}, -0.0, at::kDouble)));
  if (flat.numel() > 40 + rank % 13) flat[37 + rank % 13].fill_(NAN);
  return x.to(dtype);
}

dist::ReduceOp reduce_op(const std::string& name) { return dist::parse_reduce_op(name); }

TEST(SimDataPath, ReductionsEqualTheWholeTensorReductionInRankOrder) {
  for (int64_t n : {3, 4}) {
    DeviceMesh mesh = DeviceMesh::parse("dp=" + std::to_string(n));
    for (c10::ScalarType dtype : {at::kFloat, at::kDouble, at::kBFloat16, at::kHalf, at::kInt}) {
      for (std::string op : {"sum", "avg", "product", "min", "max"}) {
        if (op == "avg" && !at::isFloatingType(dtype)) continue;
        // 12 rows divide by 3 and 4; 37 and 1001 columns are no multiple of a vector width.
        for (std::vector<int64_t> sizes : {std::vector<int64_t>{12, 37}, std::vector<int64_t>{24, 1001}}) {
          std::string errors = run_ranks("sim", mesh, [&](int64_t rank) {
            std::vector<at::Tensor> all;
            for (int64_t r = 0; r < n; ++r) all.push_back(data_path_input(r, sizes, dtype));
            at::Tensor whole = dist::reduce_in_rank_order(all, reduce_op(op));
            at::Tensor reduced = dist::all_reduce(all[rank], op, "dp");
            at::Tensor scattered = dist::reduce_scatter_tensor(all[rank], op, n, "dp");
            expect_bitwise("reduce_scatter " + op, whole.chunk(n, 0)[rank], dist::wait_tensor(scattered));
            expect_bitwise("all_reduce " + op, whole, dist::wait_tensor(reduced));
          });
          EXPECT_EQ(errors, "") << "dp=" << n << " " << op << " " << c10::toString(dtype) << " " << sizes[1];
        }
      }
    }
  }
}

TEST(SimDataPath, GathersAndAllToAllMoveEveryRowInGroupOrder) {
  DeviceMesh mesh = DeviceMesh::parse("dp=3");
  for (c10::ScalarType dtype : {at::kFloat, at::kBFloat16, at::kInt, at::kBool}) {
    std::string errors = run_ranks("sim", mesh, [&](int64_t rank) {
      std::vector<at::Tensor> all;
      for (int64_t r = 0; r < 3; ++r) all.push_back(data_path_input(r, {5, 3, 7}, dtype));
      expect_bitwise("all_gather", at::cat(all, 0), dist::wait_tensor(dist::all_gather_into_tensor(all[rank], 3, "dp")));
      // Rank i sends (i + j) % 3 + 1 rows to rank j.
      auto rows = [](int64_t i, int64_t j) { return (i + j) % 3 + 1; };
      std::vector<at::Tensor> inputs, received;
      for (int64_t i = 0; i < 3; ++i) {
        int64_t total = 0;
        for (int64_t j = 0; j < 3; ++j) total += rows(i, j);
        inputs.push_back(data_path_input(10 + i, {total, 4}, dtype));
      }
      std::vector<int64_t> in_splits, out_splits;
      for (int64_t j = 0; j < 3; ++j) in_splits.push_back(rows(rank, j));
      for (int64_t i = 0; i < 3; ++i) {
        out_splits.push_back(rows(i, rank));
        int64_t offset = 0;
        for (int64_t j = 0; j < rank; ++j) offset += rows(i, j);
        received.push_back(inputs[i].narrow(0, offset, rows(i, rank)));
      }
      expect_bitwise("all_to_all", at::cat(received, 0),
                     dist::wait_tensor(dist::all_to_all_single(inputs[rank], out_splits, in_splits, "dp")));
    });
    EXPECT_EQ(errors, "") << c10::toString(dtype);
  }
}

TEST(SimDataPath, AnInputOverwrittenAfterTheCallIsReadAsItWasAtTheCall) {
  // Rank 0 overwrites its inputs right after issuing; the others wait later, so they
  // read rank 0's part after the overwrite. Every rank still gets the inputs of the call.
  DeviceMesh mesh = DeviceMesh::parse("dp=4");
  std::string errors = run_ranks("sim", mesh, [&](int64_t rank) {
    std::vector<at::Tensor> all;
    for (int64_t r = 0; r < 4; ++r) all.push_back(data_path_input(r, {8, 33}, at::kFloat));
    at::Tensor whole = dist::reduce_in_rank_order(all, dist::ReduceOp::Sum);
    at::Tensor gathered_expected = at::cat(all, 0);
    at::Tensor mine = all[rank].clone();
    at::Tensor gathered = dist::all_gather_into_tensor(mine, 4, "dp");
    at::Tensor scattered = dist::reduce_scatter_tensor(mine, "sum", 4, "dp");
    at::Tensor reduced = dist::all_reduce(mine, "sum", "dp");
    if (rank == 0) {
      mine.fill_(12345.0f);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
    expect_bitwise("all_gather", gathered_expected, dist::wait_tensor(gathered));
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    mine.fill_(-1.0f);  // this rank is done with its own reading; the others may not be
    expect_bitwise("reduce_scatter", whole.chunk(4, 0)[rank], dist::wait_tensor(scattered));
    expect_bitwise("all_reduce", whole, dist::wait_tensor(reduced));
  });
  EXPECT_EQ(errors, "");
}

TEST(SimDataPath, WaitsInADifferentOrderOnEveryRankComplete) {
  // Each rank waits for the same collectives in its own order (a rotation by its rank),
  // many times over: a member that waits must never wait for a member that waits for it.
  DeviceMesh mesh = DeviceMesh::parse("dp=4");
  std::string errors = run_ranks("sim", mesh, [&](int64_t rank) {
    for (int round = 0; round < 20; ++round) {
      std::vector<std::vector<at::Tensor>> all(6);
      std::vector<at::Tensor> pending, expected;
      for (int64_t c = 0; c < 6; ++c) {
        for (int64_t r = 0; r < 4; ++r) all[c].push_back(data_path_input(r + c, {4 * (c + 1), 9 + round}, at::kFloat));
        at::Tensor whole = dist::reduce_in_rank_order(all[c], c % 2 ? dist::ReduceOp::Avg : dist::ReduceOp::Sum);
        if (c % 3 == 2) {
          pending.push_back(dist::reduce_scatter_tensor(all[c][rank], c % 2 ? "avg" : "sum", 4, "dp"));
          expected.push_back(whole.chunk(4, 0)[rank]);
        } else {
          pending.push_back(dist::all_reduce(all[c][rank], c % 2 ? "avg" : "sum", "dp"));
          expected.push_back(whole);
        }
      }
      for (int64_t k = 0; k < 6; ++k) {
        int64_t c = (k + rank + round) % 6;
        expect_bitwise("collective " + std::to_string(c), expected[c], dist::wait_tensor(pending[c]));
      }
    }
  });
  EXPECT_EQ(errors, "");
}

}  // namespace
}  // namespace passcheck::testing
