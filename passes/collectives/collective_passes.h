// The collectives family (specs/distributed.md "fuse_chained_allgathers", autoparallel
// PR 467):
//   fuse-chained-allgathers  one all_gather over a flattened mesh group in place of an
//                            all_gather over one mesh dim whose result, through an
//                            identity chain of views (or directly), feeds an all_gather
//                            over another mesh dim
//
// The identity of a view chain is proved, not inferred from shapes and strides: the
// pass builds the chain's logical index map (passes/collectives/view_index_map.h),
// records the claim that it is the identity on the graph, and fuses only when Z3 proves
// it.
#pragma once

#include "framework/check/pass.h"

namespace passcheck::passes {

check::PassInfo fuse_chained_allgathers_pass_info();
check::PassResult fuse_chained_allgathers_pass(ir::Graph& graph, const check::PassOptions& options);

void register_collective_passes(check::PassRegistry& registry);

}  // namespace passcheck::passes
