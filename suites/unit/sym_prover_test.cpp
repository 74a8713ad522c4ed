// Unit tests of the claim prover (framework/sym/prover.h): proofs that need the symbols'
// ranges and multiples, refutations with their exact counterexamples, Python's floordiv
// and mod for negative operands and divisors, division by zero, undeclared and
// inadmissible symbols, nonlinear claims, timeouts, and the report format. The one
// verdict that must never be wrong is "proved": a pass that relies on a false claim
// corrupts shapes for the values nobody traced.
#include "framework/sym/prover.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

namespace passcheck::sym {
namespace {

Expr num(int64_t value) { return Expr::constant(value); }

Claim claim_that(const Expr& condition) {
  return Claim{"guard", "test", "%x", "the test's claim", condition};
}

Claim claim_that(const std::string& condition) { return claim_that(parse(condition)); }

bool admissible(const Symbol& s, int64_t value) {
  return value >= s.min && value <= s.max && value % s.multiple_of == 0;
}

// The verdict, with the result's own explanation when the test fails.
::testing::AssertionResult has_verdict(const ClaimResult& r, Verdict expected) {
  if (r.verdict == expected) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected " << to_string(expected) << ", got " << r.format();
}

const Symbol kEvenS0{"s0", 2, 64, 64, 2};
const Symbol kAnyS0{"s0", 2, 64, 64, 1};

TEST(SymProver, ProvesSplitHalvesOfAnEvenExtent) {
  const ClaimResult r = prove(claim_that("floordiv(s0, 2) + floordiv(s0, 2) == s0"), {kEvenS0});
  EXPECT_TRUE(has_verdict(r, Verdict::Proved));
  EXPECT_TRUE(r.counterexample.empty());
  EXPECT_EQ(r.reason, "");
  EXPECT_GE(r.seconds, 0.0);
}

TEST(SymProver, RefutesSplitHalvesOfAnyExtentWithAnOddCounterexample) {
  const Claim claim = claim_that("floordiv(s0, 2) + floordiv(s0, 2) == s0");
  const ClaimResult r = prove(claim, {kAnyS0});
  ASSERT_TRUE(has_verdict(r, Verdict::Refuted));
  ASSERT_EQ(r.counterexample.size(), 1u);
  const int64_t value = r.counterexample.at("s0");
  EXPECT_EQ(value % 2, 1);
  EXPECT_TRUE(admissible(kAnyS0, value)) << value;
  EXPECT_EQ(evaluate(claim.condition, r.counterexample), 0);
  EXPECT_EQ(r.reason, "");
}

TEST(SymProver, UsesOnlyAdmissibleValues) {
  // True only because the range excludes 0 and the multiple excludes 5.
  const std::vector<Symbol> symbols{{"s0", 1, 9, 4, 4}};
  EXPECT_TRUE(has_verdict(prove(claim_that("s0 != 0 and s0 != 5"), symbols), Verdict::Proved));
  EXPECT_TRUE(has_verdict(prove(claim_that("s0 == 4 or s0 == 8"), symbols), Verdict::Proved));
  const ClaimResult r = prove(claim_that("s0 == 4"), symbols);
  ASSERT_TRUE(has_verdict(r, Verdict::Refuted));
  EXPECT_EQ(r.counterexample, (std::map<std::string, int64_t>{{"s0", 8}}));
}

TEST(SymProver, CounterexampleCoversEveryFreeSymbol) {
  const std::vector<Symbol> symbols{{"s0", 1, 10, 1, 1}, {"s1", 1, 10, 1, 1}, {"s2", 1, 10, 1, 1}};
  const ClaimResult r = prove(claim_that("s0 + s1 < 20"), symbols);
  ASSERT_TRUE(has_verdict(r, Verdict::Refuted));
  EXPECT_EQ(r.counterexample, (std::map<std::string, int64_t>{{"s0", 10}, {"s1", 10}}));
}

TEST(SymProver, FloordivAndModRoundLikePythonForNegativeNumerators) {
  const std::vector<Symbol> symbols{{"s0", -20, 20, 0, 1}};
  // With truncating division, s0 = -3 would give 2*(-1) = -2 > -3.
  EXPECT_TRUE(has_verdict(prove(claim_that("2*floordiv(s0, 2) <= s0"), symbols), Verdict::Proved));
  EXPECT_TRUE(has_verdict(prove(claim_that("mod(s0, 3) >= 0 and mod(s0, 3) < 3"), symbols), Verdict::Proved));
  EXPECT_TRUE(has_verdict(prove(claim_that("3*floordiv(s0, 3) + mod(s0, 3) == s0"), symbols), Verdict::Proved));
  const ClaimResult r = prove(claim_that("floordiv(s0, 2) >= -5"), symbols);
  ASSERT_TRUE(has_verdict(r, Verdict::Refuted));
  EXPECT_LE(r.counterexample.at("s0"), -11);
}

TEST(SymProver, FloordivAndModRoundLikePythonForNegativeDivisors) {
  const std::vector<Symbol> symbols{{"s0", -20, 20, 0, 1}, {"s1", -4, -1, -1, 1}};
  EXPECT_TRUE(has_verdict(prove(claim_that("mod(s0, s1) <= 0 and mod(s0, s1) > s1"), symbols), Verdict::Proved));
  EXPECT_TRUE(
      has_verdict(prove(claim_that("s1*floordiv(s0, s1) + mod(s0, s1) == s0"), symbols), Verdict::Proved));
  EXPECT_TRUE(has_verdict(prove(claim_that("mod(s0, -3) <= 0"), symbols), Verdict::Proved));
  EXPECT_TRUE(has_verdict(prove(claim_that("floordiv(s0, -2) == floordiv(-s0, 2)"), symbols), Verdict::Proved));
  // floordiv(7, -2) == -4, where truncation gives -3.
  const ClaimResult r = prove(claim_that("floordiv(s0, s1) >= -3"), symbols);
  ASSERT_TRUE(has_verdict(r, Verdict::Refuted));
  EXPECT_EQ(evaluate(r.claim.condition, r.counterexample), 0);
}

TEST(SymProver, ADivisorThatCanBeZeroRefutesTheClaim) {
  const Claim claim = claim_that("floordiv(10, s1) >= 0");
  const ClaimResult r = prove(claim, {{"s1", 0, 5, 1, 1}});
  ASSERT_TRUE(has_verdict(r, Verdict::Refuted));
  EXPECT_EQ(r.counterexample, (std::map<std::string, int64_t>{{"s1", 0}}));
  EXPECT_EQ(r.reason, "division by zero: s1 is 0");
  EXPECT_TRUE(has_verdict(prove(claim, {{"s1", 1, 5, 1, 1}}), Verdict::Proved));
  // Even a guard does not help: the operands of `and` are all evaluated.
  EXPECT_TRUE(has_verdict(prove(claim_that("s1 == 0 or mod(7, s1) < 5"), {{"s1", 0, 5, 1, 1}}), Verdict::Refuted));
}

TEST(SymProver, ALiteralDivisionByZeroIsRefuted) {
  const ClaimResult r = prove(claim_that(eq(floordiv(Expr::symbol("s0"), num(0)), num(0))), {kAnyS0});
  ASSERT_TRUE(has_verdict(r, Verdict::Refuted));
  EXPECT_EQ(r.reason, "division by zero: 0 is 0");
}

TEST(SymProver, DecidesNonlinearClaimsOverBoundedRanges) {
  const std::vector<Symbol> symbols{{"s0", 1, 100, 8, 1}, {"s1", 1, 100, 8, 1}};
  EXPECT_TRUE(has_verdict(prove(claim_that("s0*s1 >= s0"), symbols), Verdict::Proved));
  EXPECT_TRUE(has_verdict(prove(claim_that("floordiv(s0*s1, s1) == s0"), symbols), Verdict::Proved));
  const ClaimResult r = prove(claim_that("s0*s0 != 49"), symbols);
  ASSERT_TRUE(has_verdict(r, Verdict::Refuted));
  EXPECT_EQ(r.counterexample, (std::map<std::string, int64_t>{{"s0", 7}}));
}

TEST(SymProver, TimeoutNeverGivesAWrongVerdict) {
  const std::vector<Symbol> symbols{
      {"x", 1, 1000000, 1, 1}, {"y", 1, 1000000, 1, 1}, {"z", 1, 1000000, 1, 1}};
  ProveOptions quick;
  quick.timeout_ms = 1;
  // False (x = y = z = 1): refuted with a real counterexample, or unknown.
  const ClaimResult false_claim = prove(claim_that("x*x*x + y*y*y == z*z*z"), symbols, quick);
  EXPECT_NE(false_claim.verdict, Verdict::Proved) << false_claim.format();
  if (false_claim.verdict == Verdict::Refuted) {
    EXPECT_EQ(evaluate(false_claim.claim.condition, false_claim.counterexample), 0);
  } else {
    EXPECT_FALSE(false_claim.reason.empty());
  }
  // True (Fermat, n = 3) and beyond Z3 in a millisecond: unknown, never refuted.
  const ClaimResult true_claim = prove(claim_that("x*x*x + y*y*y != z*z*z"), symbols, quick);
  EXPECT_NE(true_claim.verdict, Verdict::Refuted) << true_claim.format();
  if (true_claim.verdict == Verdict::Unknown) {
    EXPECT_EQ(true_claim.reason.rfind("z3: ", 0), 0u) << true_claim.reason;
  }
}

TEST(SymProver, UndeclaredSymbolsMakeAClaimUnknown) {
  const ClaimResult r = prove(claim_that("s1 >= 1"), {kAnyS0});
  EXPECT_TRUE(has_verdict(r, Verdict::Unknown));
  EXPECT_EQ(r.reason, "undeclared symbol s1");
  EXPECT_EQ(prove(claim_that("s1 + s2 >= s0"), {kAnyS0}).reason, "undeclared symbols s1, s2");
}

TEST(SymProver, ANonBooleanConditionIsUnknown) {
  const ClaimResult r = prove(claim_that(Expr::symbol("s0") + 1), {kAnyS0});
  EXPECT_TRUE(has_verdict(r, Verdict::Unknown));
  EXPECT_EQ(r.reason, "condition is not boolean: s0 + 1");
}

TEST(SymProver, SymbolsWithoutAdmissibleValuesMakeAClaimUnknown) {
  EXPECT_EQ(prove(claim_that("s0 < 0"), {{"s0", 5, 2, 5, 1}}).reason,
            "symbol s0 in [5, 2] hint 5 has no admissible value");
  EXPECT_EQ(prove(claim_that("s0 < 0"), {{"s0", 5, 7, 5, 4}}).reason,
            "symbol s0 in [5, 7] hint 5 multiple_of 4 has no admissible value");
  EXPECT_EQ(prove(claim_that("s0 < 0"), {{"s0", 1, 7, 5, 0}}).reason, "symbol s0 has invalid multiple_of 0");
  EXPECT_TRUE(has_verdict(prove(claim_that("s0 < 0"), {{"s0", -7, -5, -6, 3}}), Verdict::Proved));
}

TEST(SymProver, AnUnrelatedEmptyDeclarationDoesNotProveEverything) {
  const ClaimResult r = prove(claim_that("s0 < 0"), {kAnyS0, {"s1", 5, 2, 5, 1}});
  EXPECT_TRUE(has_verdict(r, Verdict::Refuted));
}

TEST(SymProver, ConflictingDeclarationsMakeAClaimUnknown) {
  EXPECT_EQ(prove(claim_that("s0 > 0"), {kAnyS0, kEvenS0}).reason, "conflicting declarations of s0");
  EXPECT_TRUE(has_verdict(prove(claim_that("s0 > 0"), {kAnyS0, kAnyS0}), Verdict::Proved));
}

TEST(SymProver, ConstantConditions) {
  EXPECT_TRUE(has_verdict(prove(claim_that(Expr::boolean(true)), {}), Verdict::Proved));
  const ClaimResult r = prove(claim_that(Expr::boolean(false)), {});
  EXPECT_TRUE(has_verdict(r, Verdict::Refuted));
  EXPECT_TRUE(r.counterexample.empty());
}

TEST(SymProver, ClaimResultFormat) {
  ClaimResult r;
  r.claim = Claim{"cat_extent", "chunk", "%x", "chunks restore the extent", parse("s0 == 2*floordiv(s0, 2)")};
  r.verdict = Verdict::Proved;
  EXPECT_EQ(r.format(), "proved: cat_extent of %x (chunk): chunks restore the extent [s0 == 2*floordiv(s0, 2)]");
  r.verdict = Verdict::Refuted;
  r.counterexample = {{"s0", 3}, {"s1", 4}};
  EXPECT_EQ(r.format(),
            "refuted: cat_extent of %x (chunk): chunks restore the extent [s0 == 2*floordiv(s0, 2)] "
            "counterexample s0=3, s1=4");
  r.verdict = Verdict::Unknown;
  r.counterexample.clear();
  r.reason = "undeclared symbol s1";
  EXPECT_EQ(r.format(),
            "unknown: cat_extent of %x (chunk): chunks restore the extent [s0 == 2*floordiv(s0, 2)] "
            "(undeclared symbol s1)");
  r.claim.subject = "";
  r.claim.pass = "";
  r.claim.description = "";
  EXPECT_EQ(r.format(), "unknown: cat_extent: [s0 == 2*floordiv(s0, 2)] (undeclared symbol s1)");
}

TEST(SymProver, ProofReportFormat) {
  ProofReport report;
  const auto add = [&report](Verdict verdict, double seconds, const std::string& reason) {
    ClaimResult r;
    r.claim = claim_that("s0 > 0");
    r.verdict = verdict;
    r.seconds = seconds;
    r.reason = reason;
    if (verdict == Verdict::Refuted) r.counterexample = {{"s0", 0}};
    report.results.push_back(r);
  };
  add(Verdict::Proved, 0.002, "");
  add(Verdict::Refuted, 0.0005, "");
  add(Verdict::Proved, 0.001, "");
  add(Verdict::Unknown, 0.0125, "z3: timeout");
  EXPECT_EQ(report.count(Verdict::Proved), 2u);
  EXPECT_EQ(report.count(Verdict::Refuted), 1u);
  EXPECT_EQ(report.count(Verdict::Unknown), 1u);
  EXPECT_FALSE(report.all_proved());
  EXPECT_NEAR(report.total_seconds(), 0.016, 1e-12);
  EXPECT_DOUBLE_EQ(report.max_seconds(), 0.0125);
  EXPECT_EQ(report.format(),
            "refuted: guard of %x (test): the test's claim [s0 > 0] counterexample s0=0\n"
            "unknown: guard of %x (test): the test's claim [s0 > 0] (z3: timeout)\n"
            "4 claims: 2 proved, 1 refuted, 1 unknown in 16.0 ms (max 12.5 ms per claim)");
}

TEST(SymProver, ProveAllKeepsTheClaimsOrder) {
  const std::vector<Claim> claims{claim_that("s0 >= 2"), claim_that("s0 > 2"), claim_that("s9 > 0")};
  const ProofReport report = prove_all(claims, {kEvenS0});
  ASSERT_EQ(report.results.size(), 3u);
  EXPECT_EQ(report.results[0].claim, claims[0]);
  EXPECT_TRUE(has_verdict(report.results[0], Verdict::Proved));
  EXPECT_TRUE(has_verdict(report.results[1], Verdict::Refuted));
  EXPECT_EQ(report.results[1].counterexample.at("s0"), 2);
  EXPECT_TRUE(has_verdict(report.results[2], Verdict::Unknown));
  EXPECT_FALSE(report.all_proved());
  EXPECT_TRUE(prove_all({claims[0]}, {kEvenS0}).all_proved());
  EXPECT_TRUE(ProofReport{}.all_proved());
  EXPECT_EQ(ProofReport{}.format(), "0 claims: 0 proved, 0 refuted, 0 unknown in 0.0 ms (max 0.0 ms per claim)");
}

TEST(SymProver, VerdictNamesAndZ3Version) {
  EXPECT_STREQ(to_string(Verdict::Proved), "proved");
  EXPECT_STREQ(to_string(Verdict::Refuted), "refuted");
  EXPECT_STREQ(to_string(Verdict::Unknown), "unknown");
  EXPECT_TRUE(std::regex_match(z3_version(), std::regex(R"(\d+\.\d+\.\d+)"))) << z3_version();
}

TEST(SymProver, IdenticalClaimsAreProvedOnceAndKeepTheirOwnSubjects) {
  Claim first = claim_that("floordiv(s0, 2) + floordiv(s0, 2) == s0");
  Claim again = first;
  again.subject = "%y";
  Claim other_kind = first;
  other_kind.kind = "split_halves";
  Claim refuted = claim_that("s0 == 4");
  Claim refuted_again = refuted;
  refuted_again.subject = "%z";
  const ProofReport report = prove_all({first, again, other_kind, refuted, refuted_again}, {kEvenS0});
  ASSERT_EQ(report.results.size(), 5u);
  EXPECT_EQ(report.duplicates_merged, 2u);  // `again` and `refuted_again`; another kind is another question
  EXPECT_TRUE(has_verdict(report.results[1], Verdict::Proved));
  EXPECT_EQ(report.results[1].claim.subject, "%y");
  EXPECT_EQ(report.results[1].seconds, 0.0);
  EXPECT_TRUE(has_verdict(report.results[4], Verdict::Refuted));
  EXPECT_EQ(report.results[4].claim.subject, "%z");
  EXPECT_EQ(report.results[4].counterexample, report.results[3].counterexample);
  EXPECT_NE(report.format().find("5 claims: 3 proved, 2 refuted"), std::string::npos) << report.format();
  EXPECT_NE(report.format().find("; 2 identical claims proved once"), std::string::npos) << report.format();
  EXPECT_EQ(prove_all({first, other_kind}, {kEvenS0}).format().find("identical"), std::string::npos);
}

}  // namespace
}  // namespace passcheck::sym
