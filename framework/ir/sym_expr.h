// Symbolic integer expressions: the shapes and integer arguments of a graph traced with
// a symbolic dimension (framework/sym/symbolize.h), and the guards passes record about
// them (framework/ir/sym_claim.h). Depends on the standard library only, so the IR can
// hold expressions without pulling in Z3 or ATen.
//
// Expressions are immutable trees shared by pointer. Every constructor returns the
// canonical form (simplify() is idempotent and constructors already apply it):
// - sums are flat, constants folded, like terms merged (2*s + s -> 3*s), terms ordered
//   by decreasing degree with the constant last ("s0*s1 + 2*s0 + 1");
// - products are flat with one leading integer coefficient, factors ordered, and
//   distributed over sums (2*(s + 1) -> 2*s + 2, s*(t + 1) -> s*t + s), so expressions
//   that are equal as polynomials are equal;
// - floordiv/mod/min/max fold constants and apply rules that hold for every integer
//   value of the symbols (e.g. floordiv(4*s, 2) -> 2*s, floordiv(2*s + 5, 2) -> s + 2,
//   floordiv(2*s + 2, 4) -> floordiv(s + 1, 2), floordiv(floordiv(s, 2), 3) ->
//   floordiv(s, 6), mod(4*s + 3, 2) -> 1, mod(s - 1, 2) -> mod(s + 1, 2),
//   min(s + 1, s) -> s); a rule that needs a range is not applied here (Z3 decides
//   those). A zero divisor stays a node for evaluate() to report;
// - comparisons fold when the difference of their sides is a constant (eq(2*s, s + s)
//   -> True) and are otherwise stored with positive coefficients on both sides and the
//   common factor divided out ("s0 < 4", "s0 >= 2", "s0 == s1 + 2");
// - and/or are flat, sorted and deduplicated, drop True/False where neutral and fold
//   where absorbing or when an operand's negation is also present; not() of a
//   comparison is the opposite comparison, so a Not node only ever wraps and/or.
// Integer semantics are Python's: floordiv rounds toward negative infinity and mod has
// the sign of the divisor (what PyTorch's SymInt uses).
// Constructors throw EvalError when a coefficient or folded constant leaves int64, and
// std::invalid_argument when an operand has the wrong type (an integer given to and/or,
// a comparison given to +).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace passcheck::sym {

/// A symbol's declaration: the values it may take and the value used to run the graph.
struct Symbol {
  std::string name;
  int64_t min = 1;
  int64_t max = 1;
  /// Concrete value the traced graph was recorded at and concretization substitutes.
  int64_t hint = 1;
  /// Every admissible value is a multiple of this (2 for a dimension split in halves).
  int64_t multiple_of = 1;
  bool operator==(const Symbol& o) const {
    return name == o.name && min == o.min && max == o.max && hint == o.hint && multiple_of == o.multiple_of;
  }
  /// "s0 in [2, 4] hint 4 multiple_of 2" (multiple_of omitted when 1).
  std::string to_string() const;
  /// True when hint lies in [min, max] and is a multiple of multiple_of.
  bool hint_admissible() const;
};

class ExprNode;

class Expr {
 public:
  enum class Kind : uint8_t {
    Constant,
    Symbol,
    Add,       // n-ary
    Mul,       // n-ary
    FloorDiv,  // binary
    Mod,       // binary
    Min,       // binary
    Max,       // binary
    Eq,
    Ne,
    Lt,
    Le,        // comparisons; Gt/Ge are built as swapped Lt/Le
    And,       // n-ary
    Or,        // n-ary
    Not,
    BoolConstant
  };

  /// The constant 0 (no node of its own: default-constructed expressions, one in every
  /// graph argument, cost no allocation and no reference count).
  Expr() = default;
  static Expr constant(int64_t value);
  static Expr boolean(bool value);
  /// Throws std::invalid_argument unless `name` parses back as a symbol (an identifier
  /// that is not a keyword or function name).
  static Expr symbol(const std::string& name);

  Kind kind() const;
  bool is_constant() const;  // integer constant
  std::optional<int64_t> as_constant() const;
  std::optional<bool> as_bool() const;  // BoolConstant only
  bool is_symbol() const;
  const std::string& symbol_name() const;  // Symbol only
  int64_t constant_value() const;          // Constant or BoolConstant (0/1)
  const std::vector<Expr>& operands() const;
  /// True for comparisons, connectives and boolean constants.
  bool is_boolean() const;

  std::set<std::string> free_symbols() const;
  bool contains_symbol(const std::string& name) const;
  bool has_symbols() const;

  /// Canonical text: "2*s0 + 1", "floordiv(s0, 2)", "mod(s0, 2) == 0", "min(s0, 4)",
  /// "(s0 <= 4) and (s0 >= 2)". parse(e.to_string()) == e.
  std::string to_string() const;

  /// Structural equality of canonical forms (so 2*s == s + s).
  bool operator==(const Expr& o) const;
  bool operator!=(const Expr& o) const { return !(*this == o); }
  /// Total order on canonical forms (for sorting terms and use in std::map).
  bool operator<(const Expr& o) const;
  size_t hash() const;

  const ExprNode* node() const;
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}

 private:
  static const ExprNode& zero_node();
  const ExprNode& n() const { return node_ ? *node_ : zero_node(); }
  std::shared_ptr<const ExprNode> node_;  // null: the constant 0
};

Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator-(const Expr& a);
Expr operator*(const Expr& a, const Expr& b);
Expr operator+(const Expr& a, int64_t b);
Expr operator*(int64_t a, const Expr& b);
Expr floordiv(const Expr& a, const Expr& b);
Expr mod(const Expr& a, const Expr& b);
Expr min(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);
Expr eq(const Expr& a, const Expr& b);
Expr ne(const Expr& a, const Expr& b);
Expr lt(const Expr& a, const Expr& b);
Expr le(const Expr& a, const Expr& b);
Expr gt(const Expr& a, const Expr& b);
Expr ge(const Expr& a, const Expr& b);
Expr logical_and(const std::vector<Expr>& terms);
Expr logical_or(const std::vector<Expr>& terms);
Expr logical_not(const Expr& a);

/// Re-canonicalizes (constructors already do; useful after building trees by hand).
Expr simplify(const Expr& e);
/// Replaces symbols by expressions, re-canonicalizing.
Expr substitute(const Expr& e, const std::map<std::string, Expr>& replacements);
/// Value with every symbol bound (booleans give 0/1); nullopt when a symbol is unbound.
/// Throws EvalError on division or mod by zero and on int64 overflow. Every operand of
/// and/or is evaluated (their operands are sorted, so short-circuiting would depend on
/// the canonical order). Canonical forms may drop a division by zero of the expression
/// they were built from (0*floordiv(s, 0) -> 0), never add one.
std::optional<int64_t> evaluate(const Expr& e, const std::map<std::string, int64_t>& values);

class EvalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Error from parse(): `column` is 1-based within the parsed text.
class ParseError : public std::runtime_error {
 public:
  ParseError(const std::string& message, size_t column)
      : std::runtime_error(message), column(column) {}
  size_t column;
};

/// Parses the to_string() syntax: integers, symbol names ([A-Za-z_][A-Za-z0-9_]*),
/// + - * (binary and unary minus), floordiv(a, b), mod(a, b), min(a, b), max(a, b),
/// == != < <= > >=, and, or, not, True, False, parentheses. Precedence (low to high):
/// or, and, not, comparisons, + -, *. Comparisons do not chain. Errors name the column
/// and what was found: "expected ')' at column 7, found 'x'", "unknown function 'foo'
/// at column 1", literals beyond int64, operands of the wrong type.
Expr parse(const std::string& text);

/// Constraint that every admissible value of `symbol` satisfies (range and multiple):
/// "(mod(s0, 2) == 0) and (s0 >= 2) and (s0 <= 64)"; False when multiple_of < 1.
Expr range_constraint(const Symbol& symbol);

}  // namespace passcheck::sym

template <>
struct std::hash<passcheck::sym::Expr> {
  size_t operator()(const passcheck::sym::Expr& e) const { return e.hash(); }
};
