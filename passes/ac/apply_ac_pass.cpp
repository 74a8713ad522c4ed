// apply-ac: model-level activation checkpointing, as torchtitan configures it.
//   mode=full                        every layer fully checkpointed
//   mode=selective, option=N         layers whose index % N == 0 fully checkpointed
//                                    (N = 0: every layer)
//   mode=selective, option=op        per-op selective AC (the "op" policy)
// Fully checkpointed layers tag their forward nodes MUST_RECOMPUTE (random ops
// MUST_SAVE); then the layer-boundary rule saves layer outputs.
#include "framework/check/ac_policy.h"
#include "framework/exec/op_properties.h"
#include "passes/ac/ac_passes.h"
#include "passes/ac/guard_names.h"

#include <cctype>
#include <string_view>
#include <vector>

namespace passcheck::passes {

namespace {

}  // namespace

check::PassResult apply_ac_pass(ir::Graph& graph, const check::PassOptions& options) {
  const std::string& mode = options.get("mode");
  const std::string& option = options.get("option");
  std::optional<int64_t> every_nth;
  bool per_op = false;
  if (mode == "full") {
    every_nth = 1;
  } else if (mode == "selective") {
    if (option == "op") {
      per_op = true;
    } else {
      bool numeric = !option.empty();
      for (char c : option) numeric &= std::isdigit(static_cast<unsigned char>(c)) != 0;
      if (!numeric)
        throw check::PassConfigError("apply-ac: selective option must be 'op' or a non-negative layer interval, got '" +
                                     option + "'");
      int64_t n = std::stoll(option);
      every_nth = n == 0 ? 1 : n;
    }
  } else {
    throw check::PassConfigError("apply-ac: unknown mode '" + mode + "' (full, selective)");
  }

  // Only recompute tags change: the text (and its hash) changes exactly when a node's
  // final tag differs from its first, so that is compared instead of hashing twice.
  std::vector<ir::RecomputePolicy> before;
  before.reserve(graph.num_nodes());
  check::PassResult result;
  check::Decisions d(result, options);
  check::AcPolicy op_policy(check::AcPolicyKind::Op);
  MutationIndex mutations(graph);
  const std::string kRandomOp = "random-op";
  const std::string kPerOpPolicy = "per-op-policy";
  const std::string kCheckpointLayer = "checkpoint-layer";
  const bool widened_checkpoint = d.widened(kCheckpointLayer);
  int64_t tagged = 0, per_op_fired = 0, checkpoint_fired = 0;
  for (ir::Node* n : graph.nodes()) {
    const ir::NodeMeta& meta = n->meta();
    before.push_back(meta.recompute);
    if (meta.phase != ir::Phase::Forward) continue;
    std::optional<int64_t> layer = meta.ac_region_id ? meta.ac_region_id : check::layer_of(meta.module_fqn);
    if (!layer) continue;  // only transformer blocks are checkpointed
    ir::RecomputePolicy decision;
    if (d.refuse(ac_guards::kMustStayInForward, must_stay_in_forward(*n)) ||
        d.refuse(ac_guards::kReadsValueWrittenLater, mutations.reads_value_written_later(*n))) {
      decision = ir::RecomputePolicy::MustSave;
    } else if (per_op) {
      decision = op_policy.decide(op_base_of(*n), meta.module_fqn, layer, exec::is_random(*n));
      ++per_op_fired;
    } else if (*layer % *every_nth == 0 || widened_checkpoint) {
      // Widened: the layers the interval skips are checkpointed too (and so is their
      // random op, below, unless its guard holds).
      if (d.refuse(kRandomOp, exec::is_random(*n))) {
        decision = ir::RecomputePolicy::MustSave;
      } else {
        decision = ir::RecomputePolicy::MustRecompute;
        ++checkpoint_fired;
      }
    } else {
      continue;
    }
    if (meta.recompute != decision) n->mutable_meta().recompute = decision;
    ++tagged;
  }
  d.fire(kPerOpPolicy, per_op_fired);
  d.fire(kCheckpointLayer, checkpoint_fired);
  result.stats["tagged_nodes"] = tagged;
  result.stats["layer_boundary_saves"] = save_layer_boundaries(graph, d);
  result.stats["in_place_saves"] = save_in_place_writes_to_saved_storage(graph, d, mutations);
  bool changed = false;
  size_t i = 0;
  for (const ir::Node* n : graph.nodes()) changed |= n->meta().recompute != before[i++];
  result.changed = changed;
  return result;
}

}  // namespace passcheck::passes
