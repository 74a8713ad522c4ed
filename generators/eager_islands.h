// Programs with eager islands: a generated training step (generate_case) with work added
// to its forward that a CUDA graph cannot hold — a host read of a forward value
// (aten::_local_scalar_dense of its sum, which then scales it) and a data-dependent shape
// (aten::nonzero of its positive entries, counted) — each feeding a new graph output. The
// cudagraph pass must leave them to eager and capture around them; replays over several
// calls must still equal the graph run directly. A campaign whose pipeline has a pass
// declaring the guards data-dependent-scalar or data-dependent-shape (the cudagraph pass,
// its mutants) draws every other program case from here.
#pragma once

#include "generators/program_case.h"

#include <cstdint>

namespace passcheck::gen {

/// generate_case(seed) with one forward value chosen by `seed` given a host read, a
/// data-dependent shape, or both (also chosen by `seed`). A program with no contiguous
/// f32 forward value is returned as generated.
GeneratedCase generate_eager_island_case(uint64_t seed);

}  // namespace passcheck::gen
