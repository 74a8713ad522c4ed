// Wanted input placements in the IR (print, parse, parser and verifier errors) and
// eliminate-alias-round-trips on hand-made graphs of a (32, 8) mesh, with the property
// its historical bug 12 breaks: a read is redirected only to a value in the placement its
// reader wants. The five upstream cases are text cases
// (suites/passes_text/eliminate-alias-round-trips.graph).
#include "framework/check/distributed_properties.h"
#include "framework/check/pipeline.h"
#include "framework/check/verifier.h"
#include "framework/ir/text.h"
#include "suites/support/test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace passcheck {
namespace {

using ::testing::HasSubstr;

// X = (S(0), S(0)); A = alias(X) placed (S(0), R); %keep wants A's placement, %third
// wants (R, R), %back wants X's.
const char* const kThreeConsumers = R"(mesh dp=32, tp=8 rank 0
graph(arg %x : f32[4, 8] placed(S(0), S(0))):
  %a : f32[4, 8] placed(S(0), R) = aten::alias(%x)
  %keep : f32[4, 8] = aten::neg(%a)  #{wants=[(S(0), R)]}
  %third : f32[4, 8] = aten::relu(%a)  #{wants=[(R, R)]}
  %back : f32[4, 8] = aten::abs(%a)  #{wants=[(S(0), S(0))]}
  return (%keep, %third, %back)
)";

using testing::parse_graph_text;

TEST(WantedPlacements, RoundTripThroughPrintAndParse) {
  auto g = parse_graph_text(kThreeConsumers);
  const auto& wanted = g->find_value("back")->producer()->meta().wanted_placements;
  ASSERT_EQ(wanted.size(), 1u);
  EXPECT_EQ(wanted[0].size(), 2u);
  EXPECT_EQ(wanted[0][1].str(), "S(0)");
  std::string printed = g->print();
  EXPECT_THAT(printed, HasSubstr("#{wants=[(S(0), S(0))]}"));
  EXPECT_EQ(parse_graph_text(printed)->print(), printed);
  EXPECT_TRUE(check::verify_graph(*g).empty());
}

TEST(WantedPlacements, ParserErrorsNameLineAndColumn) {
  try {
    parse_graph_text("mesh dp=32, tp=8 rank 0\ngraph(arg %x : f32[4]):\n  %y : f32[4] = aten::neg(%x)  #{wants=[(S(0))]}\n"
          "  return (%y)\n");
    FAIL() << "expected a parse error";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("test.graph:3:"));
    EXPECT_THAT(e.what(), HasSubstr("1 placements for a mesh of 2 dims"));
  }
  try {
    parse_graph_text("graph(arg %x : f32[4]):\n  %y : f32[4] = aten::neg(%x)  #{wants=[(R)]}\n  return (%y)\n");
    FAIL() << "expected a parse error";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("test.graph:2:"));
    EXPECT_THAT(e.what(), HasSubstr("wanted placements need a 'mesh' line"));
  }
}

TEST(WantedPlacements, VerifierRefusesAListPerSlotOfTheWrongCountOrRank) {
  auto g = parse_graph_text(kThreeConsumers);
  ir::Node* back = g->find_value("back")->producer();
  back->mutable_meta().wanted_placements.push_back(back->meta().wanted_placements[0]);
  auto issues = check::verify_graph(*g);
  ASSERT_FALSE(issues.empty());
  EXPECT_THAT(issues[0].message, HasSubstr("has 2 wanted placements for 1 operands"));
  back->mutable_meta().wanted_placements = {{ir::Placement{}}};
  issues = check::verify_graph(*g);
  ASSERT_FALSE(issues.empty());
  EXPECT_THAT(issues[0].message, HasSubstr("wanted placement of operand 0 has 1 entries for a mesh of 2 dims"));
}

TEST(EliminateAliasRoundTrips, RewiresOnlyTheConsumerWantingTheProducersPlacement) {
  auto g = parse_graph_text(kThreeConsumers);
  auto before = g->clone();
  auto records = check::Pipeline::parse("eliminate-alias-round-trips").run(*g);
  EXPECT_EQ(records.back().stats.at("rewired_consumers"), 1);
  EXPECT_EQ(g->find_value("back")->producer()->operand(0)->name(), "x");
  EXPECT_EQ(g->find_value("third")->producer()->operand(0)->name(), "a");
  EXPECT_EQ(records.back().guards_refused.at("consumer-wants-third-placement"), 1);
  EXPECT_THAT(check::check_redirected_reads_wanted(*before, *g), ::testing::IsEmpty());
}

}  // namespace
}  // namespace passcheck
