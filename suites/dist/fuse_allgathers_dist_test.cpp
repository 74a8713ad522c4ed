// fuse-chained-allgathers on real meshes: per-rank graphs of chained all_gathers on a
// (dp=4, tp=2) mesh, dp then tp (fused onto the column-major group tp_dp) and tp then dp
// (onto the row-major dp_tp), through an identity view chain and directly; the original
// and the fused graph run on every rank of the sim mesh and of gloo (8 processes) and
// must agree bit for bit. The bug-6 mutant (groups swapped) must differ on some rank.
#include "framework/check/pipeline.h"
#include "framework/exec/executor.h"
#include "framework/ir/text.h"
#include "suites/dist/dist_test_support.h"
#include "suites/mutants/mutants.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>

namespace passcheck::testing {
namespace {

const char* const kOptions = "{subgroup-order=\"dp,tp\",column-major-group=tp_dp}";

// x (3 x 4 per rank) gathered over `first` then `second`, through `views` (text of the
// nodes between %wait and the second gather, ending in %end; empty: direct).
std::string chain_graph(const std::string& first, int64_t first_size, const std::string& second, int64_t second_size,
                        const std::string& views) {
  const int64_t rows = 3 * first_size;
  const std::string r = std::to_string(rows), full = std::to_string(rows * second_size);
  std::string text = "mesh dp=4, tp=2 rank 0\ngraph(param %x : f32[3, 4]):\n";
  text += "  %ag : f32[" + r + ", 4] = _c10d_functional::all_gather_into_tensor(%x, " + std::to_string(first_size) + ", \"" +
          first + "\")\n";
  text += "  %wait : f32[" + r + ", 4] = _c10d_functional::wait_tensor(%ag)\n";
  std::string end = "%wait";
  if (!views.empty()) {
    text += views;
    end = "%end";
  }
  text += "  %ag2 : f32[" + full + ", 4] = _c10d_functional::all_gather_into_tensor(" + end + ", " +
          std::to_string(second_size) + ", \"" + second + "\")\n";
  text += "  %out : f32[" + full + ", 4] = _c10d_functional::wait_tensor(%ag2)\n";
  text += "  %y : f32[" + full + ", 4] = aten::sin(%out)\n  return (%y)\n";
  return text;
}

std::string permute_pair(int64_t rows) {
  const std::string r = std::to_string(rows);
  return "  %p : f32[4, " + r + "]{1, 4} = aten::permute(%wait, [1, 0])\n  %end : f32[" + r +
         ", 4] = aten::transpose.int(%p, 0, 1)\n";
}

struct Chain {
  std::string name;
  std::string text;
};

std::vector<Chain> chains() {
  return {{"dp then tp, views", chain_graph("dp", 4, "tp", 2, permute_pair(12))},
          {"tp then dp, views", chain_graph("tp", 2, "dp", 4, permute_pair(6))},
          {"dp then tp, direct", chain_graph("dp", 4, "tp", 2, "")},
          {"tp then dp, direct", chain_graph("tp", 2, "dp", 4, "")}};
}

// The graph after `pipeline`, checking it fused exactly one chain.
std::unique_ptr<ir::Graph> fused(const std::string& text, const std::string& pipeline, const check::PassRegistry& registry) {
  auto g = ir::parse_graph(text);
  auto records = check::Pipeline::parse(pipeline, registry).run(*g);
  EXPECT_EQ(records.at(0).stats["fused_chains"], 1) << pipeline << "\n" << text;
  return g;
}

class FuseAllgathersDist : public ::testing::TestWithParam<std::string> {};

TEST_P(FuseAllgathersDist, FusedEqualsUnfusedBitwiseOnEveryRank) {
  const dist::DeviceMesh mesh = dist::DeviceMesh::parse("dp=4,tp=2");
  for (const Chain& chain : chains()) {
    auto original = ir::parse_graph(chain.text);
    auto fusion = fused(chain.text, std::string("fuse-chained-allgathers") + kOptions, check::PassRegistry::global());
    const std::string fused_text = fusion->print();
    EXPECT_EQ(fused_text.find("\"dp\""), std::string::npos) << fused_text;
    EXPECT_NE(fused_text.find(chain.name.rfind("dp then", 0) == 0 ? "8, \"tp_dp\")" : "8, \"dp_tp\")"), std::string::npos)
        << fused_text;
    const std::string errors = run_ranks(GetParam(), mesh, [&](int64_t rank) {
      const at::Tensor x = rank_input(31, rank, {3, 4}, at::kFloat);
      const at::Tensor expected = exec::Executor(*original).run({x}).at(0).toTensor();
      const at::Tensor actual = exec::Executor(*fusion).run({x}).at(0).toTensor();
      expect_bitwise(chain.name + " on rank " + std::to_string(rank), expected, actual);
    });
    EXPECT_EQ(errors, "") << chain.name;
  }
}

TEST_P(FuseAllgathersDist, SwappedGroupsMutantDiffersOnSomeRank) {
  // Bug 6: the chain gathers over the other flattened group, whose rank order differs, so
  // the row blocks come back permuted. Every chain must be caught.
  const dist::DeviceMesh mesh = dist::DeviceMesh::parse("dp=4,tp=2");
  for (const Chain& chain : chains()) {
    auto original = ir::parse_graph(chain.text);
    auto mutated = fused(chain.text, std::string("mutant-fuse-chained-allgathers-swapped-groups") + kOptions,
                         mutants::registry_with_mutants());
    const std::string errors = run_ranks(GetParam(), mesh, [&](int64_t rank) {
      const at::Tensor x = rank_input(31, rank, {3, 4}, at::kFloat);
      const at::Tensor expected = exec::Executor(*original).run({x}).at(0).toTensor();
      const at::Tensor actual = exec::Executor(*mutated).run({x}).at(0).toTensor();
      expect_bitwise(chain.name + " on rank " + std::to_string(rank), expected, actual);
    });
    EXPECT_NE(errors.find("differ"), std::string::npos) << chain.name << ": the mutant was not caught: " << errors;
    std::cout << "  bug 6 on " << GetParam() << ", " << chain.name << ": " << errors.substr(0, errors.find('\n')) << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, FuseAllgathersDist, ::testing::Values("sim", "gloo"));

}  // namespace
}  // namespace passcheck::testing
