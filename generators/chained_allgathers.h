// Random per-rank graphs of chained all_gathers for fuse-chained-allgathers: a mesh of
// two or three dims (sizes 2-3), a shard gathered over one dim, a chain of views (an
// identity chain built from moves and their inverses, a chain that moves data and ends
// where it started, the square trap permute -> reshape -> view, or none), then gathered
// over another dim; plus the situations the pass must refuse (a shared wait or chain
// value, a non-view in the chain, no reorder, the same group twice, a first collective
// that is no all_gather, options that give no group in the chain's rank order). Each
// case carries the pass options its chain needs; without a subgroup order the pass
// assumes a descending chain (upstream's contract), so such cases are descending.
// The property (chained_allgathers_violations): every claim the pass recorded is proved
// by Z3, and the fused graph computes the same bits as the original on every rank of
// the sim mesh.
#pragma once

#include "framework/check/pass.h"

#include <cstdint>
#include <string>
#include <vector>

namespace passcheck::gen {

struct ChainedGatherCase {
  std::string mesh;        ///< "a=2,b=3"
  std::string graph_text;  ///< the per-rank graph (rank 0 on its mesh line; every rank runs it)
  std::string options;     ///< "{subgroup-order=...,column-major-group=...}" or ""
  std::vector<int64_t> input_sizes;
  std::string description;  ///< what was generated, for failure messages
};

/// The case for `seed` (deterministic).
ChainedGatherCase generate_chained_allgathers(uint64_t seed);

/// Runs `pass` (fuse-chained-allgathers or one of its mutants) of `registry` with the
/// case's options, then checks: every claim on the result is proved, and the result and
/// the original agree bit for bit on every rank of the sim mesh. Returns the violations
/// (empty: the case holds). `fused` (optional) is set when the pass changed the graph.
std::vector<std::string> chained_allgathers_violations(const ChainedGatherCase& c, const std::string& pass,
                                                       const check::PassRegistry& registry, bool* fused = nullptr);

}  // namespace passcheck::gen
