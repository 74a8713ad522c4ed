// The logical index map of a chain of view operations, and the claim that it is the
// identity. For every index of the chain's last output the map gives the index of the
// chain's source it reads: permute/transpose/t permute coordinates, view/reshape
// linearize row-major over the output sizes and delinearize over the input sizes
// (whether or not they copy: the map is about values, not memory), expand maps
// broadcast dims to 0, unsqueeze/squeeze drop/insert unit coordinates. The claim says,
// for every index in bounds and every admissible value of the graph's symbols, that the
// map sends each index to itself and that the two ends have equal shapes: a fact about
// values that comparing the ends' shapes and strides cannot establish (a permute, a
// copying reshape and a view back have the shape and strides of their source but move
// data). The prover (framework/sym/prover.h) decides it.
#pragma once

#include "framework/ir/graph.h"

#include <optional>
#include <string>
#include <vector>

namespace passcheck::passes::collectives {

/// Views the index map models (aten:: ops, overloads included).
bool is_modeled_view(const ir::Node& node);

/// True when `node` reorders dimensions for real: t on 2 dims, transpose(a, b) with
/// a != b, or a permute that is not the identity permutation.
bool is_real_reorder(const ir::Node& node);

/// The index map of a chain: for each index variable of the last output (named
/// "i0", "i1", ...), the expression of the source coordinate it reads.
struct ViewIndexMap {
  std::vector<sym::BoundIndex> indices;  ///< one per dim of the last output
  std::vector<sym::Expr> source_coordinates;  ///< one per dim of the source
};

/// Composes the map of `chain` (nodes in order, each reading the previous one's output
/// through argument 0, the first reading `source`). Returns nullopt and sets `why_not`
/// when a node is not a modeled view or its arguments/metadata cannot be read.
std::optional<ViewIndexMap> compose_view_chain(const ir::Value& source, const std::vector<const ir::Node*>& chain,
                                               std::string& why_not);

/// The claim (kind "view_identity", quantified over the map's indices) that the chain
/// is the identity on `source`: equal shapes, and every index maps to itself.
sym::Claim view_identity_claim(const ir::Value& source, const ir::Value& end, const ViewIndexMap& map,
                               const std::string& pass, const std::string& subject);

}  // namespace passcheck::passes::collectives
