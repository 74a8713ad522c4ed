// The cleanup pass family (specs/passes.md "Cleanup passes"): dead code elimination,
// the canonicalizations (detach, identity views, back-to-back transposes, identity
// slices, view normalization, and canonicalize running them all) and common
// subexpression elimination. Each pass lives in its own <name>_pass.cpp with its
// PassInfo; every one preserves numerics bit for bit and is idempotent. The functions
// are callable directly on a graph (tests, other passes) or through the registry.
#pragma once

#include "framework/check/pass.h"
#include "framework/ir/graph.h"

#include <vector>

namespace passcheck::passes {

// Each pass comes as a pair: the function, and `<name>_pass_info()` returning its
// declaration (name, summary, numerics effect, idempotence) for the registry.

/// dce: erases nodes whose outputs are unused, unless they mutate, communicate, draw
/// random numbers or have other side effects. Stats: erased_nodes.
check::PassResult dce_pass(ir::Graph& graph, const check::PassOptions& options = {});
check::PassInfo dce_pass_info();

/// remove-detach: detach(x) -> x. Stats: erased_nodes, rewired_uses.
check::PassResult remove_detach_pass(ir::Graph& graph, const check::PassOptions& options = {});
check::PassInfo remove_detach_pass_info();

/// remove-identity-view: view / reshape / _unsafe_view / _reshape_alias that keep the
/// input's sizes and strides -> input. Stats: erased_nodes, rewired_uses.
check::PassResult remove_identity_view_pass(ir::Graph& graph, const check::PassOptions& options = {});
check::PassInfo remove_identity_view_pass_info();

/// remove-b2b-transpose: t(t(x)) -> x, transpose(transpose(x, a, b), a, b) -> x.
/// Stats: erased_nodes, rewired_uses.
check::PassResult remove_b2b_transpose_pass(ir::Graph& graph, const check::PassOptions& options = {});
check::PassInfo remove_b2b_transpose_pass_info();

/// remove-identity-slice: slice(x, dim, 0, end >= size, 1) -> x. Stats: erased_nodes,
/// rewired_uses.
check::PassResult remove_identity_slice_pass(ir::Graph& graph, const check::PassOptions& options = {});
check::PassInfo remove_identity_slice_pass_info();

/// normalize-views: view and _unsafe_view -> reshape. Stats: rewritten_nodes.
check::PassResult normalize_views_pass(ir::Graph& graph, const check::PassOptions& options = {});
check::PassInfo normalize_views_pass_info();

/// canonicalize: the five canonicalizations above, in that order. Stats: the sums of
/// theirs, and rounds.
check::PassResult canonicalize_pass(ir::Graph& graph, const check::PassOptions& options = {});
check::PassInfo canonicalize_pass_info();

/// cse: merges nodes computing the same operator on the same arguments, keeping the
/// first. Stats: erased_nodes, rewired_uses.
check::PassResult cse_pass(ir::Graph& graph, const check::PassOptions& options = {});
check::PassInfo cse_pass_info();

namespace detail {
/// The canonicalize steps on a list of candidates (every node of the step's operators,
/// in graph order; null entries skipped) instead of every node; null: every node, as
/// the passes above. Erased candidates become null; normalize-views puts its reshape in
/// the place of the view it replaces. Only without injected faults (a widened rule may
/// take other operators).
check::PassResult remove_detach_on(ir::Graph& graph, const check::PassOptions& options, std::vector<ir::Node*>* nodes);
check::PassResult remove_identity_view_on(ir::Graph& graph, const check::PassOptions& options,
                                          std::vector<ir::Node*>* nodes);
check::PassResult remove_b2b_transpose_on(ir::Graph& graph, const check::PassOptions& options,
                                          std::vector<ir::Node*>* nodes);
check::PassResult remove_identity_slice_on(ir::Graph& graph, const check::PassOptions& options,
                                           std::vector<ir::Node*>* nodes);
check::PassResult normalize_views_on(ir::Graph& graph, const check::PassOptions& options,
                                     std::vector<ir::Node*>* nodes);
}  // namespace detail

/// Registers every pass of this file's family.
void register_cleanup_passes(check::PassRegistry& registry);

}  // namespace passcheck::passes
