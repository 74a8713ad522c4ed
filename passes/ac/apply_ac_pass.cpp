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

#include <cctype>

namespace passcheck::passes {

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

  uint64_t before = graph.hash();
  check::PassResult result;
  check::Decisions d(result, options);
  check::AcPolicy op_policy(check::AcPolicyKind::Op);
  MutationIndex mutations(graph);
  int64_t tagged = 0;
  for (ir::Node* n : graph.nodes()) {
    ir::NodeMeta& meta = n->mutable_meta();
    if (meta.phase != ir::Phase::Forward) continue;
    std::optional<int64_t> layer = meta.ac_region_id ? meta.ac_region_id : check::layer_of(meta.module_fqn);
    if (!layer) continue;  // only transformer blocks are checkpointed
    if (d.refuse("must-stay-in-forward", must_stay_in_forward(*n)) ||
        d.refuse("reads-value-written-later", mutations.reads_value_written_later(*n))) {
      meta.recompute = ir::RecomputePolicy::MustSave;
    } else if (per_op) {
      meta.recompute = op_policy.decide(n->op_base(), meta.module_fqn, layer, exec::is_random(*n));
      d.fire("per-op-policy");
    } else if (*layer % *every_nth == 0 || d.widened("checkpoint-layer")) {
      // Widened: the layers the interval skips are checkpointed too (and so is their
      // random op, below, unless its guard holds).
      if (d.refuse("random-op", exec::is_random(*n))) {
        meta.recompute = ir::RecomputePolicy::MustSave;
      } else {
        meta.recompute = ir::RecomputePolicy::MustRecompute;
        d.fire("checkpoint-layer");
      }
    } else {
      continue;
    }
    ++tagged;
  }
  result.stats["tagged_nodes"] = tagged;
  result.stats["layer_boundary_saves"] = save_layer_boundaries(graph, d);
  result.stats["in_place_saves"] = save_in_place_writes_to_saved_storage(graph, d);
  result.changed = graph.hash() != before;
  return result;
}

}  // namespace passcheck::passes
