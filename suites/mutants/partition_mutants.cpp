// The partitioner mutants (see partition_mutants.h): each is a real pass run with one of
// the injectable bugs it declares.
#include "suites/mutants/partition_mutants.h"

namespace passcheck::mutants {

std::vector<MutantInfo> partition_mutants() {
  std::vector<MutantInfo> out;
  out.push_back(MutantInfo{"mutant-partition-save-all-ignores-multi-output-tags", "partition-save-all", 8,
                           "the second partition ignores ap_must_save on multi-output producers and recomputes them, "
                           "so it saves differently from the first (double recomputation)",
                           injected_bug("ignore-multi-output-tags")});
  out.push_back(MutantInfo{"mutant-cse-drops-duplicate-metadata", "cse", 16,
                           "cse keeps the first of two duplicates without merging metadata, so an ap_must_save (or "
                           "recompute policy) only the later one carried is lost and the second partition saves less",
                           injected_bug("drop-duplicate-metadata")});
  out.push_back(MutantInfo{"mutant-partition-min-cut-budget-fallback-to-plain-cut", "partition-min-cut", 0,
                           "when no number of recomputed matmuls fits memory-budget, min-cut falls back to the plain "
                           "cut rather than the cut that saves least, so a smaller budget can save more bytes",
                           injected_bug("budget-fallback-to-plain-cut")});
  out.push_back(MutantInfo{"mutant-partition-min-cut-recomputes-cpu-attention", "partition-min-cut", 0,
                           "min-cut bans only the classic compute-intensive list, so the attention kernel PyTorch "
                           "dispatches to on the CPU is recomputed in the backward (found on torchtitan's llama3)",
                           injected_bug("recompute-cpu-attention")});
  return out;
}

}  // namespace passcheck::mutants
