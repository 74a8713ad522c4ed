// Hand-made per-rank graph situations for the FSDP, placement and scheduling passes:
// each reaches some of their declared rules and guards (collectives, placements,
// wanted placements and recorded schedules that traced single-rank programs never
// hold). The default coverage campaign runs them all ("distributed-situations"); the
// passes' own properties are checked on each.
#pragma once

#include "framework/check/pass.h"

#include <string>
#include <vector>

namespace passcheck::gen {

/// One situation: a graph and the pipeline that reaches the decisions it is built for.
struct DistributedSituation {
  std::string name;
  std::string text;      ///< graph text
  std::string pipeline;  ///< pipeline text
};

/// The smallest FSDP joint graph (mesh dp=4): a parameter gathered, waited, transposed and
/// multiplied in the forward; the backward reads the transposed gathered weight. The
/// situation "fsdp-joint", shared with the FSDP pass and mutant tests.
const char* fsdp_joint_graph();

/// Every situation, in a fixed order.
const std::vector<DistributedSituation>& distributed_situations();

/// Runs every situation through its pipeline behind the gate (verifier after each pass)
/// and checks the distributed properties of the passes it runs
/// (check::check_gathered_parameters_not_saved after remat, check::check_redirected_reads_wanted
/// after eliminate-alias-round-trips). Returns the violations, each naming its situation.
std::vector<std::string> distributed_situation_violations(const check::PassRegistry& registry);

}  // namespace passcheck::gen
