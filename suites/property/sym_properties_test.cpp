// Property tests of symbolic expressions and the prover (framework/sym) over random
// expression trees in three symbols with small constants and every operator:
// - canonical forms keep the value of the tree they were built from (checked against a
//   reference evaluator of the raw tree, written independently of the library);
// - printing then parsing gives the same expression, and printing is a fixed point;
// - simplify is the identity on what the constructors return;
// - writing commutative operands the other way round gives the same canonical form;
// - the order is a strict total order consistent with == and the hash;
// - the prover's verdict agrees with enumerating every admissible value.
// The unit tests (suites/unit/sym_*_test.cpp) pin each rule; these catch the
// interactions between rules that no one thought to write a case for.
#include "framework/sym/prover.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace passcheck::sym {
namespace {

// An expression tree exactly as generated, before any canonicalization.
struct Raw;
using RawPtr = std::shared_ptr<const Raw>;
struct Raw {
  enum class Op { Constant, Bool, Symbol, Add, Sub, Neg, Mul, FloorDiv, Mod, Min, Max, Eq, Ne, Lt, Le, Gt, Ge, And, Or, Not };
  Op op;
  int64_t value = 0;  // Constant, Bool
  std::string name;   // Symbol
  std::vector<RawPtr> kids;
};
using Op = Raw::Op;
using Env = std::map<std::string, int64_t>;

const std::vector<std::string> kSymbols{"s0", "s1", "s2"};

RawPtr node(Op op, std::vector<RawPtr> kids, int64_t value = 0, std::string name = {}) {
  return std::make_shared<const Raw>(Raw{op, value, std::move(name), std::move(kids)});
}

// ---------------------------------------------------------------------------------------
// Generation: draws from inside a property (RapidCheck's `*gen`), so shrinking works on
// the individual choices. Choice 0 is always the simplest, which is where values shrink to.

// Uniform in [low, high) whatever the test's size (gen::inRange alone would draw mostly
// `low` in the early, small tests), shrinking toward `low`.
int64_t pick(int64_t low, int64_t high) { return *rc::gen::resize(100, rc::gen::inRange<int64_t>(low, high)); }

// Uniform in [-limit, limit], shrinking toward 0.
int64_t small_integer(int64_t limit) {
  const int64_t magnitude = pick(0, limit + 1);
  return pick(0, 2) == 0 ? magnitude : -magnitude;
}

// Constants are small so that random trees rarely overflow; `wide` mixes in arbitrary
// int64 values to exercise printing at the ends of the range.
RawPtr draw_constant(bool wide) {
  if (wide && pick(0, 10) == 0) return node(Op::Constant, {}, *rc::gen::arbitrary<int64_t>());
  return node(Op::Constant, {}, small_integer(6));
}

// Small multiples, which the floordiv and mod rules are about.
int64_t draw_factor() {
  static const int64_t kFactors[] = {2, 3, 4, 6};
  return kFactors[pick(0, std::size(kFactors))];
}

RawPtr draw_integer(int depth, bool wide = false) {
  const int64_t choice = pick(0, depth == 0 ? 2 : 12);
  if (choice == 0) return draw_constant(wide);
  if (choice == 1) return node(Op::Symbol, {}, 0, kSymbols[pick(0, kSymbols.size())]);
  const auto sub = [&] { return draw_integer(depth - 1, wide); };
  switch (choice) {
    case 2: return node(Op::Add, {sub(), sub()});
    case 3: return node(Op::Sub, {sub(), sub()});
    case 4: return node(Op::Neg, {sub()});
    case 5: return node(Op::Mul, {sub(), sub()});
    case 6:
    case 7: {
      // Mostly constant divisors (zero and negative included), which most rules are about.
      RawPtr numerator = sub();
      const int64_t kind = pick(0, 3);
      RawPtr divisor = kind == 0 ? sub() : node(Op::Constant, {}, kind == 1 ? small_integer(6) : draw_factor());
      return node(choice == 6 ? Op::FloorDiv : Op::Mod, {numerator, divisor});
    }
    case 8: return node(Op::Min, {sub(), sub()});
    case 9: return node(Op::Max, {sub(), sub()});
    default: return node(Op::Mul, {node(Op::Constant, {}, draw_factor()), sub()});
  }
}

RawPtr draw_boolean(int depth, bool wide = false) {
  const int64_t choice = pick(0, depth == 0 ? 4 : 9);
  if (choice < 3) {
    static const Op kComparisons[] = {Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge};
    const Op op = kComparisons[pick(0, std::size(kComparisons))];
    const int integer_depth = std::max(depth, 1);
    return node(op, {draw_integer(integer_depth, wide), draw_integer(integer_depth, wide)});
  }
  if (choice == 3) return node(Op::Bool, {}, pick(0, 2));
  const auto sub = [&] { return draw_boolean(depth - 1, wide); };
  switch (choice) {
    case 4:
    case 5: return node(Op::And, {sub(), sub()});
    case 6:
    case 7: return node(Op::Or, {sub(), sub()});
    default: return node(Op::Not, {sub()});
  }
}

RawPtr draw_any(bool wide = false) { return pick(0, 2) == 0 ? draw_integer(4, wide) : draw_boolean(3, wide); }

Env draw_env() {
  Env env;
  for (const auto& name : kSymbols) env[name] = small_integer(9);
  return env;
}

// ---------------------------------------------------------------------------------------
// The raw tree as text (for failure logs), as an Expr, and its value.

std::string show(const Raw& r) {
  const auto k = [&](size_t i) { return show(*r.kids[i]); };
  switch (r.op) {
    case Op::Constant: return std::to_string(r.value);
    case Op::Bool: return r.value ? "True" : "False";
    case Op::Symbol: return r.name;
    case Op::Add: return "(" + k(0) + " + " + k(1) + ")";
    case Op::Sub: return "(" + k(0) + " - " + k(1) + ")";
    case Op::Neg: return "(-" + k(0) + ")";
    case Op::Mul: return "(" + k(0) + " * " + k(1) + ")";
    case Op::FloorDiv: return "floordiv(" + k(0) + ", " + k(1) + ")";
    case Op::Mod: return "mod(" + k(0) + ", " + k(1) + ")";
    case Op::Min: return "min(" + k(0) + ", " + k(1) + ")";
    case Op::Max: return "max(" + k(0) + ", " + k(1) + ")";
    case Op::Eq: return "(" + k(0) + " == " + k(1) + ")";
    case Op::Ne: return "(" + k(0) + " != " + k(1) + ")";
    case Op::Lt: return "(" + k(0) + " < " + k(1) + ")";
    case Op::Le: return "(" + k(0) + " <= " + k(1) + ")";
    case Op::Gt: return "(" + k(0) + " > " + k(1) + ")";
    case Op::Ge: return "(" + k(0) + " >= " + k(1) + ")";
    case Op::And: return "(" + k(0) + " and " + k(1) + ")";
    case Op::Or: return "(" + k(0) + " or " + k(1) + ")";
    case Op::Not: return "(not " + k(0) + ")";
  }
  return "?";
}

Expr build(const Raw& r) {
  const auto k = [&](size_t i) { return build(*r.kids[i]); };
  switch (r.op) {
    case Op::Constant: return Expr::constant(r.value);
    case Op::Bool: return Expr::boolean(r.value != 0);
    case Op::Symbol: return Expr::symbol(r.name);
    case Op::Add: return k(0) + k(1);
    case Op::Sub: return k(0) - k(1);
    case Op::Neg: return -k(0);
    case Op::Mul: return k(0) * k(1);
    case Op::FloorDiv: return floordiv(k(0), k(1));
    case Op::Mod: return mod(k(0), k(1));
    case Op::Min: return min(k(0), k(1));
    case Op::Max: return max(k(0), k(1));
    case Op::Eq: return eq(k(0), k(1));
    case Op::Ne: return ne(k(0), k(1));
    case Op::Lt: return lt(k(0), k(1));
    case Op::Le: return le(k(0), k(1));
    case Op::Gt: return gt(k(0), k(1));
    case Op::Ge: return ge(k(0), k(1));
    case Op::And: return logical_and({k(0), k(1)});
    case Op::Or: return logical_or({k(0), k(1)});
    case Op::Not: return logical_not(k(0));
  }
  return Expr();
}

// The raw tree divides by zero or leaves int64 somewhere: it has no value to compare.
struct Undefined {};

int64_t fit(__int128 v) {
  if (v < std::numeric_limits<int64_t>::min() || v > std::numeric_limits<int64_t>::max()) throw Undefined{};
  return static_cast<int64_t>(v);
}

// Python's floor division, from the definition: the largest q with q*b <= a for b > 0
// (q*b >= a for b < 0).
__int128 python_floordiv(__int128 a, __int128 b) {
  if (b == 0) throw Undefined{};
  __int128 q = a / b;
  if (q * b != a && ((a < 0) != (b < 0))) q -= 1;
  return q;
}

// Every operand is evaluated (no short-circuit), as evaluate() documents.
int64_t reference_value(const Raw& r, const Env& env) {
  const auto k = [&](size_t i) -> __int128 { return reference_value(*r.kids[i], env); };
  switch (r.op) {
    case Op::Constant:
    case Op::Bool: return r.value;
    case Op::Symbol: return env.at(r.name);
    case Op::Add: return fit(k(0) + k(1));
    case Op::Sub: return fit(k(0) - k(1));
    case Op::Neg: return fit(-k(0));
    case Op::Mul: return fit(k(0) * k(1));
    case Op::FloorDiv: {
      const __int128 a = k(0);
      return fit(python_floordiv(a, k(1)));
    }
    case Op::Mod: {
      const __int128 a = k(0);
      const __int128 b = k(1);
      return fit(a - b * python_floordiv(a, b));
    }
    case Op::Min: {
      const __int128 a = k(0);
      return fit(std::min(a, k(1)));
    }
    case Op::Max: {
      const __int128 a = k(0);
      return fit(std::max(a, k(1)));
    }
    case Op::Eq: return k(0) == k(1);
    case Op::Ne: return k(0) != k(1);
    case Op::Lt: return k(0) < k(1);
    case Op::Le: return k(0) <= k(1);
    case Op::Gt: return k(0) > k(1);
    case Op::Ge: return k(0) >= k(1);
    case Op::And: {
      const bool a = k(0) != 0;
      const bool b = k(1) != 0;
      return a && b;
    }
    case Op::Or: {
      const bool a = k(0) != 0;
      const bool b = k(1) != 0;
      return a || b;
    }
    case Op::Not: return k(0) == 0;
  }
  return 0;
}

// The same expression with commutative operands swapped and comparisons mirrored.
RawPtr mirrored(const RawPtr& r) {
  std::vector<RawPtr> kids;
  for (const auto& kid : r->kids) kids.push_back(mirrored(kid));
  switch (r->op) {
    case Op::Add:
    case Op::Mul:
    case Op::Min:
    case Op::Max:
    case Op::Eq:
    case Op::Ne:
    case Op::And:
    case Op::Or: return node(r->op, {kids[1], kids[0]});
    case Op::Lt: return node(Op::Gt, {kids[1], kids[0]});
    case Op::Gt: return node(Op::Lt, {kids[1], kids[0]});
    case Op::Le: return node(Op::Ge, {kids[1], kids[0]});
    case Op::Ge: return node(Op::Le, {kids[1], kids[0]});
    case Op::Sub: return node(Op::Add, {kids[0], node(Op::Neg, {kids[1]})});
    default: return node(r->op, kids, r->value, r->name);
  }
}

// ---------------------------------------------------------------------------------------
// Properties of expressions

RC_GTEST_PROP(SymProperties, CanonicalFormsKeepTheValue, ()) {
  const RawPtr raw = draw_any();
  RC_LOG() << "raw: " << show(*raw) << "\n";
  const Expr e = build(*raw);
  RC_LOG() << "canonical: " << e.to_string() << "\n";
  RC_TAG(e.has_symbols() ? "symbolic" : "constant");
  for (int point = 0; point < 8; ++point) {
    const Env env = draw_env();
    int64_t expected;
    try {
      expected = reference_value(*raw, env);
    } catch (const Undefined&) {
      // Canonical forms may drop a division by zero (0*floordiv(s0, 0) -> 0), so there is
      // nothing to compare where the raw tree has no value.
      continue;
    }
    RC_LOG() << "at s0=" << env.at("s0") << " s1=" << env.at("s1") << " s2=" << env.at("s2") << "\n";
    RC_ASSERT(evaluate(e, env) == std::optional<int64_t>(expected));
  }
}

RC_GTEST_PROP(SymProperties, ParsingThePrintedFormGivesItBack, ()) {
  for (const RawPtr& raw : {draw_integer(4, /*wide=*/true), draw_boolean(3, /*wide=*/true)}) {
    Expr e;
    try {
      e = build(*raw);
    } catch (const EvalError&) {
      continue;  // a wide constant overflows
    }
    const std::string text = e.to_string();
    RC_LOG() << text << "\n";
    const Expr reparsed = parse(text);
    RC_ASSERT(reparsed == e);
    RC_ASSERT(reparsed.hash() == e.hash());
    RC_ASSERT(reparsed.to_string() == text);
  }
}

RC_GTEST_PROP(SymProperties, SimplifyIsTheIdentityOnCanonicalForms, ()) {
  const Expr e = build(*draw_any());
  RC_LOG() << e.to_string() << "\n";
  const Expr once = simplify(e);
  RC_ASSERT(once == e);
  RC_ASSERT(simplify(once) == once);
  std::map<std::string, Expr> identity;
  for (const auto& name : kSymbols) identity.emplace(name, Expr::symbol(name));
  RC_ASSERT(substitute(e, identity) == e);
}

RC_GTEST_PROP(SymProperties, CommutedOperandsGiveTheSameCanonicalForm, ()) {
  const RawPtr raw = draw_any();
  const RawPtr mirror = mirrored(raw);
  RC_LOG() << show(*raw) << "\nmirrored: " << show(*mirror) << "\n";
  const Expr e = build(*raw);
  const Expr m = build(*mirror);
  RC_LOG() << e.to_string() << " vs " << m.to_string() << "\n";
  RC_ASSERT(m == e);
}

RC_GTEST_PROP(SymProperties, OrderIsAStrictTotalOrderConsistentWithEquality, ()) {
  const Expr a = build(*draw_any());
  const Expr b = build(*draw_any());
  const Expr c = build(*draw_any());
  RC_LOG() << a.to_string() << "\n" << b.to_string() << "\n" << c.to_string() << "\n";
  RC_ASSERT(!(a < a));
  RC_ASSERT((a == b) == (!(a < b) && !(b < a)));
  RC_ASSERT(!(a < b && b < a));
  if (a < b && b < c) RC_ASSERT(a < c);
  if (a == b) RC_ASSERT(a.hash() == b.hash());
  const Expr copy = parse(a.to_string());
  RC_ASSERT(!(copy < a) && !(a < copy) && copy.hash() == a.hash());
}

// ---------------------------------------------------------------------------------------
// The prover against brute force

std::vector<int64_t> admissible_values(const Symbol& s) {
  std::vector<int64_t> values;
  for (int64_t v = s.min; v <= s.max; ++v) {
    if (v % s.multiple_of == 0) values.push_back(v);
  }
  return values;
}

// A claim holds at a point when it evaluates to true there; a division by zero makes it
// false (prover.h).
bool holds_at(const Expr& condition, const Env& env) {
  try {
    return evaluate(condition, env) == 1;
  } catch (const EvalError&) {
    return false;
  }
}

// Calls `visit` on every assignment of admissible values to `symbols`, stopping (and
// returning false) at the first assignment it returns false for.
template <typename Visit>
bool for_each_assignment(const std::vector<Symbol>& symbols, Env& env, size_t i, Visit&& visit) {
  if (i == symbols.size()) return visit(env);
  for (const int64_t v : admissible_values(symbols[i])) {
    env[symbols[i].name] = v;
    if (!for_each_assignment(symbols, env, i + 1, visit)) return false;
  }
  return true;
}

// One random claim, its verdict checked against every admissible value of its symbols.
void check_prover_against_enumeration() {
  const Expr condition = build(*draw_boolean(2));
  std::vector<Symbol> symbols;
  for (const auto& name : kSymbols) {
    const int64_t low = small_integer(5);
    // Now and then an empty range, which must make a claim over the symbol unknown.
    const int64_t high = pick(0, 20) == 19 ? low - 1 : low + pick(0, 8);
    symbols.push_back(Symbol{name, low, high, low, pick(1, 4)});
  }
  RC_LOG() << "claim: " << condition.to_string() << "\n";
  for (const auto& s : symbols) RC_LOG() << s.to_string() << "\n";

  std::vector<Symbol> used;
  for (const auto& s : symbols) {
    if (condition.contains_symbol(s.name)) used.push_back(s);
  }
  ProveOptions options;
  options.timeout_ms = 20000;
  const ClaimResult result = prove(Claim{"guard", "property", "", "", condition}, symbols, options);
  RC_LOG() << result.format() << "\n";
  RC_TAG(to_string(result.verdict));

  for (const auto& s : used) {
    if (admissible_values(s).empty()) {
      RC_ASSERT(result.verdict == Verdict::Unknown);
      RC_ASSERT(result.reason.find("has no admissible value") != std::string::npos);
      return;
    }
  }
  Env env;
  const bool always = for_each_assignment(used, env, 0, [&](const Env& at) { return holds_at(condition, at); });
  if (always) {
    RC_ASSERT(result.verdict == Verdict::Proved);
    return;
  }
  RC_ASSERT(result.verdict == Verdict::Refuted);
  RC_ASSERT(result.counterexample.size() == used.size());
  for (const auto& s : used) {
    const auto it = result.counterexample.find(s.name);
    RC_ASSERT(it != result.counterexample.end());
    const auto values = admissible_values(s);
    RC_ASSERT(std::find(values.begin(), values.end(), it->second) != values.end());
  }
  RC_ASSERT(!holds_at(condition, result.counterexample));
}

// Three claims a case: each takes Z3 milliseconds, while generating one takes
// microseconds, and RapidCheck runs a fixed number of cases.
RC_GTEST_PROP(SymProperties, ProverAgreesWithEnumeratingEveryAdmissibleValue, ()) {
  for (int claim = 0; claim < 3; ++claim) check_prover_against_enumeration();
}

}  // namespace
}  // namespace passcheck::sym
