// A claim (guard) a pass records about symbolic values: a boolean expression that must
// hold for every admissible value of its symbols. Graphs carry their claims
// (ir::Graph::claims) so they travel through the text format and repro files; the
// prover (framework/sym/prover.h) checks them with Z3. A claim may also quantify over
// index variables local to it (BoundIndex: "for every i0 in [0, n)"), which is how a
// pass states a fact about every element of a tensor (fuse-chained-allgathers claims a
// view chain maps every index to itself). No dependencies beyond sym_expr.h.
#pragma once

#include "framework/ir/sym_expr.h"

#include <set>
#include <string>
#include <vector>

namespace passcheck::sym {

/// An index variable a claim quantifies over universally: every integer in [0, bound).
/// The bound may mention the graph's symbols; the name is local to the claim and must
/// not be the name of a declared symbol.
struct BoundIndex {
  std::string name;
  /// Exclusive upper bound; the lower bound is always 0.
  Expr bound;
  bool operator==(const BoundIndex& o) const { return name == o.name && bound == o.bound; }
};

struct Claim {
  /// What is claimed, one of: "split_halves" (the two halves of a split add up to the
  /// extent), "cat_extent" (a cat of chunks restores the full extent),
  /// "numel_preserved" (a reshape keeps the element count), "nonnegative" (a size is
  /// >= 0), "assumed_equal" (an equality a rewrite relies on), "partial_sum" (an add
  /// materialization is sound), "guard" (a condition the traced program branched on),
  /// "view_identity" (a chain of views reads every element at its own index).
  std::string kind;
  /// Pass that recorded it ("chunk", "concretize", ...).
  std::string pass;
  /// Node or value the claim is about (for messages).
  std::string subject;
  /// Human-readable explanation.
  std::string description;
  /// Boolean expression that must hold for all admissible symbol values (and, when
  /// `indices` is not empty, for all values of the indices in their ranges).
  Expr condition;
  /// Index variables the condition is quantified over (empty for a plain claim).
  std::vector<BoundIndex> indices;

  /// Names of the indices.
  std::set<std::string> index_names() const {
    std::set<std::string> names;
    for (const BoundIndex& i : indices) names.insert(i.name);
    return names;
  }
  /// The graph symbols the claim mentions: the condition's free symbols that are not
  /// indices, and the symbols of the index bounds.
  std::set<std::string> symbols() const {
    const std::set<std::string> bound = index_names();
    std::set<std::string> names;
    for (const std::string& s : condition.free_symbols())
      if (!bound.count(s)) names.insert(s);
    for (const BoundIndex& i : indices)
      for (const std::string& s : i.bound.free_symbols()) names.insert(s);
    return names;
  }
  /// Text form of the quantifier: "forall(i0 < 8, i1 < s0)", "" without indices.
  std::string quantifier_text() const {
    if (indices.empty()) return "";
    std::string out = "forall(";
    for (size_t k = 0; k < indices.size(); ++k)
      out += (k ? ", " : "") + indices[k].name + " < " + indices[k].bound.to_string();
    return out + ")";
  }

  bool operator==(const Claim& o) const {
    return kind == o.kind && pass == o.pass && subject == o.subject && description == o.description &&
           condition == o.condition && indices == o.indices;
  }
};

}  // namespace passcheck::sym
