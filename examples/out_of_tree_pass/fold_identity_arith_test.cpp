// The example pass checked with passcheck's own properties: text graphs in and out, the
// generic pass properties (gate, idempotence, bit-for-bit numerics), the executor's
// outputs compared bit for bit with the BitwiseEqual matcher, a RapidCheck property over
// passcheck's generated training programs, and the example's own mutant, which the same
// checks must catch.
#include "fold_identity_arith.h"

#include "framework/check/pass_properties.h"
#include "framework/check/pipeline.h"
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/ir/text.h"
#include "generators/program_case.h"
#include "suites/support/matchers.h"
#include "suites/support/rc_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <iterator>

namespace {

using namespace passcheck;

// The passes this project checks: passcheck's built-in ones, the example pass and its mutant.
const check::PassRegistry& registry() {
  static const check::PassRegistry r = [] {
    check::PassRegistry r;
    check::register_builtin_passes(r);
    example::register_example_passes(r);
    example::register_example_mutants(r);
    return r;
  }();
  return r;
}

// Every rule fires once; the guards keep add(x, 0) of a float and a promoting mul.
const char* const kFoldable = R"(graph(arg %x : f32[4], arg %i : i64[4]):
  %relu : f32[4] = aten::relu(%x)
  %mul : f32[4] = aten::mul.Scalar(%relu, 1.0)
  %sub : f32[4] = aten::sub.Scalar(%mul, 0, 1)
  %add : f32[4] = aten::add.Scalar(%sub, 0, 1)
  %addi : i64[4] = aten::add.Scalar(%i, 0, 1)
  %muli : f32[4] = aten::mul.Scalar(%i, 1.5)
  return (%add, %addi, %muli)
)";

const char* const kFolded = R"(graph(
    arg %x : f32[4],
    arg %i : i64[4]):
  %relu : f32[4] = aten::relu(%x)
  %add : f32[4] = aten::add.Scalar(%relu, 0, 1)
  %muli : f32[4] = aten::mul.Scalar(%i, 1.5)
  return (%add, %i, %muli)
)";

// -0.0 reaches an add(x, 0): relu of a negative is +0.0, negated -0.0; the sum is +0.0.
const char* const kNegativeZero = R"(graph(arg %x : f32[8]):
  %neg : f32[8] = aten::neg(%x)
  %relu : f32[8] = aten::relu(%neg)
  %zero : f32[8] = aten::neg(%relu)
  %add : f32[8] = aten::add.Scalar(%zero, 0, 1)
  return (%add)
)";

std::vector<c10::IValue> inputs_for(const ir::Graph& graph, uint64_t seed = 0) {
  exec::InputOptions options;
  options.seed = seed;
  return exec::make_inputs(graph, options);
}

TEST(FoldIdentityArith, FoldsTheTextGraphAsExpected) {
  auto graph = ir::parse_graph(kFoldable, "foldable");
  auto records = check::Pipeline::parse("fold-identity-arith", registry()).run(*graph);
  EXPECT_EQ(graph->print(), kFolded);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].changed);
  EXPECT_EQ(records[0].stats.at("folded_nodes"), 3);
}

TEST(FoldIdentityArith, HoldsThePassPropertiesOnTheTextGraphs) {
  for (const char* text : {kFoldable, kNegativeZero}) {
    auto graph = ir::parse_graph(text, "case");
    passcheck::testing::ExpectPassPreserves(registry(), "fold-identity-arith", *graph);
  }
}

TEST(FoldIdentityArith, OutputsAreBitwiseEqualToTheUnfoldedGraphOnTheExecutor) {
  auto before = ir::parse_graph(kFoldable, "foldable");
  auto after = before->clone();
  check::Pipeline::parse("fold-identity-arith", registry()).run(*after);
  const auto inputs = inputs_for(*before, 3);
  auto expected = exec::Executor(*before).run(inputs);
  auto actual = exec::Executor(*after).run(inputs);
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_THAT(actual[i].toTensor(), passcheck::testing::BitwiseEqual(expected[i].toTensor()));
}

bool is_contiguous(const ir::TensorMeta& meta) {
  int64_t stride = 1;
  for (size_t d = meta.sizes.size(); d-- > 0;) {
    if (meta.sizes[d] != 1 && meta.strides[d] != stride) return false;
    stride *= meta.sizes[d];
  }
  return true;
}

// Puts mul.Scalar(v, 1.0) or sub.Scalar(v, 0, 1) after a random contiguous float tensor
// value of the forward (arithmetic keeps that layout), its uses rerouted through it: the
// identity arithmetic a frontend leaves behind. False when the graph has no such value.
bool insert_identity(ir::Graph& graph, size_t pick, bool mul) {
  std::vector<ir::Node*> candidates;
  for (ir::Node* n : graph.nodes())
    if (n->num_outputs() == 1 && n->output(0)->meta() && c10::isFloatingType(n->output(0)->meta()->dtype) &&
        is_contiguous(*n->output(0)->meta()) && n->meta().phase == ir::Phase::Forward &&
        !n->output(0)->uses().empty())
      candidates.push_back(n);
  if (candidates.empty()) return false;
  ir::Node* producer = candidates[pick % candidates.size()];
  ir::Value* v = producer->output(0);
  std::vector<ir::Node*> order;
  for (ir::Node* n : graph.nodes()) order.push_back(n);
  auto next = std::next(std::find(order.begin(), order.end(), producer));
  std::vector<ir::Arg> args = mul ? std::vector<ir::Arg>{ir::Arg::of(v), ir::Arg::real(1.0)}
                                  : std::vector<ir::Arg>{ir::Arg::of(v), ir::Arg::integer(0), ir::Arg::integer(1)};
  ir::Node* id = graph.create(mul ? "aten::mul.Scalar" : "aten::sub.Scalar", args, next == order.end() ? nullptr : *next);
  id->mutable_meta() = producer->meta();
  ir::Value* out = id->add_output(ir::ValueType::Tensor, v->meta());
  v->replace_uses_if(out, [id](const ir::Use& use) { return use.user != id; });
  return true;
}

// The fuzzer: passcheck's generated training programs (forward, loss, backward) with
// identity arithmetic inserted, through the example pass behind the generic properties.
TEST(FoldIdentityArith, HoldsThePropertiesOnGeneratedPrograms) {
  passcheck::testing::check_n(25, [](uint64_t seed, size_t pick, bool mul) {
    gen::GeneratedCase c = gen::generate_case(seed);
    RC_PRE(insert_identity(*c.graph, pick, mul));
    exec::InputOptions options;
    options.seed = c.input_seed;
    options.int_high = c.int_high;
    auto report = check::check_pass_properties(*c.graph, exec::make_inputs(*c.graph, options), "fold-identity-arith",
                                               registry());
    for (const std::string& v : report.violations) RC_FAIL(c.description + ": " + v);
    // Folded, unless a guard kept it (a user writing the result in place).
    const check::PassRecord& record = report.records.at(0);
    RC_ASSERT(record.changed || !record.guards_refused.empty());
  });
}

// The checks can fail: the mutant that folds x + 0 of floats changes -0.0 into +0.0.
TEST(FoldIdentityArith, ThePropertiesCatchTheMutant) {
  auto graph = ir::parse_graph(kNegativeZero, "negative-zero");
  const auto inputs = inputs_for(*graph);
  EXPECT_TRUE(check::check_pass_properties(*graph, inputs, "fold-identity-arith", registry()).violations.empty());
  auto report =
      check::check_pass_properties(*graph, inputs, "mutant-fold-identity-arith-no-float-add-zero", registry());
  ASSERT_FALSE(report.violations.empty());
  EXPECT_THAT(report.violations[0], ::testing::HasSubstr("numerics"));
}

}  // namespace
