// Small rewriting helpers the cleanup passes share: reading constant schema arguments
// (with schema defaults for omitted trailing ones) and forwarding a single-output node
// to a value it is equivalent to.
#pragma once

#include "framework/check/pass.h"
#include "framework/ir/graph.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace passcheck::passes::detail {

/// What an Int-or-None schema argument holds, when it is a constant.
struct IntArg {
  bool constant = false;  ///< false when it is a graph value (symbolic) or another kind
  std::optional<int64_t> value;  ///< nullopt for None
};

/// Argument `i` of `node` as an Int-or-None constant; `fallback` when omitted.
inline IntArg int_arg(const ir::Node& node, size_t i, std::optional<int64_t> fallback) {
  if (i >= node.num_args()) return {true, fallback};
  const ir::Arg& a = node.arg(i);
  if (a.kind == ir::Arg::Kind::None) return {true, std::nullopt};
  if (a.kind == ir::Arg::Kind::Int) return {true, a.i};
  return {false, std::nullopt};
}

/// Tensor operand in argument 0 (the `self` of every op the cleanup passes rewrite).
inline ir::Value* self_operand(const ir::Node& node) {
  if (node.num_args() == 0 || !node.arg(0).is_value()) return nullptr;
  return node.arg(0).value;
}

/// Dimension `dim` wrapped into [0, rank), or nullopt when out of range.
inline std::optional<int64_t> wrap_dim(int64_t dim, int64_t rank) {
  int64_t d = dim < 0 ? dim + rank : dim;
  if (d < 0 || d >= rank) return std::nullopt;
  return d;
}

/// Sends every use of `node`'s single output to `replacement` and erases `node`.
/// Returns the number of uses rewired.
inline int64_t forward_and_erase(ir::Graph& graph, ir::Node* node, ir::Value* replacement) {
  ir::Value* out = node->output(0);
  int64_t uses = static_cast<int64_t>(out->uses().size());
  out->replace_all_uses_with(replacement);
  graph.erase(node);
  return uses;
}

/// Result of a rewrite that erased `erased` nodes and rewired `rewired` uses.
inline check::PassResult rewrite_result(int64_t erased, int64_t rewired) {
  check::PassResult result;
  result.changed = erased > 0;
  result.stats["erased_nodes"] = erased;
  result.stats["rewired_uses"] = rewired;
  return result;
}

/// Candidate nodes of a canonicalize step, in graph order (canonicalize_pass.cpp); an
/// entry the step erased becomes null.
using NodeList = std::vector<ir::Node*>;

/// The shape of every "x-op(x) is just x" rewrite: each single-output node for which
/// `replacement_for` returns a value (it sees nodes in order, so a chain collapses in
/// one run) is forwarded to that value and erased, counting one firing of `rule`.
/// `replacement_for` counts its own refusals through the Decisions it is given.
/// Reports changed, erased_nodes, rewired_uses and the decisions. With `candidates`,
/// only those nodes are seen (every other node must be one `replacement_for` leaves
/// alone without a decision); erased ones are set to null there.
inline check::PassResult forward_nodes(ir::Graph& graph, const check::PassOptions& options, const std::string& rule,
                                       const std::function<ir::Value*(ir::Node&, check::Decisions&)>& replacement_for,
                                       NodeList* candidates = nullptr) {
  int64_t erased = 0, rewired = 0;
  check::PassResult decisions;
  check::Decisions d(decisions, options);
  auto visit = [&](ir::Node* n) {
    if (n->num_outputs() != 1) return false;
    ir::Value* replacement = replacement_for(*n, d);
    if (replacement == nullptr) return false;
    rewired += forward_and_erase(graph, n, replacement);
    ++erased;
    return true;
  };
  if (candidates == nullptr) {
    for (ir::Node* n : graph.nodes()) visit(n);
  } else {
    for (ir::Node*& n : *candidates)
      if (n != nullptr && visit(n)) n = nullptr;
  }
  d.fire(rule, erased);
  check::PassResult result = rewrite_result(erased, rewired);
  result.rules_fired = std::move(decisions.rules_fired);
  result.guards_refused = std::move(decisions.guards_refused);
  return result;
}

/// Adds `other`'s decision counts to `into` (passes built from other passes).
inline void add_decisions(check::PassResult& into, const check::PassResult& other, const std::string& prefix = "") {
  for (const auto& [k, v] : other.rules_fired) into.rules_fired[prefix + k] += v;
  for (const auto& [k, v] : other.guards_refused) into.guards_refused[prefix + k] += v;
}

}  // namespace passcheck::passes::detail
