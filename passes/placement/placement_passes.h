// The placement family (specs/distributed.md "eliminate_alias_round_trips"):
//   eliminate-alias-round-trips  a consumer that wants an alias's input in its producer's
//                                placement reads the producer directly; the alias goes
//                                when nothing reads it
#pragma once

#include "framework/check/pass.h"

namespace passcheck::passes {

check::PassResult eliminate_alias_round_trips_pass(ir::Graph& graph, const check::PassOptions& options);

void register_placement_passes(check::PassRegistry& registry);

}  // namespace passcheck::passes
