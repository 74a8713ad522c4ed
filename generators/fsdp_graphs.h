// RapidCheck generators of the per-rank graph shapes the FSDP and placement passes rewrite,
// as graph text: FSDP unshard chains (a parameter shard, an optional dtype cast, an
// all_gather over dp and its wait, then a random chain of single-input ops such as t,
// permute, view, slice, casts, add(w, w), sometimes cut short by a second reader or a
// second input) and alias round trips (a value, aliases of it in another placement, and
// consumers that each want some placement at every slot they read). Every choice shrinks
// towards fewer parameters, shorter chains and the first op of each list.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <string>

namespace passcheck::gen {

/// A forward per-rank graph (`mesh dp=D rank r`) with 1-3 FSDP-gathered parameters.
rc::Gen<std::string> arbitrary_fsdp_chain_graph();

/// A per-rank graph on a 2-D mesh with aliases of one input and consumers wanting
/// placements (`#{wants=[...]}`) at their operand slots.
rc::Gen<std::string> arbitrary_alias_graph();

/// The `index`-th graph of a fixed sequence (seeded), for campaigns that count cases.
std::string fsdp_chain_graph_for_seed(uint64_t seed);
std::string alias_graph_for_seed(uint64_t seed);

}  // namespace passcheck::gen
