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

namespace passcheck {
namespace {

// A declared tolerance (a pass's tolerance-ulp option): differences within it are reported
// apart from bitwise, never as violations; beyond it, or with no tolerance declared, they
// are violations as before.
check::PassRegistry registry_with_rounding_pass() {
  check::PassRegistry registry;
  check::register_builtin_passes(registry);
  check::PassInfo info("scale-constant", "test pass: multiplies the first mul.Scalar's constant by `factor`",
                       {{"factor", "", "1", {}, nullptr},
                        {"tolerance-ulp", "declared tolerance", "0", {}, check::option_checks::integer_in(0, 1 << 30)}});
  info.idempotent = false;  // it scales again on every run
  registry.add(info, [](ir::Graph& g, const check::PassOptions& o) {
    check::PassResult r;
    for (ir::Node* n : g.node_list())
      if (n->op() == "aten::mul.Scalar") {
        n->set_arg(1, ir::Arg::real(n->arg(1).f * std::stod(o.get("factor"))));
        r.changed = true;
        break;
      }
    return r;
  });
  return registry;
}

TEST(DeclaredTolerance, DifferencesWithinItAreReportedApartAndBeyondItAreViolations) {
  auto g = ir::parse_graph(
      "graph(arg %x : f32[64]):\n  %a : f32[64] = aten::mul.Scalar(%x, 3.0)\n  return (%a)\n", "scaled");
  std::vector<c10::IValue> inputs = {at::randn({64})};
  check::PassRegistry registry = registry_with_rounding_pass();
  const std::string nudge = "1.0000001";  // 3.0 becomes the next float or two up: a few ULP
  auto bitwise = check::check_pass_properties(*g, inputs, "scale-constant{factor=" + nudge + "}", registry);
  ASSERT_EQ(bitwise.violations.size(), 1u) << joined(bitwise.violations);
  EXPECT_NE(bitwise.violations[0].find("changed numerics"), std::string::npos);
  EXPECT_TRUE(bitwise.tolerated.empty());
  auto within =
      check::check_pass_properties(*g, inputs, "scale-constant{factor=" + nudge + ",tolerance-ulp=16}", registry);
  EXPECT_EQ(joined(within.violations), "");
  ASSERT_EQ(within.tolerated.size(), 1u);
  EXPECT_NE(within.tolerated[0].find("within its declared tolerance of 16 ULP"), std::string::npos);
  EXPECT_GT(within.tolerated_max_ulp, 0u);
  EXPECT_LE(within.tolerated_max_ulp, 16u);
  auto beyond = check::check_pass_properties(*g, inputs, "scale-constant{factor=1.5,tolerance-ulp=16}", registry);
  ASSERT_EQ(beyond.violations.size(), 1u) << joined(beyond.violations);
  EXPECT_TRUE(beyond.tolerated.empty());
}

}  // namespace
}  // namespace passcheck
