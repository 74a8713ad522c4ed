// Registry entries of the activation-checkpointing family, with every rule each pass
// can fire and every guard that can refuse (docs/passes.md lists them per pass).
#include "passes/ac/ac_passes.h"
#include "framework/check/ac_policy.h"

#include <sstream>

namespace passcheck::passes {

namespace {

// Decisions shared by sac-tag and apply-ac (save_layer_boundaries and
// save_in_place_writes_to_saved_storage, plus the tagging guards). Functions rather than
// namespace-scope objects: a std::string constant is built at startup into writable
// memory, and passes/ holds no writable globals (house.passes_hold_no_mutable_globals).
check::DecisionInfo save_layer_boundary() {
  return {"save-layer-boundary",
          "a recomputable forward node with a recomputable forward user in a higher layer is saved"};
}
check::DecisionInfo save_in_place_write() {
  return {"save-in-place-write", "a recomputable node unsafe to recompute (in-place hazard) is saved, to a fixpoint"};
}
check::DecisionInfo must_stay_in_forward_guard() {
  return {"must-stay-in-forward", "a node with side effects or writing a graph input (buffer) is never recomputable"};
}
check::DecisionInfo reads_value_written_later_guard() {
  return {"reads-value-written-later",
          "a node reading a surviving storage that is written in place after it is never recomputable"};
}
check::DecisionInfo writes_saved_storage_guard() {
  return {"writes-saved-storage", "an in-place node writing a saved storage or a graph input is never recomputable"};
}

}  // namespace

namespace {

void check_selectors(const std::string& value) {
  std::stringstream items(value);
  for (std::string item; std::getline(items, item, ',');) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) check::OpSelector::parse(item);
  }
}

// apply-ac's selective option: 'op' or a layer interval (a layer count bounds it).
void check_layer_interval(const std::string& value) {
  if (value == "op") return;
  try {
    check::option_checks::integer_in(0, 1 << 20)(value);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("expected 'op' or a layer interval: ") + e.what());
  }
}

}  // namespace

void register_ac_passes(check::PassRegistry& registry) {
  using check::NumericsEffect;
  registry.add({"ac-regions",
                "Number activation-checkpoint regions: ac_region_id = index of the `layers` child",
                {},
                NumericsEffect::Preserves,
                true,
                {{"number-layer-node", "a node under layers.N gets ac_region_id N"}},
                {}},
               ac_regions_pass);
  registry.add({"sac-tag",
                "Tag forward nodes with a recompute policy (default, eager, full or op)",
                {{"policy", "selective AC policy", "default", {"default", "eager", "full", "op"}},
                 {"selectors", "full policy: comma-separated FQN_PATTERN::OP selectors of nodes to save", "", {},
                  check_selectors},
                 {"skip", "module FQN prefixes left untagged", "lm_head,loss", {}}},
                NumericsEffect::Preserves,
                true,
                {{"policy-must-save", "the policy saves the node (save list, eager's odd mm, full's selectors)"},
                 {"policy-prefer-recompute", "the policy tags the node PREFER_RECOMPUTE"},
                 {"policy-must-recompute", "the policy tags the node MUST_RECOMPUTE (full policy)"},
                 {"copy-wait-tag", "wait_tensor copies the tag of its producer"},
                 save_layer_boundary(),
                 save_in_place_write()},
                {{"skipped-module", "a node under a skipped module prefix (lm_head, loss) is left untagged"},
                 {"forced-save", "a node with custom force_save=1 is saved whatever the policy"},
                 must_stay_in_forward_guard(),
                 reads_value_written_later_guard(),
                 {"symbolic-int", "a node producing a symbolic integer is saved"},
                 writes_saved_storage_guard()}},
               sac_tag_pass);
  registry.add({"apply-ac",
                "Model-level activation checkpointing: full, every n-th layer, or per-op selective",
                {{"mode", "full or selective", "full", {"full", "selective"}},
                 {"option", "selective: 'op' or a layer interval n (0: every layer)", "op", {}, check_layer_interval}},
                NumericsEffect::Preserves,
                true,
                {{"checkpoint-layer", "a forward node of a checkpointed layer is tagged MUST_RECOMPUTE"},
                 {"per-op-policy", "selective option=op: the op policy tags a forward node of a layer"},
                 save_layer_boundary(),
                 save_in_place_write()},
                {must_stay_in_forward_guard(),
                 reads_value_written_later_guard(),
                 {"random-op", "a random op of a checkpointed layer is saved, not recomputed"},
                 writes_saved_storage_guard()}},
               apply_ac_pass);
  check::PassInfo remat{"remat",
                        "Recompute recomputable forward nodes right before their first backward use",
                        {{"rng", "random ops tagged recomputable: error, or replay the saved generator state", "error",
                          {"error", "replay"}}},
                        NumericsEffect::MemoryOnly,
                        true,
                        {{"duplicate-target", "a recomputable forward node a backward node needs is duplicated before it"},
                         {"replay-rng", "a recomputed random op replays its saved generator state (rng=replay)"},
                         {"rewire-backward-reader", "a backward reader of a target reads its duplicate instead"},
                         {"erase-original", "an original left without readers is erased"}},
                        {must_stay_in_forward_guard(),
                         reads_value_written_later_guard(),
                         writes_saved_storage_guard(),
                         {"random-op-without-replay", "a random op tagged recomputable without rng=replay is an error"},
                         {"disjoint-backward-regions", "more than one backward region needs recomputation: an error"},
                         {"original-still-read", "an original with readers left (forward users) is kept"},
                         {"random-original-kept", "a random original is kept: its draw advances the generator"}}};
  // Historical bugs of specs/passes.md the mutant library can ask for; the real pass
  // never reproduces one unless told through InjectedFaults::injected_bugs.
  remat.injectable_bugs = {
      {"ignore-prefer-recompute",
       "only MUST_RECOMPUTE nodes are recomputed; the backward reads saved PREFER_RECOMPUTE values (bug 1)"},
      {"fresh-rng-on-replay", "with rng=replay a recomputed random op draws fresh numbers (bug 2)"},
      {"rewire-first-reader-only",
       "only the earliest backward reader moves to the duplicate; the original stays alive (bug 3)"},
      {"duplicate-per-reader", "each backward reader gets its own duplicate: a node is recomputed twice (bug 3)"}};
  registry.add(remat, remat_pass);
}

}  // namespace passcheck::passes
