// Decisions (rules fired, guards refused) from the pass API to the coverage table: the
// pipeline gate rejects a pass reporting a decision it does not declare, records keep
// the counts, Coverage sums, lists what was never reached and travels as text, a
// counting registry counts what runs out of sight, the catalogue lists declarations,
// canonicalize routes faults to the step that owns the decision, and `passcheck fuzz`
// brings every case process's counts back into its table.
#include "framework/check/coverage.h"
#include "framework/check/pipeline.h"
#include "framework/check/repro.h"
#include "framework/ir/text.h"
#include "generators/coverage_campaign.h"
#include "generators/program_case.h"
#include "passes/cleanup/cleanup_passes.h"
#include "suites/support/test_support.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

namespace passcheck {
namespace {

check::PassInfo declared_info(const std::string& name) {
  check::PassInfo info(name, "test pass", {});
  info.rules = {{"rewrite", "the rewrite"}};
  info.guards = {{"keep", "the guard"}};
  return info;
}

// A pass that reports `guard` and `rule` once each, declared or not.
check::PassRegistry registry_with(const std::string& name, const std::string& rule, const std::string& guard) {
  check::PassRegistry registry;
  registry.add(declared_info(name), [rule, guard](ir::Graph&, const check::PassOptions& options) {
    check::PassResult result;
    check::Decisions d(result, options);
    d.fire(rule);
    d.refuse(guard, true);
    return result;
  });
  return registry;
}

std::unique_ptr<ir::Graph> tiny_graph() {
  return ir::parse_graph("graph(arg %x : f32[2]):\n  %relu : f32[2] = aten::relu(%x)\n  return (%relu)\n", "t");
}

TEST(DecisionGate, FailsAPassReportingAnUndeclaredGuard) {
  check::PassRegistry registry = registry_with("liar", "rewrite", "x");
  auto g = tiny_graph();
  try {
    check::Pipeline::parse("liar", registry).run(*g);
    FAIL() << "the gate accepted an undeclared guard";
  } catch (const check::PassFailure& e) {
    EXPECT_STREQ(e.what(), "failed after liar: reported undeclared guard 'x'");
  }
}

TEST(DecisionGate, FailsAPassReportingAnUndeclaredRule) {
  check::PassRegistry registry = registry_with("liar", "widen-everything", "keep");
  auto g = tiny_graph();
  EXPECT_THROW(
      {
        try {
          check::Pipeline::parse("liar", registry).run(*g);
        } catch (const check::PassFailure& e) {
          EXPECT_STREQ(e.what(), "failed after liar: reported undeclared rule 'widen-everything'");
          throw;
        }
      },
      check::PassFailure);
}

TEST(DecisionGate, RecordsKeepDeclaredDecisions) {
  check::PassRegistry registry = registry_with("honest", "rewrite", "keep");
  auto g = tiny_graph();
  std::vector<check::PassRecord> records = check::Pipeline::parse("honest,honest", registry).run(*g);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].rules_fired.at("rewrite"), 1);
  EXPECT_EQ(records[1].guards_refused.at("keep"), 1);
}

TEST(DecisionGate, RegistryRejectsBadDecisionNames) {
  check::PassRegistry registry;
  check::PassInfo info = declared_info("bad");
  info.guards.push_back({"Not_Kebab", ""});
  EXPECT_THROW(registry.add(info, [](ir::Graph&, const check::PassOptions&) { return check::PassResult(); }),
               check::PassConfigError);
  info = declared_info("twice");
  info.rules.push_back({"rewrite", "again"});
  EXPECT_THROW(registry.add(info, [](ir::Graph&, const check::PassOptions&) { return check::PassResult(); }),
               check::PassConfigError);
  info = declared_info("qualified");
  info.rules.push_back({"part/rewrite", "a composite's part"});
  EXPECT_NO_THROW(registry.add(info, [](ir::Graph&, const check::PassOptions&) { return check::PassResult(); }));
}

TEST(DecisionsApi, ADisabledGuardIsCountedButDoesNotRefuse) {
  check::PassResult result;
  check::InjectedFaults faults;
  faults.disabled_guards.insert("keep");
  check::PassOptions options = check::PassOptions().with_faults(faults);
  check::Decisions d(result, options);
  EXPECT_FALSE(d.refuse("keep", true));
  EXPECT_TRUE(d.refuse("other", true));
  EXPECT_FALSE(d.refuse("other", false));
  EXPECT_EQ(result.guards_refused.at("keep"), 1);
  EXPECT_EQ(result.guards_refused.at("other"), 1);
}

TEST(Coverage, SumsListsUnreachedAndRoundTripsAsText) {
  check::PassRegistry registry = registry_with("p", "rewrite", "keep");
  check::Coverage coverage;
  check::PassResult r;
  r.rules_fired["rewrite"] = 2;
  coverage.add("p", r);
  coverage.add("p", r);
  EXPECT_EQ(coverage.rule("p", "rewrite"), 4);
  EXPECT_EQ(coverage.guard("p", "keep"), 0);
  EXPECT_EQ(coverage.unreached(registry, {"p"}), std::vector<std::string>{"p guard keep: never refused"});
  std::string table = coverage.table(registry, {"p"});
  EXPECT_NE(table.find("p (1/2 decisions reached)"), std::string::npos) << table;
  EXPECT_NE(table.find("NOT REACHED"), std::string::npos) << table;

  check::Coverage back = check::Coverage::parse(coverage.serialize());
  EXPECT_EQ(back.serialize(), coverage.serialize());
  back.merge(coverage);
  EXPECT_EQ(back.rule("p", "rewrite"), 8);
  EXPECT_THROW(check::Coverage::parse("rule\tp\trewrite\tmany\n"), std::invalid_argument);
  EXPECT_THROW(check::Coverage::parse("policy\tp\trewrite\t1\n"), std::invalid_argument);
}

TEST(Coverage, CountingRegistryCountsPipelineRuns) {
  check::Coverage coverage;
  check::PassRegistry counting = check::counting_registry(registry_with("p", "rewrite", "keep"), &coverage);
  auto g = tiny_graph();
  check::Pipeline::parse("p,p,p", counting).run(*g);
  EXPECT_EQ(coverage.rule("p", "rewrite"), 3);
  EXPECT_EQ(coverage.guard("p", "keep"), 3);
}

// A pass that refuses its input returns no PassResult: the decisions it made up to the
// refusal travel with check::RefusedInput and are counted, and the refusal too.
TEST(Coverage, CountingRegistryCountsTheDecisionsBeforeARefusal) {
  check::PassRegistry refusing;
  refusing.add(declared_info("p"), [](ir::Graph&, const check::PassOptions& options) -> check::PassResult {
    check::PassResult result;
    check::Decisions d(result, options);
    d.fire("rewrite");
    if (d.refuse("keep", true)) throw check::RefusedInput("p: refused", result);
    return result;
  });
  check::Coverage coverage;
  check::PassRegistry counting = check::counting_registry(refusing, &coverage);
  auto g = tiny_graph();
  EXPECT_THROW(check::Pipeline::parse("p", counting).run(*g), check::PassFailure);
  EXPECT_EQ(coverage.rule("p", "rewrite"), 1);
  EXPECT_EQ(coverage.guard("p", "keep"), 1);
  EXPECT_EQ(coverage.refusals(), 1);
  check::Coverage merged;
  merged.merge(coverage);
  EXPECT_EQ(merged.refusals(), 1);
}

TEST(Coverage, CatalogueListsDeclaredRulesAndGuards) {
  check::PassRegistry registry;
  passes::register_cleanup_passes(registry);
  std::string catalogue = registry.catalogue();
  EXPECT_NE(catalogue.find("  guards:\n    mutating: "), std::string::npos) << catalogue;
  EXPECT_NE(catalogue.find("    merge-duplicate: "), std::string::npos);
  EXPECT_NE(catalogue.find("    remove-identity-slice/start-not-zero: "), std::string::npos);
  EXPECT_EQ(check::passes_with_decisions(registry).size(), 8u);
}

TEST(Coverage, CanonicalizeReportsAndRoutesQualifiedDecisions) {
  const std::string text = R"(graph(arg %x : f32[4, 3]):
  %slice : f32[3, 3] = aten::slice.Tensor(%x, 0, 1, 4)
  %detach : f32[3, 3] = aten::detach(%slice)
  return (%detach)
)";
  auto g = ir::parse_graph(text, "t");
  check::PassResult real = passes::canonicalize_pass(*g);
  EXPECT_EQ(real.rules_fired.at("remove-detach/forward-detach"), 1);
  EXPECT_GE(real.guards_refused.at("remove-identity-slice/start-not-zero"), 1);
  EXPECT_EQ(g->num_nodes(), 1u);  // the slice stays

  g = ir::parse_graph(text, "t");
  check::InjectedFaults faults;
  faults.disabled_guards.insert("remove-identity-slice/start-not-zero");
  passes::canonicalize_pass(*g, check::PassOptions().with_faults(faults));
  EXPECT_EQ(g->num_nodes(), 0u);  // the fault reached remove-identity-slice: the slice went
}

TEST(Coverage, FuzzTableSumsTheCountsOfEveryCaseProcess) {
  // The same cases in-process (the fuzzer's case seeds are gen::case_seed's) give the
  // counts the table must show, so a count lost on the way back from a child shows.
  const int64_t cases = 4;
  const uint64_t seed = 5;
  check::Coverage expected;
  check::PassRegistry counting = check::counting_registry(check::PassRegistry::global(), &expected);
  for (int64_t i = 0; i < cases; ++i) {
    gen::GeneratedCase c = gen::generate_case(gen::case_seed(seed, i));
    check::check_case(*c.graph, "cleanup", c.input_seed, c.int_high, counting);
  }
  ASSERT_FALSE(expected.empty());
  std::string dir = testing::make_temp_dir();
  auto r = testing::run_command(testing::passcheck_binary() + " fuzz --pipeline cleanup --jobs 2 --cases " +
                                std::to_string(cases) + " --seed " + std::to_string(seed) + " --out " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_NE(r.output.find("decision coverage"), std::string::npos) << r.output;
  for (const std::string& pass : {"dce", "cse", "canonicalize"}) {
    const check::PassInfo& info = check::PassRegistry::global().get(pass).info;
    size_t block = r.output.find("\n" + std::string(pass) + " (");
    ASSERT_NE(block, std::string::npos) << pass << "\n" << r.output;
    for (const auto* kind : {&info.rules, &info.guards}) {
      bool is_rule = kind == &info.rules;
      for (const check::DecisionInfo& d : *kind) {
        int64_t n = is_rule ? expected.rule(pass, d.name) : expected.guard(pass, d.name);
        std::regex line(std::string(is_rule ? "rule " : "guard") + " " + d.name + " +" + std::to_string(n) + "(\n|  NOT)");
        // The pass's own block: up to the next line that does not start with a space.
        std::string rest = r.output.substr(block + 1);
        std::smatch next;
        if (std::regex_search(rest, next, std::regex("\n[^ ]"))) rest = rest.substr(0, next.position(0) + 1);
        EXPECT_TRUE(std::regex_search(rest, line)) << pass << " " << d.name << " should read " << n << "\n" << r.output;
      }
    }
  }
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_NE(e.path().extension(), ".coverage") << "left behind: " << e.path();
}

// What a pass changed, as campaigns count it: the computation (Graph::computation_hash),
// metadata only (Graph::unnamed_hash), or nothing but names.
std::unique_ptr<ir::Graph> scalar_graph() {
  return ir::parse_graph("graph(arg %x : f32[2]):\n  %a : f32[2] = aten::add.Scalar(%x, 1)\n  return (%a)\n", "t");
}

TEST(GraphHash, ComputationHashIgnoresNamesAndMetadataButNotOperatorsOrArguments) {
  auto g = scalar_graph(), renamed = scalar_graph(), tagged = scalar_graph(), rewritten = scalar_graph();
  renamed->rename(renamed->node_list().front()->output(0), "b");
  tagged->node_list().front()->mutable_meta().custom["k"] = "v";
  rewritten->node_list().front()->set_arg(1, ir::Arg::integer(2));
  EXPECT_NE(g->hash(), renamed->hash());
  EXPECT_EQ(g->computation_hash(), renamed->computation_hash());
  EXPECT_EQ(g->unnamed_hash(), renamed->unnamed_hash());
  EXPECT_NE(g->hash(), tagged->hash());
  EXPECT_EQ(g->computation_hash(), tagged->computation_hash());
  EXPECT_NE(g->unnamed_hash(), tagged->unnamed_hash());
  EXPECT_NE(g->computation_hash(), rewritten->computation_hash());
  // A swapped operand is a different computation even with every name kept.
  auto two = ir::parse_graph(
      "graph(arg %x : f32[2], arg %y : f32[2]):\n  %s : f32[2] = aten::sub.Tensor(%x, %y, 1)\n  return (%s)\n", "t");
  auto swapped = ir::parse_graph(
      "graph(arg %x : f32[2], arg %y : f32[2]):\n  %s : f32[2] = aten::sub.Tensor(%y, %x, 1)\n  return (%s)\n", "t");
  EXPECT_NE(two->computation_hash(), swapped->computation_hash());
}

check::PassRegistry changing_registry() {
  check::PassRegistry registry;
  auto add = [&](const std::string& name, std::function<void(ir::Graph&)> edit) {
    registry.add(check::PassInfo(name, "test pass", {}), [edit](ir::Graph& g, const check::PassOptions&) {
      const uint64_t before = g.hash();
      edit(g);
      check::PassResult r;
      r.changed = g.hash() != before;
      return r;
    });
  };
  add("renamer", [](ir::Graph& g) { g.rename(g.node_list().front()->output(0), "renamed"); });
  add("tagger", [](ir::Graph& g) { g.node_list().front()->mutable_meta().custom["k"] = "v"; });
  add("rewriter", [](ir::Graph& g) { g.node_list().front()->set_arg(1, ir::Arg::integer(7)); });
  return registry;
}

TEST(Coverage, CountsRunsAndCasesByWhatThePassChanged) {
  check::PassRegistry registry = changing_registry();
  check::Coverage one_case;
  check::PassRegistry counting = check::counting_registry(registry, &one_case);
  auto g = scalar_graph();
  check::Pipeline::parse("renamer,tagger,rewriter,tagger", counting).run(*g);
  const auto& runs = one_case.run_changes();
  ASSERT_EQ(runs.count("renamer"), 1u);
  EXPECT_EQ(runs.at("renamer").runs, 1);
  EXPECT_EQ(runs.at("renamer").changed(), 0) << "renaming is no change";
  EXPECT_EQ(runs.at("tagger").runs, 2);
  EXPECT_EQ(runs.at("tagger").metadata_only, 1) << "the second tag is already there";
  EXPECT_EQ(runs.at("tagger").computation, 0);
  EXPECT_EQ(runs.at("rewriter").computation, 1);
  // A campaign counts each case once per pass.
  check::Coverage campaign;
  campaign.merge_case(one_case);
  campaign.merge_case(check::Coverage::parse(one_case.serialize()));
  const auto& cases = campaign.case_changes();
  EXPECT_EQ(cases.at("tagger").runs, 2);
  EXPECT_EQ(cases.at("tagger").metadata_only, 2);
  EXPECT_EQ(cases.at("rewriter").computation, 2);
  EXPECT_EQ(cases.at("renamer").changed(), 0);
  // The campaign's own counts travel as text too.
  check::Coverage back = check::Coverage::parse(campaign.serialize());
  EXPECT_EQ(back.case_changes().at("rewriter").computation, 2);
  EXPECT_EQ(back.run_changes().at("tagger").runs, 4);
  EXPECT_FALSE(back.empty());
}

}  // namespace
}  // namespace passcheck
