// Registry entries of the activation-checkpointing family.
#include "passes/ac/ac_passes.h"

namespace passcheck::passes {

void register_ac_passes(check::PassRegistry& registry) {
  using check::NumericsEffect;
  registry.add({"ac-regions", "Number activation-checkpoint regions: ac_region_id = index of the `layers` child", {},
                NumericsEffect::Preserves, true},
               ac_regions_pass);
  registry.add({"sac-tag",
                "Tag forward nodes with a recompute policy (default, eager, full or op)",
                {{"policy", "selective AC policy", "default", {"default", "eager", "full", "op"}},
                 {"selectors", "full policy: comma-separated FQN_PATTERN::OP selectors of nodes to save", "", {}},
                 {"skip", "module FQN prefixes left untagged", "lm_head,loss", {}}},
                NumericsEffect::Preserves, true},
               sac_tag_pass);
  registry.add({"apply-ac",
                "Model-level activation checkpointing: full, every n-th layer, or per-op selective",
                {{"mode", "full or selective", "full", {"full", "selective"}},
                 {"option", "selective: 'op' or a layer interval n (0: every layer)", "op", {}}},
                NumericsEffect::Preserves, true},
               apply_ac_pass);
  registry.add({"remat",
                "Recompute recomputable forward nodes right before their first backward use",
                {{"rng", "random ops tagged recomputable: error, or replay the saved generator state", "error",
                  {"error", "replay"}}},
                NumericsEffect::MemoryOnly, true},
               remat_pass);
}

}  // namespace passcheck::passes
