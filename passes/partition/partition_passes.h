// The partitioner family (specs/distributed.md "Partitioners", autoparallel PR 467):
//   classify-nodes      tag every node forward / backward / unclaimed (classify.h)
//   partition-min-cut   split a joint module at PyTorch's min cut (min_cut.h)
//   tag-ap-must-save    tag the producers of a partitioned module's saved values (save_all.h)
//   partition-save-all  split a joint module saving exactly the tagged values (save_all.h)
// The partitioners are module passes: they take a module of one joint graph and leave
// parts "forward" and "backward" (split.h); join_module re-imports such a module.
#pragma once

#include "framework/check/pass.h"
#include "passes/partition/classify.h"
#include "passes/partition/min_cut.h"
#include "passes/partition/save_all.h"
#include "passes/partition/round_trip.h"
#include "passes/partition/split.h"

namespace passcheck::passes {

/// Registers every pass of the partitioner family.
void register_partition_passes(check::PassRegistry& registry);

}  // namespace passcheck::passes
