// The collective-fusion mutants (collective_mutants.h). Each injects a bug the pass
// declares in PassInfo::injectable_bugs; the suites catch 6 by running the fused graph on
// a mesh (the wrong flattened group orders the row blocks differently), 7 and 13 by the
// recorded identity claim, which Z3 refutes, and by running the fused graph.
#include "suites/mutants/collective_mutants.h"

#include "suites/mutants/mutants.h"

namespace passcheck::mutants {

const std::vector<MutantInfo>& collective_mutants() {
  static const std::vector<MutantInfo> mutants = {
      {"mutant-fuse-chained-allgathers-swapped-groups", "fuse-chained-allgathers", 6,
       "the row-major and column-major flattened groups are swapped: a dp-then-tp chain gathers over dp_tp",
       injected_bug("swap-flattened-groups")},
      {"mutant-fuse-chained-allgathers-skips-identity-proof", "fuse-chained-allgathers", 7,
       "a view chain with a reorder is taken as the identity without a proof (permute[1,0] then [0,1] accepted)",
       injected_bug("skip-identity-proof")},
      {"mutant-fuse-chained-allgathers-shape-stride-identity", "fuse-chained-allgathers", 13,
       "a view chain is the identity when its ends have equal shape and strides (upstream's check: "
       "permute -> reshape -> view back on a square tensor accepted)",
       injected_bug("shape-stride-identity")},
  };
  return mutants;
}

}  // namespace passcheck::mutants
