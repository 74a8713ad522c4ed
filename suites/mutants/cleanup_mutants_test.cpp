// Mutation score of the cleanup passes beyond the historical bugs: every generated
// cleanup mutant (a guard disabled, a rule widened) is caught by the generic pass
// properties (check_pass_properties: the pipeline gate, idempotence, text identity,
// bit-for-bit results) on generated cleanup situations, within a bounded campaign
// from a fixed seed, with the real pass passing every case it is caught on. No
// hand-written graph is involved. The cases-to-first-failure of each mutant is printed
// (and recorded as a test property), so a generator change that makes a mutant harder
// to find shows up as a number that grows.
#include "framework/check/repro.h"
#include "generators/cleanup_situations.h"
#include "generators/coverage_campaign.h"
#include "suites/mutants/cleanup_mutants.h"

#include <gtest/gtest.h>

#include <iostream>

namespace passcheck {
namespace {

constexpr int64_t kMaxCases = 400;
constexpr uint64_t kSeed = 7919;

TEST(CleanupMutants, EveryDeclaredDecisionHasAMutantOrAnArgument) {
  check::PassRegistry real;
  check::register_builtin_passes(real);
  for (const std::string& pass : mutants::cleanup_pass_names()) {
    const check::PassInfo& info = real.get(pass).info;
    EXPECT_FALSE(info.rules.empty()) << pass << " declares no rule";
    size_t kept = 0, excluded = 0;
    for (const auto& m : mutants::cleanup_mutants()) kept += m.replaces == pass;
    for (const auto& e : mutants::cleanup_mutant_exclusions()) {
      if (e.pass != pass) continue;
      ++excluded;
      EXPECT_FALSE(e.why.empty());
      EXPECT_TRUE(e.kind == "guard" ? info.declares_guard(e.decision) : info.declares_rule(e.decision))
          << "exclusion of an undeclared decision " << e.pass << " " << e.decision;
    }
    EXPECT_EQ(kept + excluded, info.rules.size() + info.guards.size()) << pass;
  }
  for (const auto& m : mutants::cleanup_mutants()) EXPECT_TRUE(mutants::registry_with_mutants().contains(m.pass)) << m.pass;
}

TEST(CleanupMutants, EachIsCaughtByTheGenericPropertiesOnGeneratedCases) {
  const check::PassRegistry& registry = mutants::registry_with_mutants();
  int64_t total_cases = 0;
  for (const mutants::MutantInfo& m : mutants::cleanup_mutants()) {
    int64_t found_at = -1;
    std::string first_violation, description;
    for (int64_t i = 0; i < kMaxCases && found_at < 0; ++i) {
      gen::SituationCase c = gen::generate_cleanup_situation(gen::case_seed(kSeed, i));
      ++total_cases;
      check::PassPropertyReport mutant = check::check_case(*c.graph, m.pass, c.input_seed, c.int_high, registry);
      if (mutant.violations.empty()) continue;
      // Differential: the case counts only when the real pass holds on it.
      check::PassPropertyReport real = check::check_case(*c.graph, m.replaces, c.input_seed, c.int_high, registry);
      if (!real.violations.empty()) {
        ADD_FAILURE() << m.replaces << " itself fails case " << i << ": " << real.violations.front();
        continue;
      }
      found_at = i;
      first_violation = mutant.violations.front();
      description = c.description;
    }
    std::cout << m.pass << ": " << (found_at < 0 ? "NOT CAUGHT" : "caught") << " after "
              << (found_at < 0 ? kMaxCases : found_at + 1) << " cases" << (found_at < 0 ? "" : ": " + first_violation)
              << "\n";
    ::testing::Test::RecordProperty(m.pass, static_cast<int>(found_at < 0 ? -1 : found_at + 1));
    EXPECT_GE(found_at, 0) << m.pass << " (" << m.description << ") survived " << kMaxCases
                           << " generated cleanup situations";
  }
  std::cout << mutants::cleanup_mutants().size() << " cleanup mutants, " << total_cases << " cases run\n";
}

}  // namespace
}  // namespace passcheck
