// The FSDP family (specs/distributed.md "force_recompute_fsdp_all_gather"):
//   force-recompute-fsdp-all-gather  tag each FSDP unshard (cast, all_gather, wait and
//                                    the single-input chain after it) MUST_RECOMPUTE, or
//                                    its chain end MUST_SAVE (reshard-after-forward=false)
#pragma once

#include "framework/check/pass.h"

namespace passcheck::passes {

/// The AC region id every FSDP unshard tag carries (upstream's 100000), far above any
/// layer index so region-aware passes never merge it with a layer.
constexpr int64_t kFsdpUnshardRegion = 100000;

check::PassResult force_recompute_fsdp_all_gather_pass(ir::Graph& graph, const check::PassOptions& options);

void register_fsdp_passes(check::PassRegistry& registry);

}  // namespace passcheck::passes
