// sac-tag: recompute policy for every forward node, in graph order:
//   1. backward nodes are skipped (no tag);
//   2. nodes whose module FQN starts with a skipped prefix ("lm_head", "loss") too;
//   3. forced-save nodes (custom "force_save" = "1"), nodes that must run once in the
//      forward (side effects, writes to graph inputs) and nodes reading a value that is
//      written in place later (a recomputation would read the new value) are MUST_SAVE;
//   4. wait_tensor copies the tag of its producer;
//   5. nodes producing a symbolic integer are MUST_SAVE;
//   6. otherwise the policy decides (framework/check/ac_policy.h).
// Then the layer-boundary rule: a recomputable forward node with a recomputable forward
// user in a higher layer becomes MUST_SAVE.
#include "framework/check/ac_policy.h"
#include "framework/exec/op_properties.h"
#include "passes/ac/ac_passes.h"

namespace passcheck::passes {

namespace {

bool has_prefix_component(const std::string& fqn, const std::string& prefix) {
  return fqn == prefix || (fqn.size() > prefix.size() && fqn.compare(0, prefix.size(), prefix) == 0 &&
                           fqn[prefix.size()] == '.');
}

std::optional<int64_t> region_of(const ir::Node& n) {
  if (n.meta().ac_region_id) return n.meta().ac_region_id;
  return check::layer_of(n.meta().module_fqn);
}

std::vector<check::OpSelector> parse_selectors(const std::vector<std::string>& texts) {
  std::vector<check::OpSelector> out;
  for (const auto& t : texts) {
    try {
      out.push_back(check::OpSelector::parse(t));
    } catch (const std::invalid_argument& e) {
      throw check::PassConfigError(std::string("sac-tag: ") + e.what());
    }
  }
  return out;
}

}  // namespace

const ir::Value* storage_root(const ir::Value* v) {
  while (v->producer() && exec::aliases_input(*v->producer()) && v->producer()->num_operands() > 0)
    v = v->producer()->operand(0);
  return v;
}

MutationIndex::MutationIndex(const ir::Graph& graph) {
  for (const ir::Node* n : graph.nodes()) {
    if (!exec::is_mutating(*n)) continue;
    auto written = exec::written_values(*n);
    if (!written) continue;
    for (const ir::Value* v : *written) writers_[storage_root(v)].push_back(n);
  }
}

bool MutationIndex::reads_value_written_later(const ir::Node& node) const {
  for (const ir::Value* v : node.operands()) {
    const ir::Value* root = storage_root(v);
    // A storage that a recomputation would create afresh (a recomputable producer) is
    // safe: only storages that survive (inputs, saved values) carry the later write.
    const ir::Node* creator = root->producer();
    if (creator && ir::is_recomputable(creator->meta().recompute) && !must_stay_in_forward(*creator)) continue;
    auto it = writers_.find(root);
    if (it == writers_.end()) continue;
    for (const ir::Node* writer : it->second)
      if (writer != &node && node.is_before(writer)) return true;
  }
  return false;
}

bool writes_saved_storage(const ir::Node& node) {
  if (!exec::is_mutating(node)) return false;
  auto written = exec::written_values(node);
  if (!written) return true;
  for (const ir::Value* v : *written) {
    while (true) {
      const ir::Node* p = v->producer();
      if (p == nullptr) return true;  // a graph input
      if (!ir::is_recomputable(p->meta().recompute) || must_stay_in_forward(*p)) return true;
      if (!exec::aliases_input(*p) || p->num_operands() == 0) break;  // a fresh storage, recomputed
      v = p->operand(0);
    }
  }
  return false;
}

bool must_stay_in_forward(const ir::Node& node) {
  if (!exec::has_side_effects(node)) return false;
  if (!exec::is_mutating(node)) return true;
  auto written = exec::written_values(node);
  if (!written) return true;
  for (const ir::Value* v : *written) {
    v = storage_root(v);
    if (v->is_graph_input() || (v->producer() && must_stay_in_forward(*v->producer()))) return true;
  }
  return false;
}

int64_t save_in_place_writes_to_saved_storage(ir::Graph& graph, check::Decisions& d) {
  // Saving a node can make another unsafe to recompute (an in-place write into it, or a
  // read of it before a later in-place write): repeat to a fixpoint.
  MutationIndex mutations(graph);
  int64_t saved = 0;
  const bool widened = d.widened("save-in-place-write");
  for (bool changed = true; changed;) {
    changed = false;
    for (ir::Node* n : graph.nodes()) {
      if (n->meta().phase == ir::Phase::Backward || !ir::is_recomputable(n->meta().recompute)) continue;
      // The widened rule also saves every in-place node, whatever storage it writes.
      const bool unsafe = d.refuse("writes-saved-storage", writes_saved_storage(*n)) ||
                          d.refuse("reads-value-written-later", mutations.reads_value_written_later(*n)) ||
                          (widened && exec::is_mutating(*n));
      if (!unsafe) continue;
      n->mutable_meta().recompute = ir::RecomputePolicy::MustSave;
      d.fire("save-in-place-write");
      ++saved;
      changed = true;
    }
  }
  return saved;
}

int64_t save_layer_boundaries(ir::Graph& graph, check::Decisions& d) {
  int64_t upgraded = 0;
  const bool widened = d.widened("save-layer-boundary");
  for (ir::Node* n : graph.nodes()) {
    if (n->meta().phase == ir::Phase::Backward || !ir::is_recomputable(n->meta().recompute)) continue;
    int64_t layer = region_of(*n).value_or(0);
    bool crosses = false;
    for (ir::Value* out : n->outputs())
      for (const ir::Use& use : out->uses()) {
        if (use.is_graph_output()) continue;
        const ir::Node* user = use.user;
        // Widened: any recomputable forward user counts as crossing, same layer or not.
        if (user->meta().phase != ir::Phase::Backward && ir::is_recomputable(user->meta().recompute) &&
            (widened || region_of(*user).value_or(0) > layer))
          crosses = true;
      }
    if (crosses) {
      n->mutable_meta().recompute = ir::RecomputePolicy::MustSave;
      d.fire("save-layer-boundary");
      ++upgraded;
    }
  }
  return upgraded;
}

check::PassResult sac_tag_pass(ir::Graph& graph, const check::PassOptions& options) {
  check::AcPolicyKind kind;
  try {
    kind = check::parse_ac_policy(options.get("policy"));
  } catch (const std::invalid_argument& e) {
    throw check::PassConfigError(std::string("sac-tag: ") + e.what());
  }
  check::AcPolicy policy(kind, parse_selectors(options.get_list("selectors")));
  std::vector<std::string> skipped = options.get_list("skip");
  uint64_t before = graph.hash();

  check::PassResult result;
  check::Decisions d(result, options);
  MutationIndex mutations(graph);
  int64_t tagged = 0;
  for (ir::Node* n : graph.nodes()) {
    const ir::NodeMeta& meta = n->meta();
    if (meta.phase == ir::Phase::Backward) continue;
    bool skip = false;
    for (const auto& prefix : skipped) skip |= has_prefix_component(meta.module_fqn, prefix);
    if (d.refuse("skipped-module", skip)) continue;
    ir::RecomputePolicy decision;
    bool symbolic_int = false;
    for (ir::Value* out : n->outputs()) symbolic_int |= out->type() == ir::ValueType::Int;
    if (d.refuse("forced-save", meta.custom.count("force_save") && meta.custom.at("force_save") == "1") ||
        d.refuse("must-stay-in-forward", must_stay_in_forward(*n)) ||
        d.refuse("reads-value-written-later", mutations.reads_value_written_later(*n))) {
      decision = ir::RecomputePolicy::MustSave;
    } else if (n->op_base() == "wait_tensor" && n->num_operands() > 0 && n->operand(0)->producer()) {
      decision = n->operand(0)->producer()->meta().recompute;
      d.fire("copy-wait-tag");
    } else if (d.refuse("symbolic-int", symbolic_int)) {
      decision = ir::RecomputePolicy::MustSave;
    } else {
      decision = policy.decide(n->op_base(), meta.module_fqn, region_of(*n), exec::is_random(*n));
      // Widened: the policy's recompute class also takes the ops it would save.
      if (decision == ir::RecomputePolicy::MustSave && d.widened("policy-prefer-recompute"))
        decision = ir::RecomputePolicy::PreferRecompute;
      d.fire(decision == ir::RecomputePolicy::MustSave          ? "policy-must-save"
             : decision == ir::RecomputePolicy::MustRecompute ? "policy-must-recompute"
                                                                : "policy-prefer-recompute");
    }
    if (meta.recompute != decision) n->mutable_meta().recompute = decision;  // only what changes is touched
    ++tagged;
  }
  result.stats["tagged_nodes"] = tagged;
  result.stats["layer_boundary_saves"] = save_layer_boundaries(graph, d);
  result.stats["in_place_saves"] = save_in_place_writes_to_saved_storage(graph, d);
  int64_t recomputable = 0;
  for (const ir::Node* n : graph.nodes()) recomputable += ir::is_recomputable(n->meta().recompute);
  result.stats["recomputable_nodes"] = recomputable;
  result.changed = graph.hash() != before;
  return result;
}

}  // namespace passcheck::passes
