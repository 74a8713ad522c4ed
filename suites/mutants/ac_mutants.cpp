// The AC mutants: the real remat pass with one historical bug injected each (the bugs
// remat declares in PassInfo::injectable_bugs), and bug 4's executor options.
#include "suites/mutants/ac_mutants.h"

#include "suites/mutants/mutants.h"

namespace passcheck::mutants {

const std::vector<MutantInfo>& ac_mutants() {
  static const std::vector<MutantInfo> mutants = {
      {"mutant-remat-ignores-prefer-recompute", "remat", 1,
       "SAC under tracing ignores PREFER_RECOMPUTE: the backward reads the saved forward mm",
       injected_bug("ignore-prefer-recompute")},
      {"mutant-remat-fresh-rng", "remat", 2,
       "a random op is recomputed with fresh randomness in the backward (rng=replay without the saved state)",
       injected_bug("fresh-rng-on-replay")},
      {"mutant-remat-keeps-original", "remat", 3,
       "only the first backward reader is moved to the recomputed value: the original stays alive",
       injected_bug("rewire-first-reader-only")},
      {"mutant-remat-recomputes-twice", "remat", 3, "every backward reader recomputes the node again",
       injected_bug("duplicate-per-reader")},
  };
  return mutants;
}

exec::ExecutorOptions executor_with_autograd_on() {
  exec::ExecutorOptions options;
  options.no_grad = false;
  return options;
}

}  // namespace passcheck::mutants
