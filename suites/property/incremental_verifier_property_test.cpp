// The incremental verifier against the full one. A well-formed graph (a traced training
// step, or an FSDP chain with collectives),
// its change log cleared, then random edits through the IR API (generators/graph_edits.h:
// moves, operand rewrites, phase and policy changes, wrong-kind arguments, erased waits,
// copies placed anywhere): verify_changes must find a problem exactly when verify_graph
// does. Each known-buggy incremental verifier (suites/mutants/verifier_mutants.h) must
// disagree with the full verifier on some case, and the gate's Checked mode must fail a
// pass behind it. Also: the graph hash agrees with the text form.
#include "framework/check/pipeline.h"
#include "framework/check/verifier.h"
#include "framework/ir/text.h"
#include "generators/fsdp_graphs.h"
#include "generators/graph_edits.h"
#include "generators/program_case.h"
#include "suites/mutants/verifier_mutants.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <memory>
#include <string>

namespace passcheck {
namespace {

// A handful of graphs edited many ways: traced training programs (a few hundred nodes,
// every phase) and FSDP chains on a mesh (collectives and their waits).
constexpr uint64_t kGraphs = 10;
std::shared_ptr<ir::Graph> traced(uint64_t seed) {
  static std::map<uint64_t, std::shared_ptr<ir::Graph>> cache;
  auto& g = cache[seed % kGraphs];
  if (!g)
    g = seed % kGraphs < 6 ? gen::generate_case(seed % kGraphs).graph
                           : std::shared_ptr<ir::Graph>(ir::parse_graph(gen::fsdp_chain_graph_for_seed(seed % kGraphs)));
  return g;
}

struct EditedCase {
  std::unique_ptr<ir::Graph> graph;
  std::vector<std::string> edits;
};

EditedCase edited(uint64_t program_seed, uint64_t edit_seed, int edits) {
  EditedCase c{traced(program_seed)->clone(), {}};
  c.graph->clear_changes();
  c.edits = gen::apply_random_edits(*c.graph, edit_seed, edits);
  return c;
}

std::string listing(const EditedCase& c) {
  std::string out;
  for (const std::string& e : c.edits) out += "\n  " + e;
  return out;
}

RC_GTEST_PROP(IncrementalVerifier, FindsAProblemExactlyWhenTheFullVerifierDoes, ()) {
  const uint64_t program = *rc::gen::inRange<uint64_t>(0, kGraphs);
  const uint64_t edit_seed = *rc::gen::arbitrary<uint64_t>();
  const int count = *rc::gen::inRange(1, 5);
  RC_ASSERT(check::verify_graph(*traced(program)).empty());
  EditedCase c = edited(program, edit_seed, count);
  const auto full = check::verify_graph(*c.graph);
  const auto incremental = check::verify_changes(*c.graph, check::changes_of(*c.graph));
  RC_TAG(full.empty() ? "well formed after the edits" : "broken by the edits");
  if (full.empty() != incremental.empty())
    RC_FAIL("edits:" + listing(c) + "\nfull: " + (full.empty() ? "none" : full.front().message) +
            "\nincremental: " + (incremental.empty() ? "none" : incremental.front().message));
}

// A graph being built is re-verified whole, so adding a use does not mark the value's
// producer; once the change log is cleared it must again. Here a wait is moved from one
// gather to the other after the log was cleared: only the gather left without a wait is
// wrong, and only its use list changed. A freshly parsed graph with that mistake is found
// wrong too.
TEST(IncrementalVerifier, AUseMovedAfterTheLogIsClearedRechecksTheValuesProducer) {
  const std::string text = R"(mesh dp=4 rank 0
graph(
    param %w : f32[4, 8] placed(S(0)),
    arg %x : f32[2, 16]):
  %ag : f32[16, 8] = _c10d_functional::all_gather_into_tensor(%w, 4, "dp")
  %wait : f32[16, 8] placed(R) = _c10d_functional::wait_tensor(%ag)
  %ag_1 : f32[16, 8] = _c10d_functional::all_gather_into_tensor(%w, 4, "dp")
  %wait_1 : f32[16, 8] placed(R) = _c10d_functional::wait_tensor(%WAITED)
  %mm : f32[2, 8] = aten::mm(%x, %wait)
  %mm_1 : f32[2, 8] = aten::mm(%x, %wait_1)
  return (%mm, %mm_1))";
  auto with = [&](const std::string& waited) {
    std::string t = text;
    t.replace(t.find("WAITED"), 6, waited);
    return ir::parse_graph(t);
  };
  std::unique_ptr<ir::Graph> g = with("ag_1");
  ASSERT_TRUE(check::verify_graph(*g).empty());
  g->clear_changes();
  g->find_value("wait_1")->producer()->replace_operand(0, g->find_value("ag"));
  const auto full = check::verify_graph(*g);
  ASSERT_FALSE(full.empty());
  const auto incremental = check::verify_changes(*g, check::changes_of(*g));
  ASSERT_FALSE(incremental.empty());
  EXPECT_EQ(incremental.front().message, full.front().message);

  std::unique_ptr<ir::Graph> built = with("ag");  // never cleared: every node is new
  const auto built_full = check::verify_graph(*built);
  ASSERT_FALSE(built_full.empty());
  const auto built_incremental = check::verify_changes(*built, check::changes_of(*built));
  ASSERT_FALSE(built_incremental.empty());
  EXPECT_EQ(built_incremental.front().message, built_full.front().message);
}

// Every mutant misses what the full verifier finds on some case among the first few
// hundred (drawn in a fixed order, so the test is repeatable); the real one never does.
TEST(IncrementalVerifier, EveryVerifierMutantMissesABrokenGraph) {
  for (const mutants::VerifierMutant& m : mutants::verifier_mutants()) {
    bool caught = false;
    for (uint64_t seed = 0; seed < 600 && !caught; ++seed) {
      EditedCase c = edited(seed, seed * 7919 + 1, 1 + static_cast<int>(seed % 3));
      const check::ChangeSet changes = check::changes_of(*c.graph);
      const bool full = !check::verify_graph(*c.graph).empty();
      ASSERT_EQ(full, !check::verify_changes(*c.graph, changes).empty()) << "seed " << seed << listing(c);
      caught = full && m.verify_changes(*c.graph, changes).empty();
    }
    EXPECT_TRUE(caught) << m.name << " (" << m.description << ") agreed with the full verifier on 600 cases";
  }
}

// A pass that moves a node above its operand's definition, behind a gate whose
// incremental verifier skips the last touched node: Incremental lets it through, Checked
// fails it naming the gap, the real incremental verifier fails it like Full.
TEST(IncrementalVerifier, TheCheckedGateCatchesAVerifierThatSkipsATouchedNode) {
  check::PassRegistry registry;
  check::PassInfo info;
  info.name = "test-hoist-last-node";
  info.summary = "moves the last node to the front (breaks definition order)";
  registry.add(info, [](ir::Graph& g, const check::PassOptions&) {
    g.last_node()->move_before(g.first_node());
    check::PassResult result;
    result.changed = true;
    return result;
  });
  const auto graph = ir::parse_graph(R"(graph(arg %x : f32[2]):
  %a : f32[2] = aten::neg(%x)
  %b : f32[2] = aten::neg(%a)
  return (%b)
)");
  const mutants::VerifierMutant& skip_last = mutants::verifier_mutants().front();
  ASSERT_EQ(skip_last.name, "verifier-skips-last-touched");
  auto run = [&](check::Verification mode, bool mutant) -> std::string {
    check::PipelineOptions options;
    options.verification = mode;
    if (mutant) options.verify_changes = skip_last.verify_changes;
    auto copy = graph->clone();
    try {
      check::Pipeline::parse("test-hoist-last-node", registry).run(*copy, options);
    } catch (const check::PassFailure& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(run(check::Verification::Incremental, true), "");
  EXPECT_NE(run(check::Verification::Checked, true).find("the incremental verifier missed"), std::string::npos);
  const std::string real = run(check::Verification::Incremental, false);
  EXPECT_NE(real.find("used before its definition"), std::string::npos) << real;
  EXPECT_EQ(real, run(check::Verification::Full, false));
}

// Graphs whose text is equal hash equally and graphs whose text differs hash apart, over
// the same edits (the gate's changed claim depends on both directions).
RC_GTEST_PROP(GraphHash, AgreesWithTheTextForm, ()) {
  const uint64_t program = *rc::gen::inRange<uint64_t>(0, kGraphs);
  EditedCase c = edited(program, *rc::gen::arbitrary<uint64_t>(), *rc::gen::inRange(0, 3));
  const ir::Graph& original = *traced(program);
  const bool same_text = c.graph->print() == original.print();
  RC_TAG(same_text ? "same text" : "different text");
  RC_ASSERT(same_text == (c.graph->hash() == original.hash()));
  // Text of a broken graph (a use above its definition) does not parse back.
  if (check::verify_graph(*c.graph).empty())
    RC_ASSERT(ir::parse_graph(c.graph->print())->hash() == c.graph->hash());
}

}  // namespace
}  // namespace passcheck
