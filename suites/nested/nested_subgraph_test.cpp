// Nested subgraphs (framework/ir/subgraph.h, docs/nested-subgraphs.md): the text form
// round-trips and refuses malformed nests with file:line:col, the verifier checks
// bodies and calls, the pipeline refuses passes that do not handle nesting, and layer
// deduplication of the debug models (llama3, deepseek_v3) runs bitwise equal to the
// flat graph while holding far fewer nodes.
#include "framework/check/compare.h"
#include "framework/check/pipeline.h"
#include "framework/check/verifier.h"
#include "framework/exec/executor.h"
#include "framework/ir/module.h"
#include "framework/ir/subgraph.h"
#include "framework/ir/text.h"
#include "framework/trace/tracer.h"
#include "passes/registry.h"
#include "suites/support/traced_joint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace passcheck {
namespace {

using ::testing::HasSubstr;

// Canonical printed form (the printer's layout), so print(parse(text)) == text.
const char* kNested = R"(symbol s0 in [2, 4] hint 4 multiple_of 2
subgraph inner(
    arg %a : f32[sym(s0), 3]):
  %n : f32[sym(s0), 3] = aten::neg(%a)  #{fqn="mlp"}
  return (%n)
subgraph outer(
    arg %x : f32[sym(s0), 3],
    arg %w : f32[3, 3]):
  %mm : f32[sym(s0), 3] = aten::mm(%x, %w)  #{seq=0}
  %c : f32[sym(s0), 3] = passcheck::invoke_subgraph("inner", [%mm])
  return (%c, %mm)
graph(
    param %w0 : f32[3, 3],
    arg %x : f32[sym(s0), 3]):
  %h : f32[sym(s0), 3], %m : f32[sym(s0), 3] = passcheck::invoke_subgraph("outer", [%x, %w0])  #{fqn="layers.0", seq=4}
  return (%h, %m)
)";

std::string parse_error(const std::string& text) {
  try {
    ir::parse_graph(text, "nest.graph");
  } catch (const ir::ParseError& e) {
    return e.what();
  }
  return "no error";
}

TEST(NestedSubgraphText, RoundTripsThroughPrintAndParse) {
  std::unique_ptr<ir::Graph> g = ir::parse_graph(kNested, "nest.graph");
  ASSERT_EQ(g->subgraphs().size(), 2u);
  const std::string printed = g->print();
  EXPECT_EQ(printed, kNested);
  EXPECT_EQ(ir::parse_graph(printed)->print(), printed);
  EXPECT_TRUE(check::verify_graph(*g).empty()) << check::verify_graph(*g).front().message;
  // A body's calls resolve through the top graph's table; a clone owns its own copies.
  const ir::Graph* outer = g->find_subgraph("outer");
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->root(), g.get());
  EXPECT_NE(outer->find_subgraph("inner"), nullptr);
  std::unique_ptr<ir::Graph> copy = g->clone();
  EXPECT_EQ(copy->print(), g->print());
  EXPECT_NE(copy->find_subgraph("outer"), outer);
  EXPECT_EQ(copy->find_subgraph("outer")->root(), copy.get());
  EXPECT_EQ(ir::total_nodes(*g), 4u);
}

TEST(NestedSubgraphText, TheHashSeesTheBodies) {
  std::unique_ptr<ir::Graph> a = ir::parse_graph(kNested);
  std::string changed = kNested;
  changed.replace(changed.find("aten::neg"), 9, "aten::exp");
  std::unique_ptr<ir::Graph> b = ir::parse_graph(changed);
  EXPECT_EQ(a->print().substr(a->print().find("graph(")), b->print().substr(b->print().find("graph(")));
  EXPECT_NE(a->hash(), b->hash());
}

TEST(NestedSubgraphText, RefusesMalformedNestsWithTheirPosition) {
  EXPECT_THAT(parse_error("graph(arg %x : f32[2]):\n  %y : f32[2] = passcheck::invoke_subgraph(\"nope\", [%x])\n"
                          "  return (%y)\n"),
              HasSubstr("nest.graph:2:17: call of unknown subgraph 'nope'"));
  const std::string body = "subgraph s(\n    arg %a : f32[2]):\n  %n : f32[2] = aten::neg(%a)\n  return (%n)\n";
  EXPECT_THAT(parse_error(body + body + "graph(arg %x : f32[2]):\n  return (%x)\n"),
              HasSubstr("nest.graph:5:10: subgraph s is defined twice"));
  EXPECT_THAT(parse_error(body + "graph(arg %x : f32[2]):\n  %y : f32[2] = passcheck::invoke_subgraph(\"s\", [%x, %x])\n"
                                 "  return (%y)\n"),
              HasSubstr("nest.graph:6:17: call of subgraph 's' passes 2 operand(s) but it takes 1"));
  EXPECT_THAT(parse_error(body + "graph(arg %x : f32[3]):\n  %y : f32[3] = passcheck::invoke_subgraph(\"s\", [%x])\n"
                                 "  return (%y)\n"),
              HasSubstr("operand 0 %x is f32[3] but input %a is f32[2]"));
  const std::string loop =
      "subgraph a(\n    arg %p : f32[2]):\n  %q : f32[2] = passcheck::invoke_subgraph(\"b\", [%p])\n  return (%q)\n"
      "subgraph b(\n    arg %p : f32[2]):\n  %q : f32[2] = passcheck::invoke_subgraph(\"a\", [%p])\n  return (%q)\n"
      "graph(arg %x : f32[2]):\n  %y : f32[2] = passcheck::invoke_subgraph(\"a\", [%x])\n  return (%y)\n";
  EXPECT_THAT(parse_error(loop), HasSubstr("subgraph calls recurse: a -> b -> a"));
}

TEST(NestedSubgraphVerifier, NamesTheSubgraphOfALeftoverSymbol) {
  std::unique_ptr<ir::Graph> g = ir::parse_graph(kNested);
  // What a concretization that skips bodies leaves: the top graph without its symbol.
  g->remove_symbol("s0");
  for (ir::Value* in : g->inputs())
    if (in->meta()) {
      ir::TensorMeta m = *in->meta();
      m.drop_symbolic();
      in->set_meta(m);
    }
  std::string all;
  for (const check::VerifierIssue& issue : check::verify_graph(*g)) all += issue.message + "\n";
  EXPECT_THAT(all, HasSubstr("subgraph 'inner': "));
  EXPECT_THAT(all, HasSubstr("undeclared symbol s0"));
  EXPECT_THAT(all, HasSubstr("call of subgraph 'outer': operand 0 %x is f32[4, 3]"));
}

TEST(NestedSubgraphPipeline, RefusesAPassThatDoesNotHandleNesting) {
  std::unique_ptr<ir::Graph> g = ir::parse_graph(kNested);
  const check::PassRegistry& registry = check::PassRegistry::global();
  try {
    check::Pipeline::parse("dce", registry).run(*g);
    FAIL() << "dce ran on a nested graph";
  } catch (const check::PassConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("pass 'dce' does not handle nested subgraphs"));
    EXPECT_THAT(e.what(), HasSubstr("subgraph 'inner'"));
    EXPECT_THAT(e.what(), HasSubstr("run inline-subgraphs first"));
  }
  // A partitioner would split the calls from the table they name: refused as well.
  ir::Module module = ir::Module::of_graph(g->clone());
  EXPECT_THROW(check::Pipeline::parse("partition-save-all", registry).run(module), check::PassConfigError);
  // After inlining, the same pipeline runs.
  check::Pipeline::parse("concretize,inline-subgraphs,dce", registry).run(*g);
  EXPECT_FALSE(g->has_subgraphs());
  EXPECT_EQ(g->num_nodes(), 2u);
}

// ---- layer deduplication on the debug models ------------------------------------------

std::vector<c10::IValue> run_graph(const ir::Graph& g, const std::vector<c10::IValue>& inputs) {
  std::vector<c10::IValue> copies;
  for (const c10::IValue& v : inputs) copies.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
  exec::ExecutorOptions options;
  options.check_metadata = true;
  return exec::Executor(g, options).run(std::move(copies));
}

// `model` at its suite sizes, with `n_layers` blocks when given (deepseek_v3's suite
// model has one dense and one MoE block: a third block gives the MoE body a repeat).
void expect_dedup_bitwise(const std::string& model, int64_t n_layers = 0) {
  SCOPED_TRACE(model);
  models::SubjectOptions options = models::suite_options(model);
  if (n_layers > 0) {
    options.n_layers = n_layers;
    options.batch_size = 1;
    options.seq_len = 16;
  }
  auto subject = models::make_subject(model, options);
  trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), /*on_meta=*/false);
  const testing::TracedJoint flat{program.shared_graph(), program.make_graph_inputs(subject->batch(1))};
  std::unique_ptr<ir::Graph> dedup = flat.graph->clone();
  const ir::OutlineReport report = ir::outline_repeated_layers(*dedup);
  EXPECT_GT(report.regions, report.subgraphs) << "no layer body is shared";
  for (const check::VerifierIssue& issue : check::verify_graph(*dedup)) ADD_FAILURE() << issue.message;
  EXPECT_LT(ir::total_nodes(*dedup), flat.graph->num_nodes());
  // The text round-trips, and running it is running the flat graph, bit for bit.
  std::unique_ptr<ir::Graph> reparsed = ir::parse_graph(dedup->print(), model + " (dedup)");
  EXPECT_EQ(reparsed->print(), dedup->print());
  const std::vector<c10::IValue> expected = run_graph(*flat.graph, flat.inputs);
  const std::vector<c10::IValue> actual = run_graph(*reparsed, flat.inputs);
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!expected[i].isTensor()) continue;
    const check::TensorComparison c =
        check::compare_bitwise("output " + std::to_string(i), expected[i].toTensor(), actual[i].toTensor());
    EXPECT_TRUE(c.equal) << c.describe();
  }
  // Inlining gives back the flat graph's kernels and metadata in the flat order.
  std::unique_ptr<ir::Graph> inlined = dedup->clone();
  ir::inline_subgraphs(*inlined);
  ASSERT_EQ(inlined->num_nodes(), flat.graph->num_nodes());
  const ir::Node* a = flat.graph->first_node();
  for (const ir::Node* b : inlined->nodes()) {
    EXPECT_EQ(a->op(), b->op());
    EXPECT_TRUE(a->meta() == b->meta()) << ir::print_node(*a) << " vs " << ir::print_node(*b);
    a = a->next();
  }
}

TEST(LayerDedup, TheTracerOptionTracesEachLayerBodyOnce) {
  auto subject = models::make_subject("llama3", models::suite_options("llama3"));
  const trace::TracedProgram flat = oracles::trace_subject(*subject, subject->batch(0), /*on_meta=*/false);
  trace::TraceOptions options;
  options.deduplicate_layers = true;
  const trace::TracedProgram dedup = trace::trace_step(
      {{"", subject->module()}}, [&](const std::vector<c10::IValue>& args) { return subject->train_step(args); },
      subject->batch(0), options);
  ASSERT_TRUE(dedup.graph().has_subgraphs());
  EXPECT_EQ(dedup.graph().subgraphs().size(), 2u);  // one forward and one backward body
  std::unique_ptr<ir::Graph> inlined = dedup.graph().clone();
  ir::inline_subgraphs(*inlined);
  EXPECT_EQ(inlined->num_nodes(), flat.graph().num_nodes());
  const std::vector<c10::IValue> inputs = flat.make_graph_inputs(subject->batch(1));
  const std::vector<c10::IValue> expected = run_graph(flat.graph(), inputs);
  const std::vector<c10::IValue> actual = run_graph(dedup.graph(), inputs);
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i)
    if (expected[i].isTensor())
      EXPECT_TRUE(check::compare_bitwise("output", expected[i].toTensor(), actual[i].toTensor()).equal) << "output " << i;
}

TEST(LayerDedup, Llama3RunsBitwiseEqualToTheFlatGraph) { expect_dedup_bitwise("llama3"); }

TEST(LayerDedup, DeepseekV3RunsBitwiseEqualToTheFlatGraph) { expect_dedup_bitwise("deepseek_v3", 3); }

}  // namespace
}  // namespace passcheck
