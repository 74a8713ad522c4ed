// The aliasing property (check::aliasing_changes through check_pass_properties): a pass
// that keeps every value but returns a copy where the graph returned a view of an input,
// or one tensor for two distinct outputs, is caught; the real cleanup passes on the same
// graphs are not.
#include "framework/check/pass_properties.h"
#include "framework/ir/text.h"
#include "suites/mutants/alias_mutants.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace passcheck {
namespace {

check::PassRegistry registry_with_alias_mutants() {
  check::PassRegistry registry;
  check::register_builtin_passes(registry);
  mutants::register_alias_mutants(registry);
  return registry;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += s + "\n";
  return out;
}

TEST(AliasingProperty, AnOutputThatAliasedAnInputMustStillAliasIt) {
  auto g = ir::parse_graph(
      "graph(param %w : f32[2, 3]):\n"
      "  %t : f32[3, 2]{1, 3} = aten::t(%w)\n"
      "  %r : f32[2, 3] = aten::relu(%w)\n"
      "  return (%t, %r)\n",
      "view_output");
  std::vector<c10::IValue> inputs = {at::randn({2, 3})};
  check::PassRegistry registry = registry_with_alias_mutants();
  EXPECT_TRUE(check::check_pass_properties(*g, inputs, "dce", registry).violations.empty());
  auto report = check::check_pass_properties(*g, inputs, "mutant-copy-view-outputs", registry);
  ASSERT_EQ(report.violations.size(), 1u) << joined(report.violations);
  EXPECT_NE(report.violations[0].find("output 0 %t aliased input 0 %w before it and no longer does"), std::string::npos)
      << report.violations[0];
}

TEST(AliasingProperty, DistinctOutputsMustStayDistinct) {
  auto g = ir::parse_graph(
      "graph(arg %x : f32[4]):\n"
      "  %a : f32[4] = aten::mul.Scalar(%x, 2)\n"
      "  %b : f32[4] = aten::mul.Scalar(%x, 2)\n"
      "  return (%a, %b)\n",
      "equal_outputs");
  std::vector<c10::IValue> inputs = {at::randn({4})};
  check::PassRegistry registry = registry_with_alias_mutants();
  auto report = check::check_pass_properties(*g, inputs, "mutant-share-equal-outputs", registry);
  ASSERT_EQ(report.violations.size(), 1u) << joined(report.violations);
  EXPECT_NE(report.violations[0].find("output 0 %a and output 1 %b were distinct before it and now share storage"),
            std::string::npos)
      << report.violations[0];
  EXPECT_TRUE(check::check_pass_properties(*g, inputs, "dce", registry).violations.empty());
}

// passcheck's own cse returned one storage for two equal outputs, or for an output and a
// view of its duplicate (found by this property on the cleanup situations): its guard
// distinct-outputs refuses those merges.
TEST(AliasingProperty, CseKeepsEqualOutputsAndTheirViewsDistinct) {
  for (const char* text :
       {"graph(arg %x : f32[4]):\n"
        "  %a : f32[4] = aten::mul.Scalar(%x, 2)\n"
        "  %b : f32[4] = aten::mul.Scalar(%x, 2)\n"
        "  return (%a, %b)\n",
        "graph(arg %x : f32[4]):\n"
        "  %a : f32[4] = aten::mul.Scalar(%x, 2)\n"
        "  %b : f32[4] = aten::mul.Scalar(%x, 2)\n"
        "  %v : f32[2, 2] = aten::view(%b, [2, 2])\n"
        "  return (%a, %v)\n"}) {
    auto g = ir::parse_graph(text, "equal_outputs");
    std::vector<c10::IValue> inputs = {at::randn({4})};
    auto report = check::check_pass_properties(*g, inputs, "cse", check::PassRegistry::global());
    EXPECT_EQ(joined(report.violations), "") << text;
    ASSERT_FALSE(report.records.empty());
    EXPECT_EQ(report.records[0].guards_refused.count("distinct-outputs"), 1u) << text;
  }
  // One returned and one not: merged as before.
  auto g = ir::parse_graph(
      "graph(arg %x : f32[4]):\n"
      "  %a : f32[4] = aten::mul.Scalar(%x, 2)\n"
      "  %b : f32[4] = aten::mul.Scalar(%x, 2)\n"
      "  %c : f32[4] = aten::add.Tensor(%a, %b, 1)\n"
      "  return (%c)\n",
      "one_returned");
  auto report = check::check_pass_properties(*g, {at::randn({4})}, "cse", check::PassRegistry::global());
  EXPECT_EQ(joined(report.violations), "");
  ASSERT_FALSE(report.records.empty());
  EXPECT_EQ(report.records[0].rules_fired.count("merge-duplicate"), 1u);
}

TEST(AliasingProperty, ViewsOfOneBaseMayStayViewsOfIt) {
  // Two outputs that were views of one input already share storage: merging them changes
  // no aliasing the property checks.
  auto g = ir::parse_graph(
      "graph(param %w : f32[2, 3]):\n"
      "  %t : f32[3, 2]{1, 3} = aten::t(%w)\n"
      "  %u : f32[3, 2]{1, 3} = aten::t(%w)\n"
      "  return (%t, %u)\n",
      "two_views");
  std::vector<c10::IValue> inputs = {at::randn({2, 3})};
  check::PassRegistry registry = registry_with_alias_mutants();
  EXPECT_EQ(joined(check::check_pass_properties(*g, inputs, "mutant-share-equal-outputs", registry).violations), "");
}

}  // namespace
}  // namespace passcheck
