// Property of fuse-chained-allgathers over random chained all_gathers
// (generators/chained_allgathers.h): every claim the pass recorded is proved by Z3, and
// the fused graph computes the same bits as the original on every rank of the sim mesh.
// The property must find the identity mutants (bug 7: any chain with a reorder taken as
// the identity; bug 13: upstream's shape-and-stride check) and the swapped-groups mutant
// (bug 6) within a bounded number of seeded cases.
#include "generators/chained_allgathers.h"
#include "suites/mutants/mutants.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <iostream>

namespace passcheck {
namespace {

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

RC_GTEST_PROP(FuseAllgathersProperty, RecordedClaimsAreProvedAndFusionIsBitwiseOnSim, ()) {
  const uint64_t seed = *rc::gen::inRange<uint64_t>(0, uint64_t{1} << 40);
  const gen::ChainedGatherCase c = gen::generate_chained_allgathers(seed);
  const std::vector<std::string> violations =
      gen::chained_allgathers_violations(c, "fuse-chained-allgathers", check::PassRegistry::global());
  if (!violations.empty()) RC_FAIL("seed " + std::to_string(seed) + ", " + c.description + ":\n" + joined(violations) + c.graph_text);
}

TEST(FuseAllgathersProperty, TheGeneratorFusesAndRefusesBoth) {
  // A property that never fuses checks nothing: count both outcomes over fixed seeds.
  int fused = 0, refused = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const gen::ChainedGatherCase c = gen::generate_chained_allgathers(seed);
    bool changed = false;
    const std::vector<std::string> violations =
        gen::chained_allgathers_violations(c, "fuse-chained-allgathers", check::PassRegistry::global(), &changed);
    EXPECT_TRUE(violations.empty()) << "seed " << seed << ", " << c.description << ":\n" << joined(violations) << c.graph_text;
    (changed ? fused : refused)++;
  }
  std::cout << "  60 cases: " << fused << " fused, " << refused << " refused\n";
  EXPECT_GE(fused, 10);
  EXPECT_GE(refused, 10);
}

// The first seed (of 200) whose case the mutant fails with a violation containing
// `needle` ("claim refuted": the recorded claim; "rank ": running the fused graph on sim).
void expect_found(const std::string& mutant, const std::string& needle) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const gen::ChainedGatherCase c = gen::generate_chained_allgathers(seed);
    const std::string violations = joined(gen::chained_allgathers_violations(c, mutant, mutants::registry_with_mutants()));
    const size_t at = violations.find(needle);
    if (at == std::string::npos) continue;
    std::cout << "  " << mutant << " caught by '" << needle << "' at case " << seed << " (" << c.description
              << "): " << violations.substr(at, 240) << "\n";
    return;
  }
  ADD_FAILURE() << mutant << " survived 200 cases of '" << needle << "'";
}

TEST(FuseAllgathersProperty, FindsTheSkippedProofMutantByClaimAndByBits) {
  expect_found("mutant-fuse-chained-allgathers-skips-identity-proof", "claim refuted: view_identity");
  expect_found("mutant-fuse-chained-allgathers-skips-identity-proof", "rank ");
}

TEST(FuseAllgathersProperty, FindsTheShapeAndStrideMutantByClaimAndByBits) {
  expect_found("mutant-fuse-chained-allgathers-shape-stride-identity", "claim refuted: view_identity");
  expect_found("mutant-fuse-chained-allgathers-shape-stride-identity", "rank ");
}

TEST(FuseAllgathersProperty, FindsTheSwappedGroupsMutantByBits) {
  expect_found("mutant-fuse-chained-allgathers-swapped-groups", "elements differ");
}

}  // namespace
}  // namespace passcheck
