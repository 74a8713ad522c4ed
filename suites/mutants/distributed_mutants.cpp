// The FSDP, placement and scheduling mutants (distributed_mutants.h).
#include "suites/mutants/distributed_mutants.h"

#include "suites/mutants/mutants.h"

namespace passcheck::mutants {

const std::vector<MutantInfo>& distributed_mutants() {
  static const std::vector<MutantInfo> mutants = {
      {"mutant-force-recompute-fsdp-tags-only-slice", "force-recompute-fsdp-all-gather", 5,
       "only the slice after the wait is tagged, not the permute chain: the transposed gathered weight is saved",
       injected_bug("tag-only-slice-after-wait")},
      {"mutant-eliminate-alias-rewires-third-placement", "eliminate-alias-round-trips", 12,
       "a consumer that wanted a third placement is rewired to the alias's producer", injected_bug("rewire-third-placement")},
      {"mutant-cap-compute-reorders-before-cycle-check", "cap-compute-batch-size", 14,
       "the graph is reordered in place before the cycle is noticed; the fallback keeps an invalid order",
       injected_bug("reorder-in-place-before-cycle-check")},
  };
  return mutants;
}

}  // namespace passcheck::mutants
