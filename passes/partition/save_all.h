// Replaying a partition's saved set (autoparallel PR 467, "double recomputation"): the
// first compile tags the forward producers of the values min-cut saved (custom
// ap_must_save = "1"; a multi-output producer also lists the saved outputs in
// ap_save_outputs = "0,2"); after the module is re-imported (join_module), partition-
// save-all saves exactly those values and recomputes everything else the backward needs,
// so the second compile makes the first compile's decisions. Two semantics:
//   landed (autoparallel #485, default): MUST_RECOMPUTE blocks a save and is checked
//     first; PREFER_RECOMPUTE does not block; MUST_SAVE producers are saved (all their
//     outputs); a tagged multi-output producer saves only its recorded outputs unless it
//     is MUST_SAVE;
//   pr467 (the draft): MUST_RECOMPUTE and PREFER_RECOMPUTE block a save; MUST_SAVE is
//     ignored; a tagged multi-output producer saves all its outputs.
// Whatever the tags say, a node that cannot be recomputed (random, mutating, side
// effects) and a collective not tagged recomputable are saved where the backward needs
// them (as the first partition, which bans them, did).
#pragma once

#include "framework/check/pass.h"
#include "framework/ir/module.h"
#include "passes/partition/classify.h"

#include <string>
#include <vector>

namespace passcheck::passes {

enum class ReplaySemantics { Landed, Pr467 };

/// Parses an ap_save_outputs list ("0,2"); throws check::RefusedInput on anything else.
std::vector<size_t> parse_save_outputs(const std::string& text);

/// The saved set a replay of the tags in `joint` chooses (graph order).
std::vector<const ir::Value*> replay_saved_values(const ir::Graph& joint, const Classification& classes,
                                                  ReplaySemantics semantics, check::Decisions& d);
class WrittenStorage;
/// The same with the joint graph's WrittenStorage (op_facts.h) built by the caller, who
/// hands it on to the split.
std::vector<const ir::Value*> replay_saved_values(const ir::Graph& joint, const Classification& classes,
                                                  ReplaySemantics semantics, check::Decisions& d,
                                                  const WrittenStorage& written);

/// Tags the producers of the values the forward part of `module` hands to later parts
/// (ap_must_save, and ap_save_outputs for a multi-output producer); returns how many
/// producers changed. Counts rule tag-saved-producer.
int64_t tag_saved_values(ir::Module& module, check::Decisions& d);

/// The joint graph of a one-part module; throws check::RefusedInput naming `pass` and the
/// parts otherwise (a partitioner never runs on a partitioned module).
const ir::Graph& single_joint_part(const ir::Module& module, const std::string& pass);

/// tag-ap-must-save: tag_saved_values as a module pass.
check::PassResult tag_ap_must_save_pass(ir::Module& module, const check::PassOptions& options);
check::PassInfo tag_ap_must_save_pass_info();

/// partition-save-all: replay the tags of a one-part module; leaves forward and backward.
check::PassResult partition_save_all_pass(ir::Module& module, const check::PassOptions& options);
check::PassInfo partition_save_all_pass_info();

}  // namespace passcheck::passes
