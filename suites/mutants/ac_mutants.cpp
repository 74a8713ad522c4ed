// The AC mutants: the real remat pass with one historical fault injected each.
#include "suites/mutants/ac_mutants.h"

#include "passes/ac/ac_passes.h"
#include "suites/mutants/cleanup_mutants.h"
#include "suites/mutants/decision_mutants_ac.h"

namespace passcheck::mutants {

const std::vector<MutantInfo>& ac_mutants() {
  static const std::vector<MutantInfo> mutants = {
      {"mutant-remat-ignores-prefer-recompute", "remat", 1,
       "SAC under tracing ignores PREFER_RECOMPUTE: the backward reads the saved forward mm"},
      {"mutant-remat-fresh-rng", "remat", 2,
       "a random op is recomputed with fresh randomness in the backward (rng=replay without the saved state)"},
      {"mutant-remat-keeps-original", "remat", 3,
       "only the first backward reader is moved to the recomputed value: the original stays alive"},
      {"mutant-remat-recomputes-twice", "remat", 3, "every backward reader recomputes the node again"},
  };
  return mutants;
}

void register_ac_mutants(check::PassRegistry& registry) {
  const check::RegisteredPass& real = registry.get("remat");
  auto add = [&](const MutantInfo& m, passes::RematBehaviour behaviour) {
    check::PassInfo info = real.info;
    info.name = m.pass;
    info.summary = "MUTANT (bug " + std::to_string(m.historical_bug) + "): " + m.description;
    registry.add(info, [behaviour](ir::Graph& g, const check::PassOptions& o) {
      return passes::remat_pass_with(g, o, behaviour);
    });
  };
  passes::RematBehaviour ignores_prefer, fresh_rng, keeps_original, twice;
  ignores_prefer.honour_prefer_recompute = false;
  fresh_rng.replay_rng_state = false;
  keeps_original.rewire_all_readers = false;
  twice.share_duplicates = false;
  const auto& m = ac_mutants();
  add(m[0], ignores_prefer);
  add(m[1], fresh_rng);
  add(m[2], keeps_original);
  add(m[3], twice);
  register_ac_decision_mutants(registry);
}

const check::PassRegistry& registry_with_mutants() {
  static const check::PassRegistry registry = [] {
    check::PassRegistry r;
    check::register_builtin_passes(r);
    register_ac_mutants(r);
    register_chunk_mutants(r);
    register_cleanup_mutants(r);
    return r;
  }();
  return registry;
}

exec::ExecutorOptions executor_with_autograd_on() {
  exec::ExecutorOptions options;
  options.no_grad = false;
  return options;
}

}  // namespace passcheck::mutants
