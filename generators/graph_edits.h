// Random edits of a graph through the IR API, some harmless and some that break what the
// verifier checks (a node moved above an operand's definition, an operand pointed at a
// later value, a forward node after the backward, an argument of the wrong kind, a
// collective's wait erased, ...): the changes a buggy pass can make. The incremental
// verifier's property holds it to the full verifier over these edits.
#pragma once

#include "framework/ir/graph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace passcheck::gen {

/// Applies `count` edits drawn from `seed` to `graph`; returns one line per edit made
/// ("move %a before %b", ...), so a failing case says what was done.
std::vector<std::string> apply_random_edits(ir::Graph& graph, uint64_t seed, int count);

}  // namespace passcheck::gen
