// The AC and chunk decision mutants (see decision_mutants_ac.h). The exclusions are the
// faults that cannot change any result the suites observe, each with its argument
// (the decisions traced programs do not reach are reached by the decision situations,
// generators/decision_situations.h, and their mutants are registered).
#include "suites/mutants/decision_mutants_ac.h"

#include "passes/ac/ac_passes.h"
#include "passes/chunk/chunk_passes.h"

#include <map>
#include <utility>

namespace passcheck::mutants {

namespace {

const char* const kSavingMore =
    "saving more is always correct: no property promises how much is recomputed, only that what is tagged "
    "recomputable is not held into the backward";

// "<pass> <guard|rule> <name>" -> why no mutant is registered.
const std::map<std::string, std::string>& exclusions() {
  static const std::map<std::string, std::string> e = {
      {"ac-regions rule number-layer-node",
       "widened, nodes outside the layers join region 0, the number every consumer already assumes for them"},
      {"sac-tag rule policy-must-save", "widened it could only save more; " + std::string(kSavingMore)},
      {"sac-tag rule policy-must-recompute",
       "widened it turns PREFER_RECOMPUTE into MUST_RECOMPUTE, which remat treats alike"},
      {"sac-tag rule copy-wait-tag",
       "the rule has no widening site: it applies to every wait_tensor whose producer is a node (the "
       "decision situations' wait-after-collective motif reaches it)"},
      {"sac-tag rule save-layer-boundary", std::string("widened it saves more; ") + kSavingMore},
      {"sac-tag rule save-in-place-write", std::string("widened it saves more; ") + kSavingMore},
      {"sac-tag guard forced-save",
       "force_save is the user's preference, not a correctness condition: recomputing the node gives the same "
       "numbers"},
      {"apply-ac rule checkpoint-layer",
       "widened it checkpoints the layers the interval skips: recomputing more is correct"},
      {"apply-ac rule per-op-policy", "it already decides every forward node of every layer: nothing lies beyond"},
      {"apply-ac rule save-layer-boundary", std::string("widened it saves more; ") + kSavingMore},
      {"apply-ac rule save-in-place-write", std::string("widened it saves more; ") + kSavingMore},
      {"remat rule replay-rng",
       "widened, deterministic duplicates also replay a generator state they do not read: same numbers"},
      {"remat guard must-stay-in-forward",
       "in generated programs every node it refuses is an in-place write reaching a graph input, which "
       "writes-saved-storage refuses too; the nodes only it refuses (side effects without writes, such as "
       "prints) do not occur in traced programs"},
      {"chunk rule split-live-in",
       "every live-in carrying the symbol is split already; the others are refused by guards"},
      {"chunk rule clone-non-contiguous-half", "widened it clones contiguous halves too: same numbers"},
      {"chunk rule early-accumulation",
       "widened it accumulates with early-accumulation=false too; in generated programs the partials then meet "
       "after the same rearrangements in the same dtype (no narrowing cast follows a parameter-gradient "
       "reduction), so the numbers are the same (its effect is measured on deepseek_v3, DeepSeekChunking)"},
      {"chunk rule duplicate-body",
       "widened it duplicates region nodes that read no chunked value (parameter preparation): both copies "
       "compute the same thing, and in generated programs such nodes have no side effects"},
      {"chunk guard static-input-split",
       "disabled, a parameter or buffer carrying the symbol is split like an argument: its halves meet the "
       "matching halves of the other live-ins, so the numbers are those of the unsplit graph; what the guard "
       "protects is the runtime's contract that module state keeps its storage whole, which no executed "
       "property observes (the decision situations reach it: static-input-split)"},
      {"sac-tag guard symbolic-int",
       "disabled, a scalar read off a tensor gets the policy's tag and may be recomputed in the backward from the "
       "same saved or recomputed tensor: the same scalar, no tensor bytes held; the guard keeps symbolic sizes "
       "saved for a partitioner, which no executed property observes (the decision situations reach it: "
       "symbolic-int)"},
      {"concretize rule validate-guard", "every recorded claim is evaluated already: nothing lies beyond"},
      {"concretize rule substitute-input-meta", "every symbolic input is substituted already"},
      {"concretize rule substitute-args", "every symbolic argument is substituted already"},
      {"concretize rule substitute-shape", "every symbolic shape is substituted already"},
      {"concretize rule substitute-in-subgraphs",
       "every subgraph is substituted already; skipping them is the injected bug skip-subgraphs "
       "(mutant-concretize-skips-subgraphs, caught in suites/mutants/nested_mutants_test.cpp)"},
      {"concretize guard leftover-symbol",
       "disabled, concretize would keep a graph with a symbol left; but its own loops substitute every symbol "
       "it inspects, so with the real substitution the guard never holds and disabling it changes nothing"},
  };
  return e;
}

std::vector<DecisionMutant> build_decision_mutants() {
  check::PassRegistry real;
  passes::register_ac_passes(real);
  passes::register_chunk_passes(real);
  std::vector<DecisionMutant> out;
  for (const char* pass : {"ac-regions", "sac-tag", "apply-ac", "remat", "chunk", "concretize"}) {
    const check::PassInfo& info = real.get(pass).info;
    auto add = [&](const check::DecisionInfo& d, bool guard) {
      DecisionMutant m;
      m.replaces = pass;
      m.decision = d.name;
      m.guard = guard;
      m.pass = "mutant-" + m.replaces + (guard ? "-no-" : "-widened-") + d.name;
      auto it = exclusions().find(m.replaces + (guard ? " guard " : " rule ") + d.name);
      if (it != exclusions().end()) m.excluded = it->second;
      out.push_back(std::move(m));
    };
    for (const auto& g : info.guards) add(g, true);
    for (const auto& r : info.rules) add(r, false);
  }
  return out;
}

}  // namespace

const std::vector<DecisionMutant>& ac_chunk_decision_mutants() {
  static const std::vector<DecisionMutant> mutants = build_decision_mutants();
  return mutants;
}

}  // namespace passcheck::mutants
