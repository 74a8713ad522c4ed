// Properties over random training-step programs (generators/program.h): each program is
// traced into its joint graph and held to (a) traced == eager bit for bit over two
// optimizer steps, (b) the generic pass properties for every registered pass and for
// the default cleanup and activation-checkpointing pipelines, (c) the
// rematerialization properties after each AC policy, (d) print -> parse -> print
// identity of the traced graph; and (e) the generator must actually reach its
// vocabulary. Programs are kept small and the number of runs modest (check_n), so the
// whole file stays well under a minute on one core; RC_PARAMS="seed=..." reproduces.
#include "suites/support/rc_check.h"
#include "framework/check/pass_properties.h"
#include "framework/check/pipeline.h"
#include "framework/check/remat_properties.h"
#include "framework/exec/inputs.h"
#include "framework/ir/text.h"
#include "generators/program.h"
#include "generators/program_case.h"
#include "oracles/training_driver.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace passcheck {
namespace {

using testing::check_n;

using gen::ProgramSpec;

// Small programs: the properties are about the passes, and small graphs shrink fast.
gen::ProgramGenOptions small_options() {
  gen::ProgramGenOptions o;
  o.max_layers = 3;
  o.max_ops_per_layer = 6;
  o.max_dim = 8;
  return o;
}

bool has(const ProgramSpec& spec, bool (*pred)(gen::OpKind)) {
  for (const auto& layer : spec.layers)
    for (const auto& op : layer.ops)
      if (pred(op.kind)) return true;
  return false;
}

void tag(const ProgramSpec& spec) {
  bool bf16 = false;
  size_t ops = 0;
  for (const auto& layer : spec.layers) {
    bf16 |= layer.bf16;
    ops += layer.ops.size();
  }
  RC_TAG(std::to_string(spec.layers.size()) + " layers", ops <= 3 ? "1-3 ops" : "4+ ops", bf16 ? "bf16" : "f32",
         has(spec, gen::is_random) ? "random" : "deterministic", gen::to_string(spec.loss));
}

struct TracedCase {
  std::shared_ptr<ir::Graph> graph;
  std::vector<c10::IValue> inputs;
};

TracedCase trace(const ProgramSpec& spec, uint64_t seed) {
  auto subject = gen::make_program_subject(spec, seed);
  trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), /*on_meta=*/false);
  TracedCase c;
  c.graph = program.shared_graph();
  exec::InputOptions in;
  in.seed = seed;
  in.int_high = spec.int_high();
  c.inputs = exec::make_inputs(*c.graph, in);
  return c;
}

const std::vector<std::string> kPolicies = {"default", "eager", "full", "op"};

std::string ac_pipeline(const std::string& policy) {
  return "ac-regions,sac-tag{policy=" + policy + "},remat{rng=replay}";
}

// Every registered pass, with the passes it needs run before it.
std::vector<std::string> pipelines_under_test() {
  std::vector<std::string> out;
  for (const auto* pass : check::PassRegistry::global().list()) {
    const std::string& name = pass->info.name;
    // chunk needs a graph traced with a symbolic dimension: its properties are checked
    // by chunk_fuzz_properties_test.cpp over chunkable programs.
    if (name == "chunk") continue;
    if (name == "remat") out.push_back("ac-regions,sac-tag,remat{rng=replay}");
    else if (name == "sac-tag") out.push_back("ac-regions,sac-tag");
    else out.push_back(name);
  }
  out.push_back("dce,canonicalize,cse,dce");
  for (const auto& p : kPolicies) out.push_back(ac_pipeline(p));
  return out;
}

TEST(ProgramProperties, TracedEqualsEagerForTwoSteps) {
  check_n(200, [] {
    const ProgramSpec spec = *gen::arbitrary_program(small_options());
    tag(spec);
    oracles::DriverOptions d;
    d.model = "program";
    d.steps = 2;
    d.make_subject = [spec] { return gen::make_program_subject(spec, 7); };
    const oracles::DriverReport report = oracles::run_traced_vs_eager(d);
    if (!report.equal()) RC_FAIL(report.format());
  });
}

TEST(ProgramProperties, EveryPassKeepsItsGenericProperties) {
  const std::vector<std::string> pipelines = pipelines_under_test();
  check_n(100, [&pipelines] {
    const ProgramSpec spec = *gen::arbitrary_program(small_options());
    tag(spec);
    const TracedCase c = trace(spec, 11);
    for (const std::string& pipeline : pipelines) {
      const check::PassPropertyReport report = check::check_pass_properties(*c.graph, c.inputs, pipeline);
      for (const std::string& v : report.violations) RC_FAIL(pipeline + ": " + v + "\ngraph:\n" + c.graph->print());
    }
  });
}

TEST(ProgramProperties, RematKeepsItsPromisesUnderEveryPolicy) {
  check_n(200, [] {
    const ProgramSpec spec = *gen::arbitrary_program(small_options());
    tag(spec);
    const TracedCase c = trace(spec, 13);
    for (const std::string& policy : kPolicies) {
      auto after = c.graph->clone();
      check::Pipeline::parse(ac_pipeline(policy), check::PassRegistry::global()).run(*after);
      for (const std::string& v : check::check_remat_properties(*c.graph, *after))
        RC_FAIL("policy " + policy + ": " + v + "\nbefore:\n" + c.graph->print() + "after:\n" + after->print());
    }
  });
}

TEST(ProgramProperties, TracedGraphTextRoundTrips) {
  check_n(200, [] {
    const ProgramSpec spec = *gen::arbitrary_program(small_options());
    tag(spec);
    const TracedCase c = trace(spec, 17);
    const std::string text = c.graph->print();
    RC_ASSERT(ir::parse_graph(text, "<traced>")->print() == text);
  });
}

// Coverage of the generator through generate_case (what the fuzzer draws): the graphs
// must reach the ATen vocabulary the generator promises, including the awkward corners.
TEST(ProgramProperties, GeneratedCasesCoverTheVocabulary) {
  std::set<std::string> ops;  // operator names without overload
  bool bf16 = false, random = false, buffer_update = false, multi_output = false, embedding = false,
       cross_entropy = false;
  const std::set<std::string> random_ops = {"aten::bernoulli", "aten::bernoulli_", "aten::uniform_",
                                            "aten::native_dropout", "aten::rand_like", "aten::rand"};
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const gen::GeneratedCase c = gen::generate_case(seed);
    ASSERT_GE(c.int_high, 2);
    ASSERT_FALSE(c.description.empty());
    std::set<const ir::Value*> buffers;
    for (const ir::Value* in : c.graph->inputs())
      if (in->role() == ir::InputRole::Buffer) buffers.insert(in);
    for (const ir::Node* n : c.graph->nodes()) {
      const std::string op = n->op().substr(0, n->op().find('.'));
      ops.insert(op);
      random |= random_ops.count(op) > 0;
      multi_output |= n->num_outputs() > 1;
      embedding |= op == "aten::embedding";
      cross_entropy |= op == "aten::nll_loss_forward";
      for (const ir::Value* out : n->outputs())
        bf16 |= out->meta() && out->meta()->dtype == c10::ScalarType::BFloat16;
      if (!op.empty() && op.back() == '_')
        for (const ir::Value* operand : n->operands()) buffer_update |= buffers.count(operand) > 0;
    }
  }
  std::string all;
  for (const auto& op : ops) all += op + " ";
  std::cout << ops.size() << " distinct operators: " << all << std::endl;
  EXPECT_GE(ops.size(), 40u) << all;
  EXPECT_TRUE(bf16);
  EXPECT_TRUE(random) << all;
  EXPECT_TRUE(buffer_update) << all;
  EXPECT_TRUE(multi_output);
  EXPECT_TRUE(embedding) << all;
  EXPECT_TRUE(cross_entropy) << all;
}

// Cases are traced on meta tensors and moved to the CPU (gen::TraceOn::Meta): that must
// record exactly the graph a real CPU run of the step records, for every kind of program
// the fuzzer and the suites draw.
TEST(ProgramProperties, MetaTraceEqualsCpuTrace) {
  const std::pair<const char*, gen::ProgramGenOptions> families[] = {
      {"plain", gen::ProgramGenOptions{}},
      {"decision coverage", gen::ac_coverage_options()},
      {"chunkable", gen::chunkable_options()},
  };
  for (const auto& [family, options] : families)
    for (uint64_t seed = 0; seed < 250; ++seed) {
      const std::string cpu = gen::generate_case(seed, options, gen::TraceOn::Cpu).graph->print();
      ASSERT_EQ(gen::generate_case(seed, options, gen::TraceOn::Meta).graph->print(), cpu)
          << family << " program of seed " << seed;
    }
  for (uint64_t seed = 0; seed < 50; ++seed)
    ASSERT_EQ(gen::generate_repeated_layer_case(seed, 3, gen::TraceOn::Meta).graph->print(),
              gen::generate_repeated_layer_case(seed, 3, gen::TraceOn::Cpu).graph->print())
        << "repeated-layer program of seed " << seed;
}

TEST(ProgramProperties, GenerateCaseIsDeterministic) {
  const gen::GeneratedCase a = gen::generate_case(42), b = gen::generate_case(42);
  EXPECT_EQ(a.graph->print(), b.graph->print());
  EXPECT_EQ(a.description, b.description);
  EXPECT_EQ(a.input_seed, b.input_seed);
}

}  // namespace
}  // namespace passcheck

