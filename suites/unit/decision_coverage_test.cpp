// Decisions (rules fired, guards refused) from the pass API to the coverage table: the
// pipeline gate rejects a pass reporting a decision it does not declare, records keep
// the counts, Coverage sums, lists what was never reached and travels as text, a
// counting registry counts what runs out of sight, the catalogue lists declarations,
// and canonicalize routes faults to the step that owns the decision.
#include "framework/check/coverage.h"
#include "framework/check/pipeline.h"
#include "framework/ir/text.h"
#include "passes/cleanup/cleanup_passes.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace passcheck
