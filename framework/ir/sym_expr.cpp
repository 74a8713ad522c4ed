// Canonical forms of symbolic integer expressions (see expr.h).
//
// Integer expressions are polynomials with integer coefficients over "atoms": symbols and
// the floordiv/mod/min/max nodes. Every arithmetic constructor converts its operands to a
// Poly (monomial -> coefficient), combines them there and converts back, so sums and
// products are always fully expanded (s*(t + 1) -> s*t + s) and two expressions that are
// equal as polynomials are structurally equal. Comparisons are stored as a difference of
// two such polynomials with positive coefficients on each side; connectives are flat,
// sorted and deduplicated. Folding uses checked arithmetic and throws EvalError on int64
// overflow instead of wrapping.
#include "framework/ir/sym_expr.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <utility>

namespace passcheck::sym {

using Kind = Expr::Kind;

class ExprNode {
 public:
  ExprNode(Kind kind, int64_t value, std::string name, std::vector<Expr> operands)
      : kind(kind),
        value(value),
        name(std::move(name)),
        operands(std::move(operands)),
        hash(compute_hash()),
        has_symbols(compute_has_symbols()) {}

  const Kind kind;
  /// Constant's value; BoolConstant's 0/1.
  const int64_t value;
  /// Symbol's name.
  const std::string name;
  const std::vector<Expr> operands;
  const size_t hash;
  const bool has_symbols;

 private:
  size_t compute_hash() const {
    size_t h = std::hash<int>()(static_cast<int>(kind));
    const auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    mix(std::hash<int64_t>()(value));
    mix(std::hash<std::string>()(name));
    for (const Expr& op : operands) mix(op.hash());
    return h;
  }
  bool compute_has_symbols() const {
    if (kind == Kind::Symbol) return true;
    return std::any_of(operands.begin(), operands.end(), [](const Expr& op) { return op.has_symbols(); });
  }
};

namespace {

// ---------------------------------------------------------------------------------------
// Checked int64 arithmetic with Python's rounding.

[[noreturn]] void throw_overflow() { throw EvalError("integer overflow"); }

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw_overflow();
  return r;
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw_overflow();
  return r;
}

int64_t narrow(__int128 v) {
  if (v < std::numeric_limits<int64_t>::min() || v > std::numeric_limits<int64_t>::max()) throw_overflow();
  return static_cast<int64_t>(v);
}

// Rounds toward negative infinity; b != 0.
__int128 floor_div128(__int128 a, __int128 b) {
  __int128 q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

__int128 ceil_div128(__int128 a, __int128 b) { return -floor_div128(-a, b); }

// Python's a // b and a % b (the result of % has the divisor's sign); b != 0. Computed in
// 128 bits so INT64_MIN // -1 reports an overflow instead of trapping.
int64_t floor_div(int64_t a, int64_t b) { return narrow(floor_div128(a, b)); }

int64_t floor_mod(int64_t a, int64_t b) {
  const __int128 r = static_cast<__int128>(a) - floor_div128(a, b) * b;
  return static_cast<int64_t>(r);
}

uint64_t magnitude(int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); }

uint64_t gcd_u64(uint64_t a, uint64_t b) {
  while (b != 0) {
    const uint64_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

// ---------------------------------------------------------------------------------------
// Node construction and type checks.

Expr make_node(Kind kind, std::vector<Expr> operands) {
  return Expr(std::make_shared<const ExprNode>(kind, 0, std::string(), std::move(operands)));
}

Expr make_leaf(Kind kind, int64_t value, std::string name = {}) {
  return Expr(std::make_shared<const ExprNode>(kind, value, std::move(name), std::vector<Expr>{}));
}

const char* operator_name(Kind kind) {
  switch (kind) {
    case Kind::Add: return "+";
    case Kind::Mul: return "*";
    case Kind::FloorDiv: return "floordiv";
    case Kind::Mod: return "mod";
    case Kind::Min: return "min";
    case Kind::Max: return "max";
    case Kind::Eq: return "==";
    case Kind::Ne: return "!=";
    case Kind::Lt: return "<";
    case Kind::Le: return "<=";
    case Kind::And: return "and";
    case Kind::Or: return "or";
    case Kind::Not: return "not";
    case Kind::Constant:
    case Kind::Symbol:
    case Kind::BoolConstant: break;
  }
  return "?";
}

void require_integer(const Expr& e, const char* op) {
  if (e.is_boolean())
    throw std::invalid_argument(std::string("'") + op + "' needs integer operands, got boolean '" + e.to_string() +
                                "'");
}

void require_boolean(const Expr& e, const char* op) {
  if (!e.is_boolean())
    throw std::invalid_argument(std::string("'") + op + "' needs boolean operands, got integer '" + e.to_string() +
                                "'");
}

// ---------------------------------------------------------------------------------------
// Polynomials over atoms.

// A product of atoms with repetition (s*s*t), sorted by Expr::operator<. The empty
// monomial is the constant term.
using Monomial = std::vector<Expr>;

// Terms print by decreasing degree, then in the atoms' order, so the constant comes last:
// "s0*s1 + 2*s0 + 1".
struct MonomialLess {
  bool operator()(const Monomial& a, const Monomial& b) const {
    if (a.size() != b.size()) return a.size() > b.size();
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
};

// Most terms a canonical sum may hold; more throws EvalError (docs/graph-format.md).
constexpr size_t kMaxTerms = 256;

// Never holds a zero coefficient.
using Poly = std::map<Monomial, int64_t, MonomialLess>;

void add_term(Poly& p, const Monomial& m, int64_t coefficient) {
  if (coefficient == 0) return;
  auto [it, inserted] = p.emplace(m, coefficient);
  if (inserted) {
    // Every operation rebuilds its operands' canonical sums, so sums are bounded: a
    // chain of n distinct terms would cost O(n^2) and a product of sums grows
    // exponentially. No shape expression comes near the cap (docs/graph-format.md).
    if (p.size() > kMaxTerms)
      throw EvalError("expression has more than " + std::to_string(kMaxTerms) + " terms");
    return;
  }
  it->second = checked_add(it->second, coefficient);
  if (it->second == 0) p.erase(it);
}

void add_poly(Poly& p, const Poly& q) {
  for (const auto& [m, c] : q) add_term(p, m, c);
}

Poly scaled(const Poly& p, int64_t factor) {
  Poly out;
  if (factor == 0) return out;
  for (const auto& [m, c] : p) out.emplace(m, checked_mul(c, factor));
  return out;
}

Poly product(const Poly& a, const Poly& b) {
  Poly out;
  for (const auto& [ma, ca] : a) {
    for (const auto& [mb, cb] : b) {
      Monomial m;
      m.reserve(ma.size() + mb.size());
      std::merge(ma.begin(), ma.end(), mb.begin(), mb.end(), std::back_inserter(m));
      add_term(out, m, checked_mul(ca, cb));
    }
  }
  return out;
}

int64_t constant_term(const Poly& p) {
  const auto it = p.find(Monomial{});
  return it == p.end() ? 0 : it->second;
}

Poly to_poly(const Expr& e) {
  Poly p;
  switch (e.kind()) {
    case Kind::Constant: add_term(p, {}, e.constant_value()); break;
    case Kind::Add:
      for (const Expr& term : e.operands()) add_poly(p, to_poly(term));
      break;
    case Kind::Mul: {
      // Canonical products: an optional leading coefficient, then atoms in order.
      int64_t coefficient = 1;
      Monomial m;
      for (const Expr& factor : e.operands()) {
        if (factor.is_constant()) coefficient = factor.constant_value();
        else m.push_back(factor);
      }
      add_term(p, m, coefficient);
      break;
    }
    default: add_term(p, {e}, 1); break;
  }
  return p;
}

Expr term_expr(const Monomial& m, int64_t coefficient) {
  if (m.empty()) return Expr::constant(coefficient);
  if (m.size() == 1 && coefficient == 1) return m.front();
  std::vector<Expr> factors;
  if (coefficient != 1) factors.push_back(Expr::constant(coefficient));
  factors.insert(factors.end(), m.begin(), m.end());
  return make_node(Kind::Mul, std::move(factors));
}

Expr from_poly(const Poly& p) {
  if (p.empty()) return Expr::constant(0);
  if (p.size() == 1) return term_expr(p.begin()->first, p.begin()->second);
  std::vector<Expr> terms;
  for (const auto& [m, c] : p) terms.push_back(term_expr(m, c));
  return make_node(Kind::Add, std::move(terms));
}

// Coefficient and atoms of one term of a canonical sum (or a whole canonical product).
std::pair<int64_t, Monomial> split_term(const Expr& term) {
  const Poly p = to_poly(term);
  return {p.begin()->second, p.begin()->first};
}

// ---------------------------------------------------------------------------------------
// floordiv and mod by a positive constant.

std::optional<int64_t> positive_constant(const Expr& e) {
  const auto c = e.as_constant();
  if (c && *c > 0) return c;
  return std::nullopt;
}

// floordiv(numerator, divisor) where divisor >= 2 and no coefficient of numerator is a
// multiple of divisor (so nothing more can be taken out of the division).
Expr floordiv_core(const Expr& numerator, int64_t divisor) {
  if (numerator.kind() == Kind::FloorDiv) {
    // floor(floor(x / a) / b) == floor(x / (a*b)) for positive a and b.
    if (const auto inner = positive_constant(numerator.operands()[1])) {
      int64_t combined;
      if (!__builtin_mul_overflow(*inner, divisor, &combined))
        return floordiv(numerator.operands()[0], Expr::constant(combined));
    }
  }
  if (numerator.kind() == Kind::Mod) {
    // 0 <= mod(x, a) < a <= divisor.
    const auto inner = positive_constant(numerator.operands()[1]);
    if (inner && *inner <= divisor) return Expr::constant(0);
  }
  return make_node(Kind::FloorDiv, {numerator, Expr::constant(divisor)});
}

// floordiv(p, divisor) for divisor >= 2: terms whose coefficients the divisor divides
// leave the division exactly (floor((c*q + r) / c) == q + floor(r / c) for integer q),
// and a common factor of the rest and the divisor cancels.
Expr floordiv_by_positive(const Poly& p, int64_t divisor) {
  Poly quotient;
  Poly rest;
  for (const auto& [m, c] : p) {
    if (c % divisor == 0) add_term(quotient, m, c / divisor);
    else add_term(rest, m, c);
  }
  if (rest.empty()) return from_poly(quotient);
  if (rest.size() == 1 && rest.begin()->first.empty()) {
    add_term(quotient, {}, floor_div(rest.begin()->second, divisor));
    return from_poly(quotient);
  }
  uint64_t common = static_cast<uint64_t>(divisor);
  for (const auto& [m, c] : rest) common = gcd_u64(common, magnitude(c));
  const auto g = static_cast<int64_t>(common);
  Poly reduced;
  for (const auto& [m, c] : rest) add_term(reduced, m, c / g);
  add_poly(quotient, to_poly(floordiv_core(from_poly(reduced), divisor / g)));
  return from_poly(quotient);
}

// mod(numerator, divisor) where divisor >= 2 and numerator's coefficients lie in
// [1, divisor).
Expr mod_core(const Expr& numerator, int64_t divisor) {
  if (numerator.kind() == Kind::Mod) {
    if (const auto inner = positive_constant(numerator.operands()[1])) {
      // mod(mod(x, k*d), d) == mod(x, d).
      if (*inner % divisor == 0) return mod(numerator.operands()[0], Expr::constant(divisor));
      // 0 <= mod(x, a) < a <= divisor, so the outer mod is the identity.
      if (*inner <= divisor) return numerator;
    }
  }
  return make_node(Kind::Mod, {numerator, Expr::constant(divisor)});
}

// mod(p, divisor) for divisor >= 2 depends only on the coefficients modulo divisor, so
// they are reduced into [0, divisor); a common factor g of the rest and the divisor comes
// out: mod(g*x, g*d) == g*mod(x, d).
Expr mod_by_positive(const Poly& p, int64_t divisor) {
  Poly rest;
  for (const auto& [m, c] : p) add_term(rest, m, floor_mod(c, divisor));
  if (rest.empty()) return Expr::constant(0);
  if (rest.size() == 1 && rest.begin()->first.empty()) return Expr::constant(rest.begin()->second);
  uint64_t common = static_cast<uint64_t>(divisor);
  for (const auto& [m, c] : rest) common = gcd_u64(common, magnitude(c));
  const auto g = static_cast<int64_t>(common);
  Poly reduced;
  for (const auto& [m, c] : rest) add_term(reduced, m, c / g);
  return from_poly(scaled(to_poly(mod_core(from_poly(reduced), divisor / g)), g));
}

// ---------------------------------------------------------------------------------------
// Comparisons.

// Canonical form of `diff <kind> 0` for kind in Eq, Ne, Lt, Le. The non-constant part is
// divided by the gcd g of its coefficients (rounding the constant so the integer
// solutions stay the same: P + k < 0 <=> P/g + floor(k/g) < 0 and P + k <= 0 <=> P/g +
// ceil(k/g) <= 0; an equality whose constant g does not divide has no solution).
// Equalities are oriented so the first term is positive. The result is stored as
// `left <kind> right` with positive coefficients on both sides and the constant on the
// side that keeps it positive (or alone on the side without terms): "s0 < 4",
// "2 <= s0" (printed "s0 >= 2"), "s0 + 1 == 2*s1".
Expr compare_with_zero(Kind kind, Poly diff) {
  const int64_t k = constant_term(diff);
  diff.erase(Monomial{});
  if (diff.empty()) {
    switch (kind) {
      case Kind::Eq: return Expr::boolean(k == 0);
      case Kind::Ne: return Expr::boolean(k != 0);
      case Kind::Lt: return Expr::boolean(k < 0);
      default: return Expr::boolean(k <= 0);
    }
  }
  uint64_t common = 0;
  for (const auto& [m, c] : diff) common = gcd_u64(common, magnitude(c));
  const auto g = static_cast<__int128>(common);
  __int128 reduced_k;
  switch (kind) {
    case Kind::Eq:
    case Kind::Ne:
      if (k % g != 0) return Expr::boolean(kind == Kind::Ne);
      reduced_k = k / g;
      break;
    case Kind::Lt: reduced_k = floor_div128(k, g); break;
    default: reduced_k = ceil_div128(k, g); break;
  }
  __int128 sign = 1;
  if ((kind == Kind::Eq || kind == Kind::Ne) && diff.begin()->second < 0) sign = -1;
  Poly left;
  Poly right;
  for (const auto& [m, c] : diff) {
    const __int128 reduced = sign * c / g;
    if (reduced > 0) add_term(left, m, narrow(reduced));
    else add_term(right, m, narrow(-reduced));
  }
  reduced_k *= sign;
  if (right.empty()) add_term(right, {}, narrow(-reduced_k));
  else if (left.empty()) add_term(left, {}, narrow(reduced_k));
  else if (reduced_k > 0) add_term(left, {}, narrow(reduced_k));
  else add_term(right, {}, narrow(-reduced_k));
  return make_node(kind, {from_poly(left), from_poly(right)});
}

Expr comparison(Kind kind, const Expr& a, const Expr& b) {
  const char* op = operator_name(kind);
  require_integer(a, op);
  require_integer(b, op);
  // Folded directly: the difference of two constants may not fit in int64.
  const auto ca = a.as_constant();
  const auto cb = b.as_constant();
  if (ca && cb) {
    switch (kind) {
      case Kind::Eq: return Expr::boolean(*ca == *cb);
      case Kind::Ne: return Expr::boolean(*ca != *cb);
      case Kind::Lt: return Expr::boolean(*ca < *cb);
      default: return Expr::boolean(*ca <= *cb);
    }
  }
  Poly diff = to_poly(a);
  add_poly(diff, scaled(to_poly(b), -1));
  return compare_with_zero(kind, std::move(diff));
}

// ---------------------------------------------------------------------------------------
// Connectives.

Expr connective(Kind kind, const std::vector<Expr>& terms) {
  const bool neutral = kind == Kind::And;  // and: True is neutral, False absorbs
  std::vector<Expr> flat;
  for (const Expr& t : terms) {
    require_boolean(t, operator_name(kind));
    if (t.kind() == kind) {
      flat.insert(flat.end(), t.operands().begin(), t.operands().end());
    } else if (const auto b = t.as_bool()) {
      if (*b != neutral) return Expr::boolean(!neutral);
    } else {
      flat.push_back(t);
    }
  }
  std::sort(flat.begin(), flat.end());
  flat.erase(std::unique(flat.begin(), flat.end()), flat.end());
  for (const Expr& t : flat) {
    // x and not x == False; x or not x == True.
    if (std::binary_search(flat.begin(), flat.end(), logical_not(t))) return Expr::boolean(!neutral);
  }
  if (flat.empty()) return Expr::boolean(neutral);
  if (flat.size() == 1) return flat.front();
  return make_node(kind, std::move(flat));
}

// ---------------------------------------------------------------------------------------
// Ordering.

int compare_nodes(const ExprNode& a, const ExprNode& b) {
  if (&a == &b) return 0;
  if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
  if (a.value != b.value) return a.value < b.value ? -1 : 1;
  if (a.name != b.name) return a.name < b.name ? -1 : 1;
  const size_t n = std::min(a.operands.size(), b.operands.size());
  for (size_t i = 0; i < n; ++i) {
    const int c = compare_nodes(*a.operands[i].node(), *b.operands[i].node());
    if (c != 0) return c;
  }
  if (a.operands.size() != b.operands.size()) return a.operands.size() < b.operands.size() ? -1 : 1;
  return 0;
}

// ---------------------------------------------------------------------------------------
// Printing.

const char* const kFunctionNames[] = {"floordiv", "mod", "min", "max"};
const char* const kKeywords[] = {"and", "or", "not", "True", "False"};

bool is_reserved(const std::string& name) {
  return std::find(std::begin(kFunctionNames), std::end(kFunctionNames), name) != std::end(kFunctionNames) ||
         std::find(std::begin(kKeywords), std::end(kKeywords), name) != std::end(kKeywords);
}

bool is_identifier(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; });
}

void print(const Expr& e, std::string& out);

// One term of a sum: "3*s0*s1", "-s0", "7". Within a sum, a negative term after the first
// prints as " - 3*s0"; INT64_MIN has no positive counterpart and prints as " + -9...*s0".
void print_term(const Expr& term, bool first, std::string& out) {
  const auto [coefficient, atoms] = split_term(term);
  int64_t shown = coefficient;
  if (!first) {
    if (coefficient < 0 && coefficient != std::numeric_limits<int64_t>::min()) {
      out += " - ";
      shown = -coefficient;
    } else {
      out += " + ";
    }
  }
  if (atoms.empty()) {
    out += std::to_string(shown);
    return;
  }
  if (shown == -1) out += "-";
  else if (shown != 1) out += std::to_string(shown) + "*";
  for (size_t i = 0; i < atoms.size(); ++i) {
    if (i > 0) out += "*";
    print(atoms[i], out);
  }
}

void print_call(const char* function, const Expr& e, std::string& out) {
  out += function;
  out += "(";
  print(e.operands()[0], out);
  out += ", ";
  print(e.operands()[1], out);
  out += ")";
}

void print(const Expr& e, std::string& out) {
  const auto& ops = e.operands();
  switch (e.kind()) {
    case Kind::Constant: out += std::to_string(e.constant_value()); return;
    case Kind::BoolConstant: out += e.constant_value() ? "True" : "False"; return;
    case Kind::Symbol: out += e.symbol_name(); return;
    case Kind::Add:
      for (size_t i = 0; i < ops.size(); ++i) print_term(ops[i], i == 0, out);
      return;
    case Kind::Mul: print_term(e, true, out); return;
    case Kind::FloorDiv:
    case Kind::Mod:
    case Kind::Min:
    case Kind::Max: print_call(operator_name(e.kind()), e, out); return;
    case Kind::Eq:
    case Kind::Ne:
    case Kind::Lt:
    case Kind::Le: {
      // A constant left side reads better on the right: "s0 >= 2" for 2 <= s0.
      if ((e.kind() == Kind::Lt || e.kind() == Kind::Le) && ops[0].is_constant()) {
        print(ops[1], out);
        out += e.kind() == Kind::Lt ? " > " : " >= ";
        print(ops[0], out);
        return;
      }
      print(ops[0], out);
      out += std::string(" ") + operator_name(e.kind()) + " ";
      print(ops[1], out);
      return;
    }
    case Kind::And:
    case Kind::Or:
      for (size_t i = 0; i < ops.size(); ++i) {
        if (i > 0) out += std::string(" ") + operator_name(e.kind()) + " ";
        out += "(";
        print(ops[i], out);
        out += ")";
      }
      return;
    case Kind::Not:
      out += "not (";
      print(ops[0], out);
      out += ")";
      return;
  }
}

// ---------------------------------------------------------------------------------------
// Evaluation (every symbol bound).

int64_t eval_bound(const Expr& e, const std::map<std::string, int64_t>& values) {
  const auto& ops = e.operands();
  switch (e.kind()) {
    case Kind::Constant:
    case Kind::BoolConstant: return e.constant_value();
    case Kind::Symbol: return values.at(e.symbol_name());
    case Kind::Add: {
      int64_t sum = 0;
      for (const Expr& op : ops) sum = checked_add(sum, eval_bound(op, values));
      return sum;
    }
    case Kind::Mul: {
      int64_t prod = 1;
      for (const Expr& op : ops) prod = checked_mul(prod, eval_bound(op, values));
      return prod;
    }
    case Kind::FloorDiv:
    case Kind::Mod: {
      const int64_t a = eval_bound(ops[0], values);
      const int64_t b = eval_bound(ops[1], values);
      if (b == 0) {
        throw EvalError(std::string(e.kind() == Kind::FloorDiv ? "division" : "modulo") + " by zero in " +
                        e.to_string());
      }
      return e.kind() == Kind::FloorDiv ? floor_div(a, b) : floor_mod(a, b);
    }
    case Kind::Min: return std::min(eval_bound(ops[0], values), eval_bound(ops[1], values));
    case Kind::Max: return std::max(eval_bound(ops[0], values), eval_bound(ops[1], values));
    case Kind::Eq: return eval_bound(ops[0], values) == eval_bound(ops[1], values);
    case Kind::Ne: return eval_bound(ops[0], values) != eval_bound(ops[1], values);
    case Kind::Lt: return eval_bound(ops[0], values) < eval_bound(ops[1], values);
    case Kind::Le: return eval_bound(ops[0], values) <= eval_bound(ops[1], values);
    case Kind::And:
    case Kind::Or: {
      // Every operand is evaluated: operands are sorted, so short-circuiting would make
      // a division by zero depend on the canonical order rather than on what was written.
      bool all = true;
      bool any = false;
      for (const Expr& op : ops) {
        const bool v = eval_bound(op, values) != 0;
        all = all && v;
        any = any || v;
      }
      return e.kind() == Kind::And ? all : any;
    }
    case Kind::Not: return eval_bound(ops[0], values) == 0;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------
// Rebuilding through the constructors (simplify, substitute).

Expr rebuild(const Expr& e, const std::map<std::string, Expr>& replacements) {
  if (!e.has_symbols()) return e;
  const auto& ops = e.operands();
  const auto operand = [&](size_t i) { return rebuild(ops[i], replacements); };
  switch (e.kind()) {
    case Kind::Symbol: {
      const auto it = replacements.find(e.symbol_name());
      return it == replacements.end() ? e : it->second;
    }
    case Kind::Add: {
      Expr sum = Expr::constant(0);
      for (size_t i = 0; i < ops.size(); ++i) sum = sum + operand(i);
      return sum;
    }
    case Kind::Mul: {
      Expr prod = Expr::constant(1);
      for (size_t i = 0; i < ops.size(); ++i) prod = prod * operand(i);
      return prod;
    }
    case Kind::FloorDiv: return floordiv(operand(0), operand(1));
    case Kind::Mod: return mod(operand(0), operand(1));
    case Kind::Min: return min(operand(0), operand(1));
    case Kind::Max: return max(operand(0), operand(1));
    case Kind::Eq:
    case Kind::Ne:
    case Kind::Lt:
    case Kind::Le: return comparison(e.kind(), operand(0), operand(1));
    case Kind::And:
    case Kind::Or: {
      std::vector<Expr> terms;
      for (size_t i = 0; i < ops.size(); ++i) terms.push_back(operand(i));
      return connective(e.kind(), terms);
    }
    case Kind::Not: return logical_not(operand(0));
    case Kind::Constant:
    case Kind::BoolConstant: break;
  }
  return e;
}

// ---------------------------------------------------------------------------------------
// Parsing.

enum class TokenType { Integer, Name, Punct, Invalid, End };

struct Token {
  TokenType type;
  std::string text;
  size_t column;  // 1-based
};

std::vector<Token> tokenize(const std::string& text) {
  static const char* const kPunct[] = {"==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "(", ")", ","};
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char ch = static_cast<unsigned char>(text[i]);
    if (std::isspace(ch)) {
      ++i;
      continue;
    }
    const size_t start = i;
    if (std::isdigit(ch)) {
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
      tokens.push_back({TokenType::Integer, text.substr(start, i - start), start + 1});
      continue;
    }
    if (std::isalpha(ch) || ch == '_') {
      while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
      tokens.push_back({TokenType::Name, text.substr(start, i - start), start + 1});
      continue;
    }
    const char* match = nullptr;
    for (const char* p : kPunct) {
      if (text.compare(i, std::char_traits<char>::length(p), p) == 0) {
        match = p;
        break;
      }
    }
    if (!match) {
      // The parser reports it when it gets there, so an earlier error wins.
      tokens.push_back({TokenType::Invalid, std::string(1, text[i]), start + 1});
      return tokens;
    }
    tokens.push_back({TokenType::Punct, match, start + 1});
    i += std::char_traits<char>::length(match);
  }
  tokens.push_back({TokenType::End, "", text.size() + 1});
  return tokens;
}

class Parser {
 public:
  explicit Parser(const std::string& text) : tokens_(tokenize(text)) {}

  Expr parse_all() {
    const Parsed result = parse_or();
    if (peek().type != TokenType::End) fail_expected("end of input");
    return result.expr;
  }

 private:
  // Guards the recursion against stack exhaustion on adversarial input.
  static constexpr int kMaxDepth = 500;

  struct Parsed {
    Expr expr;
    size_t column;  // where the operand's text starts, for type errors
  };

  const Token& peek() const { return tokens_[pos_]; }
  Token advance() { return tokens_[pos_++]; }
  bool at(const char* punct) const { return peek().type == TokenType::Punct && peek().text == punct; }
  bool at_keyword(const char* word) const { return peek().type == TokenType::Name && peek().text == word; }

  static std::string describe(const Token& t) {
    if (t.type == TokenType::End) return "end of input";
    return "'" + t.text + "'";
  }

  [[noreturn]] void fail(const std::string& message, size_t column) const {
    throw ParseError(message, column);
  }

  [[noreturn]] void fail_expected(const std::string& what) const {
    const Token& t = peek();
    if (t.type == TokenType::Invalid)
      fail("unexpected character '" + t.text + "' at column " + std::to_string(t.column), t.column);
    fail("expected " + what + " at column " + std::to_string(t.column) + ", found " + describe(t), t.column);
  }

  void expect(const char* punct) {
    if (!at(punct)) fail_expected(std::string("'") + punct + "'");
    advance();
  }

  const Expr& integer_operand(const Parsed& p, const std::string& op) const {
    if (p.expr.is_boolean()) {
      fail("expected an integer operand of '" + op + "' at column " + std::to_string(p.column) + ", found boolean '" +
               p.expr.to_string() + "'",
           p.column);
    }
    return p.expr;
  }

  const Expr& boolean_operand(const Parsed& p, const std::string& op) const {
    if (!p.expr.is_boolean()) {
      fail("expected a boolean operand of '" + op + "' at column " + std::to_string(p.column) + ", found integer '" +
               p.expr.to_string() + "'",
           p.column);
    }
    return p.expr;
  }

  // Runs a constructor, reporting its overflow at the operator's column.
  template <typename Build>
  Expr build(const Token& op, Build&& build_expr) const {
    try {
      return build_expr();
    } catch (const EvalError& e) {
      fail(std::string(e.what()) + " in '" + op.text + "' at column " + std::to_string(op.column), op.column);
    }
  }

  void enter() {
    if (++depth_ > kMaxDepth)
      fail("expression nested too deeply at column " + std::to_string(peek().column), peek().column);
  }

  Parsed parse_or() {
    enter();
    Parsed first = parse_and();
    if (!at_keyword("or")) {
      --depth_;
      return first;
    }
    std::vector<Expr> terms{boolean_operand(first, "or")};
    Token op = peek();
    while (at_keyword("or")) {
      op = advance();
      terms.push_back(boolean_operand(parse_and(), "or"));
    }
    --depth_;
    return {build(op, [&] { return logical_or(terms); }), first.column};
  }

  Parsed parse_and() {
    Parsed first = parse_not();
    if (!at_keyword("and")) return first;
    std::vector<Expr> terms{boolean_operand(first, "and")};
    Token op = peek();
    while (at_keyword("and")) {
      op = advance();
      terms.push_back(boolean_operand(parse_not(), "and"));
    }
    return {build(op, [&] { return logical_and(terms); }), first.column};
  }

  Parsed parse_not() {
    if (!at_keyword("not")) return parse_comparison();
    const Token op = advance();
    enter();
    const Parsed operand = parse_not();
    --depth_;
    const Expr& e = boolean_operand(operand, "not");
    return {build(op, [&] { return logical_not(e); }), op.column};
  }

  Parsed parse_comparison() {
    Parsed lhs = parse_sum();
    static const char* const kComparisons[] = {"==", "!=", "<=", ">=", "<", ">"};
    for (const char* cmp : kComparisons) {
      if (!at(cmp)) continue;
      const Token op = advance();
      const Parsed rhs = parse_sum();
      const Expr& a = integer_operand(lhs, op.text);
      const Expr& b = integer_operand(rhs, op.text);
      return {build(op,
                    [&] {
                      if (op.text == "==") return eq(a, b);
                      if (op.text == "!=") return ne(a, b);
                      if (op.text == "<=") return le(a, b);
                      if (op.text == ">=") return ge(a, b);
                      if (op.text == "<") return lt(a, b);
                      return gt(a, b);
                    }),
              lhs.column};
    }
    return lhs;
  }

  Parsed parse_sum() {
    Parsed lhs = parse_product();
    while (at("+") || at("-")) {
      const Token op = advance();
      const Parsed rhs = parse_product();
      const Expr& a = integer_operand(lhs, op.text);
      const Expr& b = integer_operand(rhs, op.text);
      lhs.expr = build(op, [&] { return op.text == "+" ? a + b : a - b; });
    }
    return lhs;
  }

  Parsed parse_product() {
    Parsed lhs = parse_unary();
    while (at("*")) {
      const Token op = advance();
      const Parsed rhs = parse_unary();
      const Expr& a = integer_operand(lhs, op.text);
      const Expr& b = integer_operand(rhs, op.text);
      lhs.expr = build(op, [&] { return a * b; });
    }
    return lhs;
  }

  Parsed parse_unary() {
    if (!at("-")) return parse_primary();
    const Token op = advance();
    // A literal right after '-' is read as one negative literal, so the printed form of
    // INT64_MIN parses although its magnitude does not fit in int64.
    if (peek().type == TokenType::Integer) return {Expr::constant(literal(advance(), op.column)), op.column};
    enter();
    const Parsed operand = parse_unary();
    --depth_;
    const Expr& e = integer_operand(operand, "-");
    return {build(op, [&] { return -e; }), op.column};
  }

  // The literal's value, negated when `minus_column` (the column of a '-' right before
  // it) is set.
  int64_t literal(const Token& t, std::optional<size_t> minus_column = std::nullopt) const {
    const bool negative = minus_column.has_value();
    const uint64_t limit = negative ? uint64_t{1} << 63 : static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    uint64_t value = 0;
    for (const char ch : t.text) {
      const auto digit = static_cast<uint64_t>(ch - '0');
      if (value > (limit - digit) / 10) {
        const size_t column = minus_column.value_or(t.column);
        fail("integer literal " + std::string(negative ? "-" : "") + t.text + " at column " + std::to_string(column) +
                 " does not fit in 64 bits",
             column);
      }
      value = value * 10 + digit;
    }
    return negative ? static_cast<int64_t>(0 - value) : static_cast<int64_t>(value);
  }

  Parsed parse_primary() {
    const Token& t = peek();
    const size_t column = t.column;
    if (t.type == TokenType::Integer) return {Expr::constant(literal(advance())), column};
    if (at("(")) {
      advance();
      Parsed inner = parse_or();
      expect(")");
      return {inner.expr, column};
    }
    if (t.type == TokenType::Name) {
      if (t.text == "True" || t.text == "False") return {Expr::boolean(advance().text == "True"), column};
      if (std::find(std::begin(kKeywords), std::end(kKeywords), t.text) != std::end(kKeywords))
        fail_expected("an expression");
      const Token name = advance();
      const bool is_function =
          std::find(std::begin(kFunctionNames), std::end(kFunctionNames), name.text) != std::end(kFunctionNames);
      if (!at("(")) {
        if (is_function) fail_expected("'(' after '" + name.text + "'");
        return {Expr::symbol(name.text), column};
      }
      if (!is_function) fail("unknown function '" + name.text + "' at column " + std::to_string(column), column);
      advance();
      const Parsed first = parse_or();
      expect(",");
      const Parsed second = parse_or();
      expect(")");
      const Expr& a = integer_operand(first, name.text);
      const Expr& b = integer_operand(second, name.text);
      return {build(name,
                    [&] {
                      if (name.text == "floordiv") return floordiv(a, b);
                      if (name.text == "mod") return mod(a, b);
                      if (name.text == "min") return min(a, b);
                      return max(a, b);
                    }),
              column};
    }
    fail_expected("an expression");
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

// -----------------------------------------------------------------------------------------
// Symbol

std::string Symbol::to_string() const {
  std::string out =
      name + " in [" + std::to_string(min) + ", " + std::to_string(max) + "] hint " + std::to_string(hint);
  if (multiple_of != 1) out += " multiple_of " + std::to_string(multiple_of);
  return out;
}

bool Symbol::hint_admissible() const {
  return multiple_of >= 1 && min <= hint && hint <= max && hint % multiple_of == 0;
}

Expr range_constraint(const Symbol& symbol) {
  // A multiple_of below 1 declares no admissible value.
  if (symbol.multiple_of < 1) return Expr::boolean(false);
  const Expr s = Expr::symbol(symbol.name);
  std::vector<Expr> terms{ge(s, Expr::constant(symbol.min)), le(s, Expr::constant(symbol.max))};
  if (symbol.multiple_of > 1) terms.push_back(eq(mod(s, Expr::constant(symbol.multiple_of)), Expr::constant(0)));
  return logical_and(terms);
}

// -----------------------------------------------------------------------------------------
// Expr

const ExprNode& Expr::zero_node() {
  static const ExprNode zero(Kind::Constant, 0, std::string(), std::vector<Expr>{});
  return zero;
}

const ExprNode* Expr::node() const { return &n(); }

Expr Expr::constant(int64_t value) { return make_leaf(Kind::Constant, value); }

Expr Expr::boolean(bool value) { return make_leaf(Kind::BoolConstant, value ? 1 : 0); }

Expr Expr::symbol(const std::string& name) {
  if (!is_identifier(name) || is_reserved(name))
    throw std::invalid_argument("invalid symbol name '" + name + "'");
  return make_leaf(Kind::Symbol, 0, name);
}

Expr::Kind Expr::kind() const { return n().kind; }

bool Expr::is_constant() const { return n().kind == Kind::Constant; }

std::optional<int64_t> Expr::as_constant() const {
  if (!is_constant()) return std::nullopt;
  return n().value;
}

std::optional<bool> Expr::as_bool() const {
  if (n().kind != Kind::BoolConstant) return std::nullopt;
  return n().value != 0;
}

bool Expr::is_symbol() const { return n().kind == Kind::Symbol; }

const std::string& Expr::symbol_name() const {
  if (!is_symbol()) throw std::logic_error("symbol_name() of non-symbol '" + to_string() + "'");
  return n().name;
}

int64_t Expr::constant_value() const {
  if (n().kind != Kind::Constant && n().kind != Kind::BoolConstant)
    throw std::logic_error("constant_value() of non-constant '" + to_string() + "'");
  return n().value;
}

const std::vector<Expr>& Expr::operands() const { return n().operands; }

bool Expr::is_boolean() const {
  switch (n().kind) {
    case Kind::Eq:
    case Kind::Ne:
    case Kind::Lt:
    case Kind::Le:
    case Kind::And:
    case Kind::Or:
    case Kind::Not:
    case Kind::BoolConstant: return true;
    default: return false;
  }
}

std::set<std::string> Expr::free_symbols() const {
  std::set<std::string> out;
  std::function<void(const Expr&)> collect = [&](const Expr& e) {
    if (!e.has_symbols()) return;
    if (e.is_symbol()) out.insert(e.symbol_name());
    for (const Expr& op : e.operands()) collect(op);
  };
  collect(*this);
  return out;
}

bool Expr::contains_symbol(const std::string& name) const {
  if (!has_symbols()) return false;
  if (is_symbol()) return n().name == name;
  return std::any_of(operands().begin(), operands().end(), [&](const Expr& op) { return op.contains_symbol(name); });
}

bool Expr::has_symbols() const { return n().has_symbols; }

std::string Expr::to_string() const {
  std::string out;
  print(*this, out);
  return out;
}

bool Expr::operator==(const Expr& o) const {
  if (node_ == o.node_) return true;
  return n().hash == o.n().hash && compare_nodes(n(), o.n()) == 0;
}

bool Expr::operator<(const Expr& o) const { return compare_nodes(n(), o.n()) < 0; }

size_t Expr::hash() const { return n().hash; }

// -----------------------------------------------------------------------------------------
// Constructors

Expr operator+(const Expr& a, const Expr& b) {
  require_integer(a, "+");
  require_integer(b, "+");
  Poly p = to_poly(a);
  add_poly(p, to_poly(b));
  return from_poly(p);
}

Expr operator-(const Expr& a, const Expr& b) {
  require_integer(a, "-");
  require_integer(b, "-");
  Poly p = to_poly(a);
  add_poly(p, scaled(to_poly(b), -1));
  return from_poly(p);
}

Expr operator-(const Expr& a) {
  require_integer(a, "-");
  return from_poly(scaled(to_poly(a), -1));
}

Expr operator*(const Expr& a, const Expr& b) {
  require_integer(a, "*");
  require_integer(b, "*");
  return from_poly(product(to_poly(a), to_poly(b)));
}

Expr operator+(const Expr& a, int64_t b) { return a + Expr::constant(b); }

Expr operator*(int64_t a, const Expr& b) { return Expr::constant(a) * b; }

Expr floordiv(const Expr& a, const Expr& b) {
  require_integer(a, "floordiv");
  require_integer(b, "floordiv");
  const auto divisor = b.as_constant();
  // Division by zero stays a node so that evaluate() reports it.
  if (!divisor || *divisor == 0) return make_node(Kind::FloorDiv, {a, b});
  if (const auto n = a.as_constant()) return Expr::constant(floor_div(*n, *divisor));
  if (*divisor == 1) return a;
  if (*divisor == -1) return -a;
  if (*divisor < 0) return make_node(Kind::FloorDiv, {a, b});
  return floordiv_by_positive(to_poly(a), *divisor);
}

Expr mod(const Expr& a, const Expr& b) {
  require_integer(a, "mod");
  require_integer(b, "mod");
  const auto divisor = b.as_constant();
  if (!divisor || *divisor == 0) return make_node(Kind::Mod, {a, b});
  if (const auto n = a.as_constant()) return Expr::constant(floor_mod(*n, *divisor));
  if (*divisor == 1 || *divisor == -1) return Expr::constant(0);
  if (*divisor < 0) return make_node(Kind::Mod, {a, b});
  return mod_by_positive(to_poly(a), *divisor);
}

namespace {

// a - b when it is a constant, compared in 128 bits (constants at both ends of the int64
// range differ by more than int64 holds). nullopt when it depends on the symbols, or when
// the symbolic difference overflows, in which case min/max simply stays a node.
std::optional<__int128> constant_difference(const Expr& a, const Expr& b) {
  const auto ca = a.as_constant();
  const auto cb = b.as_constant();
  if (ca && cb) return static_cast<__int128>(*ca) - *cb;
  try {
    Poly diff = to_poly(a);
    add_poly(diff, scaled(to_poly(b), -1));
    if (diff.empty() || (diff.size() == 1 && diff.begin()->first.empty())) return constant_term(diff);
  } catch (const EvalError&) {
  }
  return std::nullopt;
}

// min/max: when the operands differ by a constant the larger/smaller is known for every
// value of the symbols (this covers constants and min(x, x)); otherwise the operands are
// ordered, since both are commutative, with a constant last as it is usually written:
// "min(s0, 4)".
Expr extremum(Kind kind, const Expr& a, const Expr& b) {
  require_integer(a, operator_name(kind));
  require_integer(b, operator_name(kind));
  if (const auto difference = constant_difference(a, b)) {
    const bool a_smaller = *difference <= 0;
    return (kind == Kind::Min) == a_smaller ? a : b;
  }
  const bool swap = a.is_constant() || (!b.is_constant() && b < a);
  return swap ? make_node(kind, {b, a}) : make_node(kind, {a, b});
}

}  // namespace

Expr min(const Expr& a, const Expr& b) { return extremum(Kind::Min, a, b); }
Expr max(const Expr& a, const Expr& b) { return extremum(Kind::Max, a, b); }

Expr eq(const Expr& a, const Expr& b) { return comparison(Kind::Eq, a, b); }
Expr ne(const Expr& a, const Expr& b) { return comparison(Kind::Ne, a, b); }
Expr lt(const Expr& a, const Expr& b) { return comparison(Kind::Lt, a, b); }
Expr le(const Expr& a, const Expr& b) { return comparison(Kind::Le, a, b); }
Expr gt(const Expr& a, const Expr& b) { return comparison(Kind::Lt, b, a); }
Expr ge(const Expr& a, const Expr& b) { return comparison(Kind::Le, b, a); }

Expr logical_and(const std::vector<Expr>& terms) { return connective(Kind::And, terms); }
Expr logical_or(const std::vector<Expr>& terms) { return connective(Kind::Or, terms); }

Expr logical_not(const Expr& a) {
  require_boolean(a, "not");
  const auto& ops = a.operands();
  switch (a.kind()) {
    case Kind::BoolConstant: return Expr::boolean(a.constant_value() == 0);
    case Kind::Not: return ops[0];
    // Negated comparisons are comparisons, so a Not node only ever wraps and/or.
    case Kind::Eq: return make_node(Kind::Ne, ops);
    case Kind::Ne: return make_node(Kind::Eq, ops);
    case Kind::Lt: return le(ops[1], ops[0]);
    case Kind::Le: return lt(ops[1], ops[0]);
    default: return make_node(Kind::Not, {a});
  }
}

Expr simplify(const Expr& e) { return rebuild(e, {}); }

Expr substitute(const Expr& e, const std::map<std::string, Expr>& replacements) { return rebuild(e, replacements); }

std::optional<int64_t> evaluate(const Expr& e, const std::map<std::string, int64_t>& values) {
  for (const std::string& name : e.free_symbols()) {
    if (values.count(name) == 0) return std::nullopt;
  }
  return eval_bound(e, values);
}

Expr parse(const std::string& text) { return Parser(text).parse_all(); }

}  // namespace passcheck::sym
