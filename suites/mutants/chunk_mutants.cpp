// The chunking mutants: the real chunk and concretize passes with one historical fault
// injected each (bugs 9 and 10 of specs/passes.md).
#include "suites/mutants/ac_mutants.h"
#include "suites/mutants/mutants.h"

namespace passcheck::mutants {

namespace {

check::InjectedFaults widened(const std::string& rule) {
  check::InjectedFaults faults;
  faults.widened_rules.insert(rule);
  return faults;
}

}  // namespace

const std::vector<MutantInfo>& chunk_mutants() {
  static const std::vector<MutantInfo> mutants = {
      {"mutant-concretize-stale-input-symbols", "concretize", 9,
       "concretization leaves the symbolic shapes of graph inputs behind (stale symbols outside node arguments)",
       injected_bug("keep-symbolic-input-meta")},
      {"mutant-concretize-accepts-false-guard", "concretize", 9,
       "concretization does not evaluate the recorded guards, so a false guard goes through",
       injected_bug("skip-guard-validation")},
      {"mutant-concretize-skips-subgraphs", "concretize", 9,
       "concretization substitutes the top graph only, leaving chunk symbols in nested subgraphs",
       injected_bug("skip-subgraphs")},
      // The add in place of cat is the chunk pass's own declared rule, widened to live-outs
      // carrying the chunk dimension: no separate switch is needed.
      {"mutant-chunk-adds-chunk-dim", "chunk", 10,
       "a live-out carrying the chunk dimension is materialized by add instead of cat", widened("materialize-add")},
      {"mutant-chunk-unchained-buffer-update", "chunk", 10,
       "chunk 1's in-place buffer update does not consume chunk 0's result", injected_bug("unchained-buffer-updates")},
  };
  return mutants;
}

}  // namespace passcheck::mutants
