// The collective-fusion mutants: the real fuse-chained-allgathers with one historical
// fault injected each (bugs 6, 7 and 13 of specs/passes.md).
#pragma once

#include "suites/mutants/mutants.h"

namespace passcheck::mutants {

/// mutant-fuse-chained-allgathers-{swapped-groups, skips-identity-proof, shape-stride-identity}.
const std::vector<MutantInfo>& collective_mutants();

/// Bug 13's trap: permute, a copying reshape and a view back end as they started, between
/// a dp and a tp all_gather; upstream's shape-and-stride check takes it for the identity.
inline constexpr const char* kSquareTrap = R"(mesh dp=2, tp=2 rank 0
graph(param %x : f32[2, 4]):
  %ag : f32[4, 4] = _c10d_functional::all_gather_into_tensor(%x, 2, "dp")
  %wait : f32[4, 4] = _c10d_functional::wait_tensor(%ag)
  %p : f32[4, 4]{1, 4} = aten::permute(%wait, [1, 0])
  %r : f32[16] = aten::reshape(%p, [16])
  %v : f32[4, 4] = aten::view(%r, [4, 4])
  %ag2 : f32[8, 4] = _c10d_functional::all_gather_into_tensor(%v, 2, "tp")
  %out : f32[8, 4] = _c10d_functional::wait_tensor(%ag2)
  return (%out)
)";

}  // namespace passcheck::mutants
