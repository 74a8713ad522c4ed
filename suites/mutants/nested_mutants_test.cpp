// The nested half of historical bug 9: mutant-concretize-skips-subgraphs substitutes
// the hints in the top graph only, as a concretization unaware of nesting would. The
// pipeline gate's verifier catches the chunk symbol it leaves in the called subgraph
// (undeclared once the top graph drops it) and the call whose operands no longer match
// the body; the real pass leaves a concrete nest that runs.
#include "framework/check/pipeline.h"
#include "framework/exec/executor.h"
#include "framework/ir/subgraph.h"
#include "framework/ir/text.h"
#include "suites/mutants/mutants.h"

#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace passcheck {
namespace {

using ::testing::HasSubstr;

// A chunked layer called twice, its body written in the chunk symbol.
const char* kChunkedNest = R"(symbol s0 in [2, 4] hint 4 multiple_of 2
subgraph block(
    arg %x : f32[sym(s0), 8],
    arg %w : f32[8, 8]):
  %mm : f32[sym(s0), 8] = aten::mm(%x, %w)
  %v : f32[sym(floordiv(s0, 2)), 16] = aten::view(%mm, [sym(floordiv(s0, 2)), 16])
  %r : f32[sym(floordiv(s0, 2)), 16] = aten::relu(%v)
  %o : f32[sym(s0), 8] = aten::view(%r, [sym(s0), 8])
  return (%o)
graph(
    param %w : f32[8, 8],
    arg %x : f32[sym(s0), 8]):
  %y : f32[sym(s0), 8] = passcheck::invoke_subgraph("block", [%x, %w])
  %z : f32[sym(s0), 8] = passcheck::invoke_subgraph("block", [%y, %w])
  return (%z)
)";

TEST(NestedConcretizeMutant, IsRegisteredAsBug9) {
  const mutants::MutantInfo* found = nullptr;
  for (const mutants::MutantInfo& m : mutants::all_mutants())
    if (m.pass == "mutant-concretize-skips-subgraphs") found = &m;
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->historical_bug, 9);
  EXPECT_EQ(found->replaces, "concretize");
}

TEST(NestedConcretizeMutant, TheRealPassConcretizesEveryBody) {
  std::unique_ptr<ir::Graph> g = ir::parse_graph(kChunkedNest, "nest.graph");
  const auto records = check::Pipeline::parse("concretize", mutants::registry_with_mutants()).run(*g);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].rules_fired.at("substitute-in-subgraphs"), 1);
  EXPECT_THAT(g->print(), ::testing::Not(HasSubstr("sym(")));
  EXPECT_THAT(g->find_subgraph("block")->print(), HasSubstr("aten::view(%mm, [2, 16])"));
  at::manual_seed(3);
  const at::Tensor w = at::randn({8, 8}), x = at::randn({4, 8});
  const std::vector<c10::IValue> out = exec::Executor(*g).run({w, x});
  const at::Tensor expected = at::relu(at::mm(at::relu(at::mm(x, w).view({2, 16})).view({4, 8}), w).view({2, 16})).view({4, 8});
  EXPECT_TRUE(at::equal(out.at(0).toTensor(), expected));
}

TEST(NestedConcretizeMutant, TheVerifierCatchesTheSymbolLeftInTheSubgraph) {
  std::unique_ptr<ir::Graph> g = ir::parse_graph(kChunkedNest, "nest.graph");
  try {
    check::Pipeline::parse("mutant-concretize-skips-subgraphs", mutants::registry_with_mutants()).run(*g);
    FAIL() << "the mutant went through the gate";
  } catch (const check::PassFailure& failure) {
    EXPECT_THAT(failure.what(), HasSubstr("subgraph 'block'"));
    EXPECT_THAT(failure.what(), HasSubstr("undeclared symbol s0"));
  }
}

}  // namespace
}  // namespace passcheck
