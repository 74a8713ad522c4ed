// Distributed graphs as text: the mesh line and value placements round-trip and are
// checked; the verifier refuses a collective result used without its wait; the executor
// runs a graph with collectives on every rank of a sim mesh.
#include "framework/check/verifier.h"
#include "framework/dist/sim.h"
#include "framework/exec/executor.h"
#include "framework/ir/text.h"
#include "suites/dist/dist_test_support.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace passcheck::testing {
namespace {

const char* const kFsdpLayer = R"(mesh dp=2 rank 1
graph(
    param %w : f32[2, 3] placed(S(0)),
    arg %x : f32[4, 3]):
  %ag : f32[4, 3] = _c10d_functional::all_gather_into_tensor(%w, 2, "dp")
  %full : f32[4, 3] placed(R) = _c10d_functional::wait_tensor(%ag)
  %y : f32[4, 4] = aten::mm(%x, %t)
  %t : f32[3, 4] = aten::t(%full)
  return (%y)
)";

std::string fixed(std::string text) {
  // %t is defined after its use above on purpose for the verifier test; swap for the rest.
  size_t y = text.find("  %y :"), t = text.find("  %t :"), end = text.find("\n", t) + 1;
  std::string line_t = text.substr(t, end - t), line_y = text.substr(y, t - y);
  return text.substr(0, y) + line_t + line_y + text.substr(end);
}

TEST(DistGraph, MeshAndPlacementsRoundTrip) {
  auto g = ir::parse_graph(fixed(kFsdpLayer));
  ASSERT_TRUE(g->mesh());
  EXPECT_EQ(g->mesh()->rank, 1);
  EXPECT_EQ(g->inputs()[0]->placements().at(0).str(), "S(0)");
  std::string printed = g->print();
  EXPECT_NE(printed.find("mesh dp=2 rank 1\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("param %w : f32[2, 3] placed(S(0))"), std::string::npos) << printed;
  EXPECT_NE(printed.find("placed(R) = _c10d_functional::wait_tensor"), std::string::npos) << printed;
  EXPECT_EQ(ir::parse_graph(printed)->print(), printed);
  EXPECT_EQ(g->clone()->print(), printed);
  EXPECT_TRUE(check::verify_graph(*g).empty());
}

TEST(DistGraph, BadMeshesAndPlacementsNameTheirPosition) {
  auto error_of = [](const std::string& text) {
    try {
      ir::parse_graph(text, "g.graph");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("mesh dp=2 rank 2\ngraph():\n  return ()\n"),
            "g.graph:1:16: rank 2 is outside the mesh's 2 ranks");
  EXPECT_EQ(error_of("mesh dp=0 rank 0\ngraph():\n  return ()\n"),
            "g.graph:1:9: mesh dim 'dp' has size 0 (sizes are 1 or more, at most 2^20 ranks in all)");
  EXPECT_EQ(error_of("graph(param %w : f32[2] placed(R)):\n  return ()\n"),
            "g.graph:1:25: placements need a 'mesh' line before the graph");
  EXPECT_EQ(error_of("mesh dp=2 rank 0\ngraph(param %w : f32[2] placed(S(1))):\n  return ()\n"),
            "g.graph:2:32: placement S(1) shards dim 1 of a tensor with 1 dims");
  EXPECT_EQ(error_of("mesh dp=2 rank 0\ngraph(param %w : f32[2] placed(Q)):\n  return ()\n"),
            "g.graph:2:32: expected a placement (S(dim), R or P(sum|avg|product|min|max)) but found 'Q'");
  EXPECT_EQ(error_of("mesh dp=2, tp=2 rank 0\ngraph(param %w : f32[2] placed(R)):\n  return ()\n"),
            "g.graph:2:25: 1 placements for a mesh of 2 dims");
}

TEST(DistGraph, VerifierRefusesAResultUsedBeforeItsWait) {
  std::string text = fixed(kFsdpLayer);
  // The transpose reads the gathered tensor directly instead of the wait's result.
  size_t at = text.find("aten::t(%full)");
  text.replace(at, std::string("aten::t(%full)").size(), "aten::t(%ag)");
  auto g = ir::parse_graph(text);
  auto issues = check::verify_graph(*g);
  ASSERT_FALSE(issues.empty());
  EXPECT_NE(issues[0].message.find("is used by `%t : f32[3, 4] = aten::t(%ag)` without _c10d_functional::wait_tensor"), std::string::npos)
      << issues[0].message;
}

TEST(DistGraph, ExecutorRunsCollectivesOnEveryRank) {
  auto g = ir::parse_graph(fixed(kFsdpLayer));
  std::string errors = run_ranks("sim", dist::DeviceMesh::parse("dp=2"), [&](int64_t rank) {
    at::Tensor full_w = rank_input(9, 0, {4, 3}, at::kFloat), x = rank_input(10, rank, {4, 3}, at::kFloat);
    exec::Executor executor(*g);
    auto out = executor.run({full_w.chunk(2, 0)[rank].contiguous(), x});
    expect_bitwise("y", at::mm(x, full_w.t()), out.at(0).toTensor());
  });
  EXPECT_EQ(errors, "");
}

}  // namespace
}  // namespace passcheck::testing
