// The chunking mutants: the real chunk and concretize passes with one historical fault
// injected each (bugs 9 and 10 of specs/passes.md).
#include "suites/mutants/ac_mutants.h"

#include "passes/chunk/chunk_passes.h"
#include "suites/mutants/decision_mutants_ac.h"

namespace passcheck::mutants {

const std::vector<MutantInfo>& chunk_mutants() {
  static const std::vector<MutantInfo> mutants = {
      {"mutant-concretize-stale-input-symbols", "concretize", 9,
       "concretization leaves the symbolic shapes of graph inputs behind (stale symbols outside node arguments)"},
      {"mutant-concretize-accepts-false-guard", "concretize", 9,
       "concretization does not evaluate the recorded guards, so a false guard goes through"},
      {"mutant-chunk-adds-chunk-dim", "chunk", 10,
       "a live-out carrying the chunk dimension is materialized by add instead of cat"},
      {"mutant-chunk-unchained-buffer-update", "chunk", 10,
       "chunk 1's in-place buffer update does not consume chunk 0's result"},
  };
  return mutants;
}

void register_chunk_mutants(check::PassRegistry& registry) {
  auto add = [&](const MutantInfo& m, check::PassFunction run) {
    check::PassInfo info = registry.get(m.replaces).info;
    info.name = m.pass;
    info.summary = "MUTANT (bug " + std::to_string(m.historical_bug) + "): " + m.description;
    registry.add(info, std::move(run));
  };
  const auto& m = chunk_mutants();
  auto concretize_with = [](passes::ConcretizeBehaviour b) {
    return [b](ir::Graph& g, const check::PassOptions& o) { return passes::concretize_pass_with(g, o, b); };
  };
  auto chunk_with = [](passes::ChunkBehaviour b) {
    return [b](ir::Graph& g, const check::PassOptions& o) { return passes::chunk_pass_with(g, o, b); };
  };
  passes::ConcretizeBehaviour stale, accepts;
  stale.substitute_input_metadata = false;
  accepts.validate_guards = false;
  passes::ChunkBehaviour adds, unchained;
  adds.cat_chunk_dim_live_outs = false;
  unchained.chain_buffer_mutations = false;
  add(m[0], concretize_with(stale));
  add(m[1], concretize_with(accepts));
  add(m[2], chunk_with(adds));
  add(m[3], chunk_with(unchained));
  register_chunk_decision_mutants(registry);
}

}  // namespace passcheck::mutants
