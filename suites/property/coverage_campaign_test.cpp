// The default coverage campaign (generators/coverage_campaign.h) reaches every rule and
// every guard of every registered pass that declares any, and the real passes hold the
// generic properties on all its cases. An unreached decision is a gap in the
// generators: the message names it and the table shows what was reached.
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
  for (const std::string& u : result.coverage.unreached(registry, passes)) unreached += "\n  " + u;
  EXPECT_TRUE(unreached.empty()) << "declared decisions no generated case reaches (a gap in the generators):"
                                 << unreached;
  std::string violations;
  for (size_t i = 0; i < result.violations.size() && i < 40; ++i) violations += "\n  " + result.violations[i];
  EXPECT_TRUE(result.violations.empty()) << result.violations.size() << " violations by the real passes:" << violations;
}

}  // namespace
}  // namespace passcheck
