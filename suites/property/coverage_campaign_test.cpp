// The default coverage campaign (generators/coverage_campaign.h) reaches every rule and
// every guard of every registered pass that declares any, and the real passes hold the
// generic properties on all its cases. An unreached decision is a gap in the
// generators: the message names it and the table shows what was reached. The few
// decisions no input graph can reach are listed, with the argument, in
// gen::known_decision_gaps().
#include "generators/coverage_campaign.h"

#include <gtest/gtest.h>

#include <iostream>

namespace passcheck {
namespace {

TEST(CoverageCampaign, ReachesEveryDeclaredRuleAndGuard) {
  const check::PassRegistry& registry = check::PassRegistry::global();
  gen::CampaignResult result = gen::run_campaign(gen::default_coverage_campaign(), registry);
  std::set<std::string> passes = check::passes_with_decisions(registry);
  std::cout << "default coverage campaign: " << result.cases << " cases\n" << result.coverage.table(registry, passes);
  std::string unreached;
  std::set<std::string> unreached_gaps;
  for (const std::string& u : result.coverage.unreached(registry, passes)) {
    const std::string key = u.substr(0, u.find(':'));  // "pass rule|guard name: never fired"
    if (gen::known_decision_gaps().count(key)) unreached_gaps.insert(key);
    else unreached += "\n  " + u;
  }
  for (const auto& [gap, why] : gen::known_decision_gaps())
    EXPECT_TRUE(unreached_gaps.count(gap)) << gap << " is reached now: remove it from gen::known_decision_gaps()";
  EXPECT_TRUE(unreached.empty()) << "declared decisions no generated case reaches (a gap in the generators):"
                                 << unreached;
  std::string violations;
  for (size_t i = 0; i < result.violations.size() && i < 40; ++i) violations += "\n  " + result.violations[i];
  EXPECT_TRUE(result.violations.empty()) << result.violations.size() << " violations by the real passes:" << violations;
}

}  // namespace
}  // namespace passcheck
