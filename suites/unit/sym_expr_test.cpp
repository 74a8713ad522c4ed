// Unit tests of symbolic integer expressions (framework/ir/sym_expr.h): every canonicalization
// rule (sums, products, floordiv and mod with Python's rounding of negative numbers,
// min/max, comparisons, connectives), the printed form, the parser and each of its
// errors (message and column), evaluation, substitution, symbol declarations, and the
// hash/order contract. Passes compare expressions structurally, so a rule that leaves two
// spellings of the same value apart makes a sound rewrite look unsound; a rule that is
// wrong for negative values makes an unsound one look sound.
#include "framework/ir/sym_expr.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

namespace passcheck::sym {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

Expr c(int64_t value) { return Expr::constant(value); }

class SymExpr : public ::testing::Test {
 protected:
  const Expr s = Expr::symbol("s0");
  const Expr t = Expr::symbol("s1");
  const Expr u = Expr::symbol("s2");
};

// Every test expression must also survive printing and parsing.
std::string text(const Expr& e) {
  const std::string printed = e.to_string();
  EXPECT_EQ(parse(printed), e) << printed;
  return printed;
}

// ---------------------------------------------------------------------------------------
// Leaves and accessors

TEST_F(SymExpr, DefaultIsZero) {
  EXPECT_EQ(Expr(), c(0));
  EXPECT_EQ(Expr().as_constant(), 0);
  EXPECT_EQ(Expr().kind(), Expr::Kind::Constant);
}

TEST_F(SymExpr, LeafAccessors) {
  EXPECT_TRUE(c(5).is_constant());
  EXPECT_EQ(c(5).constant_value(), 5);
  EXPECT_EQ(c(5).as_bool(), std::nullopt);
  EXPECT_EQ(Expr::boolean(true).as_bool(), true);
  EXPECT_EQ(Expr::boolean(false).constant_value(), 0);
  EXPECT_EQ(Expr::boolean(true).as_constant(), std::nullopt);
  EXPECT_TRUE(Expr::boolean(true).is_boolean());
  EXPECT_TRUE(s.is_symbol());
  EXPECT_EQ(s.symbol_name(), "s0");
  EXPECT_EQ(s.as_constant(), std::nullopt);
  EXPECT_TRUE(s.operands().empty());
  EXPECT_THROW(c(1).symbol_name(), std::logic_error);
  EXPECT_THROW(s.constant_value(), std::logic_error);
}

TEST_F(SymExpr, SymbolNamesMustParseBack) {
  EXPECT_NO_THROW(Expr::symbol("_batch_2"));
  for (const char* bad : {"", "2s", "s-1", "a b", "and", "not", "True", "min", "floordiv"})
    EXPECT_THROW(Expr::symbol(bad), std::invalid_argument) << bad;
}

TEST_F(SymExpr, FreeSymbols) {
  const Expr e = floordiv(s * t, c(2)) + 1;
  EXPECT_EQ(e.free_symbols(), (std::set<std::string>{"s0", "s1"}));
  EXPECT_TRUE(e.contains_symbol("s1"));
  EXPECT_FALSE(e.contains_symbol("s2"));
  EXPECT_TRUE(e.has_symbols());
  EXPECT_FALSE((c(2) * c(3)).has_symbols());
  EXPECT_TRUE((s - s).free_symbols().empty());
}

// ---------------------------------------------------------------------------------------
// Sums and products

TEST_F(SymExpr, SumsMergeLikeTermsAndFoldConstants) {
  EXPECT_EQ(text((s + 1) + (s + 2)), "2*s0 + 3");
  EXPECT_EQ(2 * s + s, 3 * s);
  EXPECT_EQ(s - s, c(0));
  EXPECT_EQ(text(s - c(3)), "s0 - 3");
  EXPECT_EQ(text(c(3) - s), "-s0 + 3");
  EXPECT_EQ(c(2) + c(3), c(5));
  EXPECT_EQ(s + 0, s);
}

TEST_F(SymExpr, SumsAreFlatAndOrdered) {
  const Expr a = (u + t) + s;
  const Expr b = s + (t + u);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.kind(), Expr::Kind::Add);
  EXPECT_EQ(a.operands().size(), 3u);
  EXPECT_EQ(text(a), "s0 + s1 + s2");
  // Higher degree first, the constant last.
  EXPECT_EQ(text(c(1) + s + s * t), "s0*s1 + s0 + 1");
}

TEST_F(SymExpr, ProductsHaveOneCoefficientAndOrderedFactors) {
  EXPECT_EQ(text(c(2) * s * c(3)), "6*s0");
  EXPECT_EQ(t * s, s * t);
  EXPECT_EQ(text(t * s), "s0*s1");
  EXPECT_EQ(text(s * s), "s0*s0");
  EXPECT_EQ(c(0) * s, c(0));
  EXPECT_EQ(c(1) * s, s);
  const Expr p = c(-3) * t * s;
  EXPECT_EQ(p.kind(), Expr::Kind::Mul);
  ASSERT_EQ(p.operands().size(), 3u);
  EXPECT_EQ(p.operands()[0], c(-3));
  EXPECT_EQ(p.operands()[1], s);
  EXPECT_EQ(text(p), "-3*s0*s1");
  EXPECT_EQ(text(-s * t), "-s0*s1");
}

TEST_F(SymExpr, ProductsDistributeOverSums) {
  EXPECT_EQ(text(2 * (s + 1)), "2*s0 + 2");
  EXPECT_EQ(2 * (s + 1), 2 * s + 2);
  EXPECT_EQ(text(s * (t + 1)), "s0*s1 + s0");
  EXPECT_EQ((s + 1) * (s - c(1)), s * s - c(1));
  EXPECT_EQ(-(s - t), t - s);
}

TEST_F(SymExpr, ArithmeticOverflowThrowsInsteadOfWrapping) {
  EXPECT_THROW(c(kMax) + 1, EvalError);
  EXPECT_THROW(c(kMax) * c(2), EvalError);
  EXPECT_THROW(-c(kMin), EvalError);
  EXPECT_THROW(c(kMax) * s + c(kMax) * s, EvalError);
  EXPECT_THROW(floordiv(c(kMin), c(-1)), EvalError);
}

// ---------------------------------------------------------------------------------------
// floordiv and mod

TEST_F(SymExpr, FloordivOfConstantsRoundsTowardNegativeInfinity) {
  EXPECT_EQ(floordiv(c(7), c(2)), c(3));
  EXPECT_EQ(floordiv(c(-7), c(2)), c(-4));
  EXPECT_EQ(floordiv(c(7), c(-2)), c(-4));
  EXPECT_EQ(floordiv(c(-7), c(-2)), c(3));
  EXPECT_EQ(floordiv(c(-8), c(2)), c(-4));
  EXPECT_EQ(floordiv(c(0), c(-3)), c(0));
  EXPECT_EQ(floordiv(c(kMin), c(2)), c(kMin / 2));
}

TEST_F(SymExpr, ModOfConstantsHasTheDivisorsSign) {
  EXPECT_EQ(mod(c(7), c(2)), c(1));
  EXPECT_EQ(mod(c(-7), c(2)), c(1));
  EXPECT_EQ(mod(c(7), c(-2)), c(-1));
  EXPECT_EQ(mod(c(-7), c(-2)), c(-1));
  EXPECT_EQ(mod(c(-6), c(3)), c(0));
  EXPECT_EQ(mod(c(kMin), c(-1)), c(0));
  EXPECT_EQ(mod(c(kMin), c(kMax)), c(kMax - 1));
}

TEST_F(SymExpr, FloordivByOneOrMinusOne) {
  EXPECT_EQ(floordiv(s, c(1)), s);
  EXPECT_EQ(floordiv(s + t, c(-1)), -s - t);
  EXPECT_EQ(mod(s * t, c(1)), c(0));
  EXPECT_EQ(mod(s, c(-1)), c(0));
}

TEST_F(SymExpr, FloordivTakesOutTermsTheDivisorDivides) {
  EXPECT_EQ(text(floordiv(4 * s, c(2))), "2*s0");
  EXPECT_EQ(text(floordiv(2 * s + 5, c(2))), "s0 + 2");
  // floor(-5 / 2) == -3, not -2.
  EXPECT_EQ(text(floordiv(2 * s + c(-5), c(2))), "s0 - 3");
  EXPECT_EQ(text(floordiv(4 * s + t, c(2))), "2*s0 + floordiv(s1, 2)");
  EXPECT_EQ(text(floordiv(s + 4, c(2))), "floordiv(s0, 2) + 2");
  // Nothing divisible: stays whole.
  EXPECT_EQ(text(floordiv(3 * s + 5, c(2))), "floordiv(3*s0 + 5, 2)");
  EXPECT_EQ(text(floordiv(s + c(-1), c(2))), "floordiv(s0 - 1, 2)");
}

TEST_F(SymExpr, FloordivCancelsCommonFactors) {
  EXPECT_EQ(text(floordiv(2 * s + 2, c(4))), "floordiv(s0 + 1, 2)");
  EXPECT_EQ(text(floordiv(4 * s + 2 * t + 6, c(4))), "s0 + floordiv(s1 + 3, 2)");
  EXPECT_EQ(text(floordiv(6 * s, c(4))), "floordiv(3*s0, 2)");
}

TEST_F(SymExpr, NestedFloordivCombines) {
  EXPECT_EQ(text(floordiv(floordiv(s, c(2)), c(3))), "floordiv(s0, 6)");
  EXPECT_EQ(text(floordiv(floordiv(s, c(2)) + 4, c(4))), "floordiv(s0, 8) + 1");
  EXPECT_EQ(floordiv(2 * floordiv(s, c(3)), c(4)), floordiv(s, c(6)));
  // Only positive constant divisors combine.
  EXPECT_EQ(text(floordiv(floordiv(s, t), c(2))), "floordiv(floordiv(s0, s1), 2)");
  EXPECT_EQ(text(floordiv(floordiv(s, c(-2)), c(2))), "floordiv(floordiv(s0, -2), 2)");
  // The combined divisor would overflow: stays nested.
  EXPECT_EQ(text(floordiv(floordiv(s, c(kMax)), c(2))), "floordiv(floordiv(s0, 9223372036854775807), 2)");
}

TEST_F(SymExpr, FloordivOfASmallerModIsZero) {
  EXPECT_EQ(floordiv(mod(s, c(3)), c(4)), c(0));
  EXPECT_EQ(floordiv(mod(s, c(3)), c(3)), c(0));
  EXPECT_EQ(text(floordiv(mod(s, c(5)), c(4))), "floordiv(mod(s0, 5), 4)");
}

TEST_F(SymExpr, ModDropsMultiplesOfTheDivisor) {
  EXPECT_EQ(mod(4 * s, c(2)), c(0));
  EXPECT_EQ(mod(4 * s + 3, c(2)), c(1));
  EXPECT_EQ(mod(4 * s + c(-3), c(2)), c(1));
  EXPECT_EQ(text(mod(s + 3, c(2))), "mod(s0 + 1, 2)");
  EXPECT_EQ(text(mod(s + c(-1), c(2))), "mod(s0 + 1, 2)");
  EXPECT_EQ(mod(-s, c(2)), mod(s, c(2)));
  EXPECT_EQ(text(mod(-s, c(3))), "mod(2*s0, 3)");
  EXPECT_EQ(text(mod(3 * s + 2 * t, c(2))), "mod(s0, 2)");
}

TEST_F(SymExpr, ModTakesOutCommonFactors) {
  EXPECT_EQ(text(mod(2 * s, c(4))), "2*mod(s0, 2)");
  EXPECT_EQ(text(mod(6 * s + 3, c(9))), "3*mod(2*s0 + 1, 3)");
}

TEST_F(SymExpr, NestedModSimplifies) {
  EXPECT_EQ(mod(mod(s, c(6)), c(3)), mod(s, c(3)));
  EXPECT_EQ(mod(mod(s, c(3)), c(5)), mod(s, c(3)));
  EXPECT_EQ(mod(mod(s, c(3)), c(3)), mod(s, c(3)));
  EXPECT_EQ(text(mod(mod(s, c(5)), c(3))), "mod(mod(s0, 5), 3)");
}

TEST_F(SymExpr, DivisionByZeroStaysForEvaluateToReport) {
  EXPECT_EQ(text(floordiv(s, c(0))), "floordiv(s0, 0)");
  EXPECT_EQ(text(floordiv(c(5), c(0))), "floordiv(5, 0)");
  EXPECT_EQ(text(mod(c(5), c(0))), "mod(5, 0)");
  EXPECT_THROW(evaluate(floordiv(c(5), c(0)), {}), EvalError);
  EXPECT_THROW(evaluate(mod(s, c(0)), {{"s0", 3}}), EvalError);
}

TEST_F(SymExpr, SymbolicDivisorsAndNegativeConstantDivisorsOnlyFold) {
  EXPECT_EQ(text(floordiv(s, t)), "floordiv(s0, s1)");
  EXPECT_EQ(text(mod(4 * s, t)), "mod(4*s0, s1)");
  EXPECT_EQ(text(floordiv(4 * s, c(-2))), "floordiv(4*s0, -2)");
  EXPECT_EQ(text(mod(s, c(-3))), "mod(s0, -3)");
  // Not folded, as s0 may be 0.
  EXPECT_EQ(text(floordiv(s, s)), "floordiv(s0, s0)");
}

// ---------------------------------------------------------------------------------------
// min and max

TEST_F(SymExpr, MinMaxFoldWhenTheOrderIsKnown) {
  EXPECT_EQ(min(c(3), c(-2)), c(-2));
  EXPECT_EQ(max(c(3), c(-2)), c(3));
  EXPECT_EQ(min(c(kMin), c(kMax)), c(kMin));
  EXPECT_EQ(max(c(kMin), c(kMax)), c(kMax));
  EXPECT_EQ(min(s, s), s);
  EXPECT_EQ(max(s * t, t * s), s * t);
  EXPECT_EQ(min(s + 1, s), s);
  EXPECT_EQ(max(s + 1, s), s + 1);
}

TEST_F(SymExpr, MinMaxAreCommutative) {
  EXPECT_EQ(min(s, t), min(t, s));
  EXPECT_EQ(max(s + 1, t), max(t, s + 1));
  EXPECT_EQ(text(min(c(4), s)), "min(s0, 4)");
  EXPECT_EQ(text(max(t, s)), "max(s0, s1)");
  EXPECT_NE(min(s, t), max(s, t));
}

// ---------------------------------------------------------------------------------------
// Comparisons

TEST_F(SymExpr, ComparisonsFoldWhenTheDifferenceIsConstant) {
  EXPECT_EQ(eq(s, s), Expr::boolean(true));
  EXPECT_EQ(eq(2 * s, s + s), Expr::boolean(true));
  EXPECT_EQ(ne(s + 1, s), Expr::boolean(true));
  EXPECT_EQ(lt(s, s + 1), Expr::boolean(true));
  EXPECT_EQ(le(s + 1, s), Expr::boolean(false));
  EXPECT_EQ(gt(c(2), c(1)), Expr::boolean(true));
  EXPECT_EQ(ge(c(1), c(2)), Expr::boolean(false));
  EXPECT_EQ(eq(c(kMax), c(kMin)), Expr::boolean(false));
  EXPECT_EQ(lt(c(kMin), c(kMax)), Expr::boolean(true));
}

TEST_F(SymExpr, ComparisonsPrintTheWayTheyAreUsuallyWritten) {
  EXPECT_EQ(text(lt(s, c(4))), "s0 < 4");
  EXPECT_EQ(text(ge(s, c(2))), "s0 >= 2");
  EXPECT_EQ(text(gt(s, c(-2))), "s0 > -2");
  EXPECT_EQ(text(le(c(0), s)), "s0 >= 0");
  EXPECT_EQ(text(eq(mod(s, c(2)), c(0))), "mod(s0, 2) == 0");
  EXPECT_EQ(text(ne(s, t)), "s0 != s1");
  EXPECT_EQ(text(lt(s + t, c(0))), "s0 + s1 < 0");
  EXPECT_EQ(text(eq(floordiv(s, c(2)) + floordiv(s, c(2)), s)), "s0 == 2*floordiv(s0, 2)");
}

TEST_F(SymExpr, ComparisonsMoveTermsAndConstantsToOneCanonicalSide) {
  EXPECT_EQ(gt(s, t), lt(t, s));
  EXPECT_EQ(ge(s, t), le(t, s));
  EXPECT_EQ(lt(s + 2, t + 5), lt(s, t + 3));
  EXPECT_EQ(text(lt(s + 5, t + 2)), "s0 + 3 < s1");
  EXPECT_EQ(lt(s - t, c(0)), lt(s, t));
  EXPECT_NE(lt(s, t), lt(t, s));
}

TEST_F(SymExpr, EqualitiesAreSymmetric) {
  EXPECT_EQ(eq(t, s), eq(s, t));
  EXPECT_EQ(eq(c(4), s), eq(s, c(4)));
  EXPECT_EQ(text(eq(c(4), s)), "s0 == 4");
  EXPECT_EQ(text(eq(-s, c(3))), "s0 == -3");
  EXPECT_EQ(ne(s + 1, t), ne(t - c(1), s));
}

TEST_F(SymExpr, ComparisonsDivideByTheCommonFactor) {
  EXPECT_EQ(text(eq(2 * s, 2 * t + 4)), "s0 == s1 + 2");
  EXPECT_EQ(eq(2 * s, c(3)), Expr::boolean(false));
  EXPECT_EQ(ne(2 * s, c(3)), Expr::boolean(true));
  // Integer solutions are kept: 2*s <= 7 <=> s <= 3 and 2*s < 7 <=> s < 4.
  EXPECT_EQ(le(2 * s, c(7)), le(s, c(3)));
  EXPECT_EQ(lt(2 * s, c(7)), lt(s, c(4)));
  EXPECT_EQ(le(c(-7), 2 * s), le(c(-3), s));
  EXPECT_EQ(lt(c(-7), 2 * s), lt(c(-4), s));
}

TEST_F(SymExpr, ComparisonsNeedIntegers) {
  EXPECT_THROW(eq(lt(s, t), c(1)), std::invalid_argument);
  EXPECT_THROW(lt(s, Expr::boolean(true)), std::invalid_argument);
  EXPECT_THROW(s + lt(s, t), std::invalid_argument);
  EXPECT_THROW(floordiv(lt(s, t), c(2)), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------
// Connectives

TEST_F(SymExpr, AndOrFlattenSortAndDeduplicate) {
  const Expr a = lt(s, c(4));
  const Expr b = lt(t, c(4));
  const Expr d = lt(u, c(4));
  EXPECT_EQ(logical_and({a, logical_and({b, d})}), logical_and({d, b, a}));
  EXPECT_EQ(logical_and({a, b, a}).operands().size(), 2u);
  EXPECT_EQ(logical_or({b, a}), logical_or({a, b}));
  EXPECT_EQ(logical_and({a}), a);
  EXPECT_EQ(logical_or({logical_or({a, b}), d}).operands().size(), 3u);
  EXPECT_EQ(text(logical_and({le(s, c(4)), ge(s, c(2))})), "(s0 >= 2) and (s0 <= 4)");
}

TEST_F(SymExpr, AndOrDropNeutralConstantsAndShortCircuit) {
  const Expr a = lt(s, c(4));
  const Expr yes = Expr::boolean(true);
  const Expr no = Expr::boolean(false);
  EXPECT_EQ(logical_and({yes, a, yes}), a);
  EXPECT_EQ(logical_and({a, no}), no);
  EXPECT_EQ(logical_or({no, a}), a);
  EXPECT_EQ(logical_or({a, yes}), yes);
  EXPECT_EQ(logical_and({}), yes);
  EXPECT_EQ(logical_or({}), no);
}

TEST_F(SymExpr, AndOrOfAComplementFold) {
  const Expr a = lt(s, c(4));
  EXPECT_EQ(logical_and({a, ge(s, c(4)), lt(t, c(1))}), Expr::boolean(false));
  EXPECT_EQ(logical_or({eq(s, t), ne(t, s)}), Expr::boolean(true));
}

TEST_F(SymExpr, NotNegatesComparisonsAndWrapsConnectives) {
  EXPECT_EQ(logical_not(Expr::boolean(true)), Expr::boolean(false));
  EXPECT_EQ(logical_not(lt(s, c(4))), ge(s, c(4)));
  EXPECT_EQ(logical_not(le(s, t)), gt(s, t));
  EXPECT_EQ(logical_not(eq(s, t)), ne(s, t));
  EXPECT_EQ(logical_not(ne(s, t)), eq(s, t));
  const Expr both = logical_and({lt(s, t), lt(t, c(3))});
  const Expr negated = logical_not(both);
  EXPECT_EQ(negated.kind(), Expr::Kind::Not);
  EXPECT_EQ(text(negated), "not ((s0 < s1) and (s1 < 3))");
  EXPECT_EQ(logical_not(negated), both);
  EXPECT_EQ(text(logical_or({negated, eq(u, c(0))})), "(s2 == 0) or (not ((s0 < s1) and (s1 < 3)))");
}

TEST_F(SymExpr, ConnectivesNeedBooleans) {
  EXPECT_THROW(logical_and({s}), std::invalid_argument);
  EXPECT_THROW(logical_or({lt(s, t), c(1)}), std::invalid_argument);
  EXPECT_THROW(logical_not(s), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------
// Printing corner cases

TEST_F(SymExpr, ExtremeCoefficientsPrintParseably) {
  EXPECT_EQ(text(c(kMin)), "-9223372036854775808");
  EXPECT_EQ(text(c(kMin) * s), "-9223372036854775808*s0");
  // INT64_MIN has no positive counterpart to subtract.
  EXPECT_EQ(text(t * t + c(kMin) * s), "s1*s1 + -9223372036854775808*s0");
  EXPECT_EQ(text(s + c(kMin)), "s0 + -9223372036854775808");
  EXPECT_EQ(text(s - c(kMax)), "s0 - 9223372036854775807");
}

TEST_F(SymExpr, BooleanConstantsPrint) {
  EXPECT_EQ(text(Expr::boolean(true)), "True");
  EXPECT_EQ(text(Expr::boolean(false)), "False");
}

// ---------------------------------------------------------------------------------------
// Parsing

TEST_F(SymExpr, ParsesEveryOperator) {
  EXPECT_EQ(parse("2*s0 + 1"), 2 * s + 1);
  EXPECT_EQ(parse("  s0-3 "), s - c(3));
  EXPECT_EQ(parse("-s0"), -s);
  EXPECT_EQ(parse("- -s0"), s);
  EXPECT_EQ(parse("floordiv(s0, 2)"), floordiv(s, c(2)));
  EXPECT_EQ(parse("mod(s0,s1)"), mod(s, t));
  EXPECT_EQ(parse("min(s0, 4)"), min(s, c(4)));
  EXPECT_EQ(parse("max(s0, s1 * 2)"), max(s, 2 * t));
  EXPECT_EQ(parse("s0 == 1"), eq(s, c(1)));
  EXPECT_EQ(parse("s0 != 1"), ne(s, c(1)));
  EXPECT_EQ(parse("s0 < 1"), lt(s, c(1)));
  EXPECT_EQ(parse("s0 <= 1"), le(s, c(1)));
  EXPECT_EQ(parse("s0 > 1"), gt(s, c(1)));
  EXPECT_EQ(parse("s0 >= 1"), ge(s, c(1)));
  EXPECT_EQ(parse("True"), Expr::boolean(true));
  EXPECT_EQ(parse("not False"), Expr::boolean(true));
  EXPECT_EQ(parse("s0 < 1 and s1 < 1"), logical_and({lt(s, c(1)), lt(t, c(1))}));
  EXPECT_EQ(parse("s0 < 1 or s1 < 1"), logical_or({lt(s, c(1)), lt(t, c(1))}));
  EXPECT_EQ(parse("-9223372036854775808"), c(kMin));
  EXPECT_EQ(parse("9223372036854775807"), c(kMax));
}

TEST_F(SymExpr, ParsesWithPythonPrecedence) {
  EXPECT_EQ(parse("1 + 2*3"), c(7));
  EXPECT_EQ(parse("(1 + 2)*3"), c(9));
  EXPECT_EQ(parse("2 - 3 - 4"), c(-5));
  EXPECT_EQ(parse("-2*s0"), c(-2) * s);
  EXPECT_EQ(parse("s0 + 1 < s1*2"), lt(s + 1, 2 * t));
  const Expr a = lt(s, c(1));
  const Expr b = lt(t, c(1));
  const Expr d = lt(u, c(1));
  EXPECT_EQ(parse("s0 < 1 or s1 < 1 and s2 < 1"), logical_or({a, logical_and({b, d})}));
  EXPECT_EQ(parse("(s0 < 1 or s1 < 1) and s2 < 1"), logical_and({logical_or({a, b}), d}));
  EXPECT_EQ(parse("not s0 < 1 and s1 < 1"), logical_and({logical_not(a), b}));
  EXPECT_EQ(parse("not (s0 < 1 and s1 < 1)"), logical_not(logical_and({a, b})));
  EXPECT_EQ(parse("min((s0), ((s1 + 1)))"), min(s, t + 1));
}

struct BadText {
  const char* text;
  size_t column;
  const char* message;
};

TEST_F(SymExpr, ParseErrorsNameTheProblemAndItsColumn) {
  const BadText cases[] = {
      {"", 1, "expected an expression at column 1, found end of input"},
      {"   ", 4, "expected an expression at column 4, found end of input"},
      {"(s0 + 1 x", 9, "expected ')' at column 9, found 'x'"},
      {"(s0 + 1", 8, "expected ')' at column 8, found end of input"},
      {"s0 s1", 4, "expected end of input at column 4, found 's1'"},
      {"s0 + 1)", 7, "expected end of input at column 7, found ')'"},
      {"s0 < 1 < 2", 8, "expected end of input at column 8, found '<'"},
      {"s0 +", 5, "expected an expression at column 5, found end of input"},
      {"s0 * * 2", 6, "expected an expression at column 6, found '*'"},
      {"s0 < 1 and", 11, "expected an expression at column 11, found end of input"},
      {"not", 4, "expected an expression at column 4, found end of input"},
      {"s0 < 1 and or", 12, "expected an expression at column 12, found 'or'"},
      {"foo(s0)", 1, "unknown function 'foo' at column 1"},
      {"1 + ceildiv(s0, 2)", 5, "unknown function 'ceildiv' at column 5"},
      {"min + 1", 5, "expected '(' after 'min' at column 5, found '+'"},
      {"floordiv(s0)", 12, "expected ',' at column 12, found ')'"},
      {"max(s0, 1, 2)", 10, "expected ')' at column 10, found ','"},
      {"99999999999999999999", 1, "integer literal 99999999999999999999 at column 1 does not fit in 64 bits"},
      {"9223372036854775808", 1, "integer literal 9223372036854775808 at column 1 does not fit in 64 bits"},
      {"2 * -9223372036854775809", 5, "integer literal -9223372036854775809 at column 5 does not fit in 64 bits"},
      {"s0 $ 1", 4, "unexpected character '$' at column 4"},
      {"s0 = 1", 4, "unexpected character '=' at column 4"},
      {"s0 ! 1", 4, "unexpected character '!' at column 4"},
      {"s0 + 1 ^", 8, "unexpected character '^' at column 8"},
      {"s0 and s1 < 2", 1, "expected a boolean operand of 'and' at column 1, found integer 's0'"},
      {"s0 < 2 or s1 + 1", 11, "expected a boolean operand of 'or' at column 11, found integer 's1 + 1'"},
      {"not s0", 5, "expected a boolean operand of 'not' at column 5, found integer 's0'"},
      {"(s0 < 1) + 2", 1, "expected an integer operand of '+' at column 1, found boolean 's0 < 1'"},
      {"2 * True", 5, "expected an integer operand of '*' at column 5, found boolean 'True'"},
      {"-(s0 < 1)", 2, "expected an integer operand of '-' at column 2, found boolean 's0 < 1'"},
      {"(s0 < 1) == True", 1, "expected an integer operand of '==' at column 1, found boolean 's0 < 1'"},
      {"min(s0, s1 > 2)", 9, "expected an integer operand of 'min' at column 9, found boolean 's1 > 2'"},
      {"9223372036854775807 + 1", 21, "integer overflow in '+' at column 21"},
  };
  for (const BadText& bad : cases) {
    try {
      parse(bad.text);
      ADD_FAILURE() << "parsed: " << bad.text;
    } catch (const ParseError& e) {
      EXPECT_EQ(std::string(e.what()), bad.message) << bad.text;
      EXPECT_EQ(e.column, bad.column) << bad.text;
    }
  }
}

TEST_F(SymExpr, DeepNestingIsAParseErrorNotACrash) {
  const std::string deep = std::string(100000, '(') + "1" + std::string(100000, ')');
  EXPECT_THROW(parse(deep), ParseError);
  const std::string nested = std::string(100, '(') + "1" + std::string(100, ')');
  EXPECT_EQ(parse(nested), c(1));
  EXPECT_THROW(parse(std::string(100000, '-') + "s0"), ParseError);
  std::string negations;
  for (int i = 0; i < 100000; ++i) negations += "not ";
  EXPECT_THROW(parse(negations + "s0 < 1"), ParseError);
}

TEST_F(SymExpr, NotKeywordChainsParse) {
  std::string text;
  for (int i = 0; i < 5; ++i) text += "not ";
  EXPECT_EQ(parse(text + "s0 < 1"), ge(s, c(1)));
}

// ---------------------------------------------------------------------------------------
// Evaluation

TEST_F(SymExpr, EvaluatesWithPythonSemantics) {
  const std::map<std::string, int64_t> at{{"s0", -7}, {"s1", 2}};
  EXPECT_EQ(evaluate(floordiv(s, t), at), -4);
  EXPECT_EQ(evaluate(mod(s, t), at), 1);
  EXPECT_EQ(evaluate(floordiv(t, s), at), -1);
  EXPECT_EQ(evaluate(mod(t, s), at), -5);
  EXPECT_EQ(evaluate(floordiv(s, c(2)), at), -4);
  EXPECT_EQ(evaluate(mod(s, c(-3)), at), -1);
  EXPECT_EQ(evaluate(min(s, t) * max(s, t), at), -14);
  EXPECT_EQ(evaluate(2 * s * t + 1, at), -27);
}

TEST_F(SymExpr, EvaluatesBooleansAsZeroOrOne) {
  const std::map<std::string, int64_t> at{{"s0", 3}, {"s1", 4}};
  EXPECT_EQ(evaluate(lt(s, t), at), 1);
  EXPECT_EQ(evaluate(eq(s, t), at), 0);
  EXPECT_EQ(evaluate(logical_and({lt(s, t), eq(t, c(4))}), at), 1);
  EXPECT_EQ(evaluate(logical_or({gt(s, t), eq(t, c(5))}), at), 0);
  EXPECT_EQ(evaluate(logical_not(logical_and({lt(s, t), eq(t, c(5))})), at), 1);
  EXPECT_EQ(evaluate(Expr::boolean(true), {}), 1);
}

TEST_F(SymExpr, EvaluateNeedsEverySymbol) {
  EXPECT_EQ(evaluate(s + t, {{"s0", 1}}), std::nullopt);
  // An unbound symbol wins over a division by zero elsewhere.
  EXPECT_EQ(evaluate(floordiv(s, c(0)) + t, {{"s0", 1}}), std::nullopt);
  EXPECT_EQ(evaluate(c(3), {}), 3);
  EXPECT_EQ(evaluate(s, {{"s0", 1}, {"unused", 2}}), 1);
}

TEST_F(SymExpr, EvaluateReportsDivisionByZeroAndOverflow) {
  const std::map<std::string, int64_t> zero{{"s0", 0}, {"s1", 5}};
  EXPECT_THROW(evaluate(floordiv(t, s), zero), EvalError);
  EXPECT_THROW(evaluate(mod(t, s), zero), EvalError);
  // Operands of and/or are sorted, so every one is evaluated: a guard written first does
  // not protect a division written after it.
  EXPECT_THROW(evaluate(logical_and({ne(s, c(0)), gt(floordiv(t, s), c(1))}), zero), EvalError);
  EXPECT_THROW(evaluate(s * s, {{"s0", int64_t{1} << 32}}), EvalError);
  EXPECT_THROW(evaluate(floordiv(s, t), {{"s0", kMin}, {"s1", -1}}), EvalError);
  try {
    evaluate(floordiv(t, s), zero);
  } catch (const EvalError& e) {
    EXPECT_EQ(std::string(e.what()), "division by zero in floordiv(s1, s0)");
  }
}

// ---------------------------------------------------------------------------------------
// Substitution and simplify

TEST_F(SymExpr, SubstituteRecanonicalizes) {
  EXPECT_EQ(substitute(2 * s - 2 * t, {{"s0", t + 1}}), c(2));
  EXPECT_EQ(substitute(floordiv(s, c(2)), {{"s0", 2 * t}}), t);
  EXPECT_EQ(substitute(mod(s, t), {{"s0", c(7)}, {"s1", c(-2)}}), c(-1));
  EXPECT_EQ(substitute(eq(s, t), {{"s1", s}}), Expr::boolean(true));
  EXPECT_EQ(substitute(logical_and({lt(s, c(3)), lt(t, c(3))}), {{"s0", c(1)}}), lt(t, c(3)));
  EXPECT_EQ(substitute(s + t, {{"s2", c(1)}}), s + t);
  EXPECT_THROW(substitute(s + 1, {{"s0", lt(t, c(1))}}), std::invalid_argument);
}

TEST_F(SymExpr, SimplifyIsTheIdentityOnCanonicalForms) {
  const Expr e = logical_or({eq(mod(s + 3, c(2)), c(0)), lt(floordiv(s * t + 4, c(2)), min(t, c(3)))});
  EXPECT_EQ(simplify(e), e);
  EXPECT_EQ(simplify(simplify(e)), e);
}

// ---------------------------------------------------------------------------------------
// Equality, hash and order

TEST_F(SymExpr, EqualExpressionsHashEqually) {
  const Expr a = floordiv(2 * (s + t), c(4)) + min(s, t);
  const Expr b = min(t, s) + floordiv(t + s, c(2));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(std::hash<Expr>()(a), std::hash<Expr>()(b));
  std::unordered_set<Expr> set{a, b, s};
  EXPECT_EQ(set.size(), 2u);
}

TEST_F(SymExpr, OrderIsStrictAndTotal) {
  const std::vector<Expr> all{c(-1), c(0), c(1), s, t, s + 1, s * t, floordiv(s, c(2)), mod(s, c(2)),
                              min(s, t), max(s, t), eq(s, t), ne(s, t), lt(s, t), le(s, t),
                              logical_and({lt(s, t), lt(t, u)}), logical_or({lt(s, t), lt(t, u)}),
                              logical_not(logical_and({lt(s, t), lt(t, u)})), Expr::boolean(false),
                              Expr::boolean(true)};
  for (const Expr& a : all) {
    EXPECT_FALSE(a < a) << a.to_string();
    for (const Expr& b : all) {
      if (a == b) continue;
      EXPECT_NE(a < b, b < a) << a.to_string() << " vs " << b.to_string();
    }
  }
  std::map<Expr, int> by_expr;
  for (const Expr& a : all) by_expr[a] = 1;
  EXPECT_EQ(by_expr.size(), all.size());
}

// ---------------------------------------------------------------------------------------
// Symbol declarations

TEST(SymSymbol, PrintsItsDeclaration) {
  EXPECT_EQ((Symbol{"s0", 2, 4, 4, 2}.to_string()), "s0 in [2, 4] hint 4 multiple_of 2");
  EXPECT_EQ((Symbol{"batch", 1, 64, 8, 1}.to_string()), "batch in [1, 64] hint 8");
}

TEST(SymSymbol, HintAdmissibility) {
  EXPECT_TRUE((Symbol{"s0", 2, 4, 4, 2}.hint_admissible()));
  EXPECT_TRUE((Symbol{"s0", 2, 4, 2, 1}.hint_admissible()));
  EXPECT_FALSE((Symbol{"s0", 2, 4, 3, 2}.hint_admissible()));
  EXPECT_FALSE((Symbol{"s0", 2, 4, 6, 2}.hint_admissible()));
  EXPECT_FALSE((Symbol{"s0", 2, 4, 1, 1}.hint_admissible()));
  EXPECT_FALSE((Symbol{"s0", 0, 4, 0, 0}.hint_admissible()));
  EXPECT_FALSE((Symbol{"s0", -4, 4, 2, -2}.hint_admissible()));
}

TEST(SymSymbol, RangeConstraint) {
  EXPECT_EQ(range_constraint(Symbol{"s0", 2, 64, 64, 2}).to_string(),
            "(mod(s0, 2) == 0) and (s0 >= 2) and (s0 <= 64)");
  EXPECT_EQ(range_constraint(Symbol{"s0", 1, 8, 1, 1}).to_string(), "(s0 >= 1) and (s0 <= 8)");
  EXPECT_EQ(range_constraint(Symbol{"s0", 3, 3, 3, 1}).to_string(), "(s0 >= 3) and (s0 <= 3)");
  EXPECT_EQ(range_constraint(Symbol{"s0", 1, 8, 1, 0}), Expr::boolean(false));
  const Expr constraint = range_constraint(Symbol{"s0", -6, 6, 0, 3});
  for (int64_t v = -10; v <= 10; ++v) {
    const bool admissible = v >= -6 && v <= 6 && v % 3 == 0;
    EXPECT_EQ(evaluate(constraint, {{"s0", v}}), admissible ? 1 : 0) << v;
  }
}

// Terms of a canonical sum (1 for anything else).
size_t to_poly_size(const Expr& e) { return e.kind() == Expr::Kind::Add ? e.operands().size() : 1; }

// The cap of framework/ir/sym_expr.cpp on the terms of one sum.
constexpr size_t kMaxTerms = 256;

// Found by the parser fuzzer (suites/parser_fuzz/corpus/graph/claim-with-a-long-chain-of-terms.graph):
// each '+' rebuilds the canonical sum, so a claim of n distinct terms took O(n^2) time
// (20,000 terms: 54 s), and a product of sums grows exponentially. Sums are capped.
TEST_F(SymExpr, SumsAboveTheTermCapAreAParseErrorAtTheirOperator) {
  std::string sum = "a0";
  for (size_t i = 1; i < kMaxTerms; ++i) sum += " + a" + std::to_string(i);
  EXPECT_EQ(to_poly_size(parse(sum)), kMaxTerms);
  const std::string too_many = sum + " + b";
  try {
    parse(too_many);
    ADD_FAILURE() << "a sum of " << kMaxTerms + 1 << " terms parsed";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.column, too_many.size() - 2);  // the last '+'
    EXPECT_NE(std::string(e.what()).find("expression has more than 256 terms in '+'"), std::string::npos) << e.what();
  }
  // Four sums of four make 256 terms; a fifth factor of two is one too many.
  const std::string four = "(a+b+c+d)*(e+f+g+h)*(i+j+k+l)*(m+n+o+p)";
  EXPECT_EQ(to_poly_size(parse(four)), 256u);
  EXPECT_THROW(parse(four + "*(q+r)"), ParseError);
  // Terms that merge stay one term however many there are.
  std::string same = "s0";
  for (int i = 0; i < 10000; ++i) same += " + s0";
  EXPECT_EQ(parse(same), parse("10001*s0"));
}

}  // namespace
}  // namespace passcheck::sym
