// Checks claims with Z3 for every admissible value of their symbols (each symbol's
// range and multiple_of from its declaration). A claim is proved when the negation of
// its condition is unsatisfiable under the symbol constraints, refuted when Z3 finds a
// model (the counterexample), and unknown on timeout or an unsupported term: unknown is
// never counted as proved.
//
// A claim with indices (Claim::indices) holds when the condition holds for every index
// in [0, bound) as well: the indices are existentially quantified in the negation, so a
// refutation names both the symbol values and the indices where the condition fails.
//
// Only the symbols the claim mentions are constrained (a declaration with no admissible
// value makes a claim over it unknown instead of vacuously proved). floordiv and mod
// follow Python's semantics; a claim holds only where every divisor in it is nonzero, so
// a divisor that can be zero refutes it. Every counterexample is re-checked with
// evaluate() before it is reported; one that does not hold up makes the claim unknown.
#pragma once

#include "framework/ir/sym_claim.h"

#include <map>
#include <string>
#include <vector>

namespace passcheck::sym {

enum class Verdict { Proved, Refuted, Unknown };
const char* to_string(Verdict verdict);

struct ProveOptions {
  /// Time limit per claim; 0 for none. Enforced by interrupting Z3 from a watchdog
  /// thread (Z3 4.8.12's own timeout can deadlock).
  unsigned timeout_ms = 5000;
};

struct ClaimResult {
  Claim claim;
  Verdict verdict = Verdict::Unknown;
  /// Refuted: symbol values (all admissible), and for a claim with indices the index
  /// values (each in its range), for which the condition is false.
  std::map<std::string, int64_t> counterexample;
  /// Unknown: why (Z3 reason, "undeclared symbol s1", ...). Refuted by a zero divisor:
  /// "division by zero: s1 - 2 is 0".
  std::string reason;
  double seconds = 0;
  /// "refuted: cat_extent of %x (chunk): <description> [<condition>] counterexample
  /// s0=3, s1=4", with " (<reason>)" appended when there is one.
  std::string format() const;
};

struct ProofReport {
  /// One per claim, in order; a claim identical to an earlier one (same kind and
  /// condition) shares that one's verdict, with seconds 0.
  std::vector<ClaimResult> results;
  /// How many claims were identical to an earlier one and not proved again.
  size_t duplicates_merged = 0;
  size_t count(Verdict verdict) const;
  bool all_proved() const;
  double total_seconds() const;
  double max_seconds() const;
  /// One line per refuted/unknown claim, then "N claims: P proved, R refuted, U unknown
  /// in T ms (max M ms per claim)", then "; D identical claims proved once" when D > 0.
  std::string format() const;
};

/// Checks one claim. Symbols in the claim that are not declared make it unknown.
ClaimResult prove(const Claim& claim, const std::vector<Symbol>& symbols, const ProveOptions& options = {});
/// Proves each distinct (kind, condition) once; identical claims share the verdict.
ProofReport prove_all(const std::vector<Claim>& claims, const std::vector<Symbol>& symbols,
                      const ProveOptions& options = {});

/// Z3 version string ("4.8.12").
std::string z3_version();

}  // namespace passcheck::sym
