// Executable graphs built around the situations in which a cleanup pass must tell a
// rewrite from a trap: a pure op repeated after an in-place write to its input, two
// identical random draws, an unused draw or RNG-state swap before a later draw, views
// and reshapes that keep the sizes but not the strides, slices with partial or
// non-constant bounds, transposes whose inner half has other users, near-duplicates
// that differ only in a constant, values without metadata, asserts, and so on. Traced
// programs rarely contain these, so without them the cleanup passes' guards go
// unexercised. Each case draws a few situations ("motifs") with random sizes and
// variants and writes them as one graph text, so every value carries the metadata the
// executor checks; every result that a wrong rewrite would change is a graph output.
#pragma once

#include "framework/ir/graph.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace passcheck::gen {

struct SituationCase {
  std::shared_ptr<ir::Graph> graph;
  uint64_t input_seed = 0;  ///< exec::make_inputs seed
  int64_t int_high = 2;     ///< exec::InputOptions::int_high
  std::string description;  ///< the motifs drawn, with their variants
};

/// The names of the motifs a case draws from.
const std::vector<std::string>& cleanup_motifs();

/// The case for `seed` (deterministic): `motifs` motifs drawn from cleanup_motifs().
SituationCase generate_cleanup_situation(uint64_t seed, int motifs = 3);

/// The graph text of the case for `seed`, before parsing (for reading and for tests).
std::string cleanup_situation_text(uint64_t seed, int motifs = 3, std::string* description = nullptr);

}  // namespace passcheck::gen
