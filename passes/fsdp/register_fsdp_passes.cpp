// Registry entries of the FSDP family, with every rule each pass can fire, every guard
// that can refuse and the historical bug it can be told to reproduce (docs/passes.md).
#include "passes/fsdp/fsdp_passes.h"

namespace passcheck::passes {

void register_fsdp_passes(check::PassRegistry& registry) {
  check::PassInfo info{
      "force-recompute-fsdp-all-gather",
      "Tag FSDP unshards (cast, all_gather, wait, single-input chain) MUST_RECOMPUTE, or their end MUST_SAVE",
      {{"reshard-after-forward", "true: recompute the unshard in the backward; false: save the chain's end", "true",
        {"true", "false"}}},
      check::NumericsEffect::Preserves,
      true,
      {{"recompute-all-gather-and-wait", "an FSDP all_gather and its wait are tagged MUST_RECOMPUTE (region 100000)"},
       {"recompute-chain", "a node of the single-user, single-input chain below the wait is tagged MUST_RECOMPUTE"},
       {"recompute-cast", "a dtype cast the all_gather reads directly is tagged MUST_RECOMPUTE"},
       {"save-chain-end", "reshard-after-forward=false: the chain's last non-view node is tagged MUST_SAVE"}},
      {{"not-forward", "a wait outside the forward (a backward unshard) is left alone"},
       {"gathers-computed-value", "an all_gather of a computed value (not a graph input through single-input nodes)"},
       {"user-reads-other-values", "the chain stops at a user with more than one distinct input"}}};
  info.injectable_bugs = {{"tag-only-slice-after-wait",
                           "only a slice right after the wait is tagged, not the permute chain: the transposed gathered "
                           "weight is saved (bug 5)"}};
  registry.add(info, force_recompute_fsdp_all_gather_pass);
}

}  // namespace passcheck::passes
