// A claim (guard) a pass records about symbolic values: a boolean expression that must
// hold for every admissible value of its symbols. Graphs carry their claims
// (ir::Graph::claims) so they travel through the text format and repro files; the
// prover (framework/sym/prover.h) checks them with Z3. No dependencies beyond sym_expr.h.
#pragma once

#include "framework/ir/sym_expr.h"

#include <string>

namespace passcheck::sym {

struct Claim {
  /// What is claimed, one of: "split_halves" (the two halves of a split add up to the
  /// extent), "cat_extent" (a cat of chunks restores the full extent),
  /// "numel_preserved" (a reshape keeps the element count), "nonnegative" (a size is
  /// >= 0), "assumed_equal" (an equality a rewrite relies on), "partial_sum" (an add
  /// materialization is sound), "guard" (a condition the traced program branched on).
  std::string kind;
  /// Pass that recorded it ("chunk", "concretize", ...).
  std::string pass;
  /// Node or value the claim is about (for messages).
  std::string subject;
  /// Human-readable explanation.
  std::string description;
  /// Boolean expression that must hold for all admissible symbol values.
  Expr condition;

  bool operator==(const Claim& o) const {
    return kind == o.kind && pass == o.pass && subject == o.subject && description == o.description &&
           condition == o.condition;
  }
};

}  // namespace passcheck::sym
