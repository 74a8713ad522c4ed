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
#include "passes/ac/guard_names.h"

namespace passcheck::passes {

namespace {

// Decision names. Constants, not std::string objects: a pass holds no global object
// (house.passes_hold_no_mutable_globals).
using namespace ac_guards;
constexpr const char* kSkippedModule = "skipped-module";
constexpr const char* kForcedSave = "forced-save";
constexpr const char* kSymbolicInt = "symbolic-int";
constexpr const char* kCopyWaitTag = "copy-wait-tag";
constexpr const char* kPolicyMustSave = "policy-must-save";
constexpr const char* kPolicyMustRecompute = "policy-must-recompute";
constexpr const char* kPolicyPreferRecompute = "policy-prefer-recompute";
constexpr const char* kSaveInPlaceWrite = "save-in-place-write";
constexpr const char* kSaveLayerBoundary = "save-layer-boundary";

bool has_prefix_component(const std::string& fqn, const std::string& prefix) {
  return fqn == prefix || (fqn.size() > prefix.size() && fqn.compare(0, prefix.size(), prefix) == 0 &&
                           fqn[prefix.size()] == '.');
}

std::optional<int64_t> region_of(const ir::Node& n) {
  const ir::NodeMeta& meta = n.meta();
  if (meta.ac_region_id) return meta.ac_region_id;
  return check::layer_of(meta.module_fqn);
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

MutationIndex::ReadFacts MutationIndex::read_facts(const ir::Node& node) const {
  ReadFacts facts;
  if (writers_.empty()) return facts;  // nothing is written in place
  for (size_t slot = 0; slot < node.num_operands(); ++slot) {
    const ir::Value* root = storage_root(node.operand(slot));
    auto it = writers_.find(root);
    if (it == writers_.end()) continue;
    bool written_later = false;
    for (const ir::Node* writer : it->second)
      if (writer != &node && node.is_before(writer)) {
        written_later = true;
        break;
      }
    if (!written_later) continue;
    facts.may_read_value_written_later = true;
    // A storage that a recomputation would create afresh (a recomputable producer) is
    // safe: only storages that survive (inputs, saved values) carry the later write.
    const ir::Node* creator = root->producer();
    if (creator && ir::is_recomputable(creator->meta().recompute) && !must_stay_in_forward(*creator)) continue;
    facts.reads_value_written_later = true;
    break;
  }
  return facts;
}

bool MutationIndex::reads_value_written_later(const ir::Node& node) const {
  return read_facts(node).reads_value_written_later;
}

bool MutationIndex::may_read_value_written_later(const ir::Node& node) const {
  return read_facts(node).may_read_value_written_later;
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
  const MutationIndex mutations(graph);
  return save_in_place_writes_to_saved_storage(graph, d, mutations);
}

int64_t save_in_place_writes_to_saved_storage(ir::Graph& graph, check::Decisions& d, const MutationIndex& mutations) {
  // Only a forward node that writes in place, or reads a storage written after it, can
  // ever be unsafe (each guard of the fixpoint needs one of the two, and neither depends
  // on the tags): the rounds walk those, in graph order, instead of the whole graph.
  std::vector<ir::Node*> candidates;
  for (ir::Node* n : graph.nodes())
    if (n->meta().phase != ir::Phase::Backward &&
        (exec::is_mutating(*n) || mutations.may_read_value_written_later(*n)))
      candidates.push_back(n);
  return save_in_place_writes_to_saved_storage(d, mutations, candidates);
}

int64_t save_in_place_writes_to_saved_storage(check::Decisions& d, const MutationIndex& mutations,
                                              const std::vector<ir::Node*>& candidates) {
  // Saving a node can make another unsafe to recompute (an in-place write into it, or a
  // read of it before a later in-place write): repeat to a fixpoint.
  int64_t saved = 0;
  const bool widened = d.widened(kSaveInPlaceWrite);
  for (bool changed = true; changed;) {
    changed = false;
    for (ir::Node* n : candidates) {
      if (!ir::is_recomputable(n->meta().recompute)) continue;
      // The widened rule also saves every in-place node, whatever storage it writes.
      const bool unsafe = d.refuse(kWritesSavedStorage, writes_saved_storage(*n)) ||
                          d.refuse(kReadsValueWrittenLater, mutations.reads_value_written_later(*n)) ||
                          (widened && exec::is_mutating(*n));
      if (!unsafe) continue;
      n->mutable_meta().recompute = ir::RecomputePolicy::MustSave;
      d.fire(kSaveInPlaceWrite);
      ++saved;
      changed = true;
    }
  }
  return saved;
}

int64_t save_layer_boundaries(ir::Graph& graph, check::Decisions& d) {
  int64_t upgraded = 0;
  const bool widened = d.widened(kSaveLayerBoundary);
  for (ir::Node* n : graph.nodes()) {
    if (n->meta().phase == ir::Phase::Backward || !ir::is_recomputable(n->meta().recompute)) continue;
    std::optional<int64_t> layer;  // computed at the first user that needs it
    bool crosses = false;
    for (ir::Value* out : n->outputs()) {
      for (const ir::Use& use : out->uses()) {
        if (use.is_graph_output()) continue;
        const ir::Node* user = use.user;
        // Widened: any recomputable forward user counts as crossing, same layer or not.
        if (user->meta().phase == ir::Phase::Backward || !ir::is_recomputable(user->meta().recompute)) continue;
        if (widened) {
          crosses = true;
          break;
        }
        if (!layer) layer = region_of(*n).value_or(0);
        if (region_of(*user).value_or(0) > *layer) {
          crosses = true;
          break;
        }
      }
      if (crosses) break;
    }
    if (crosses) {
      n->mutable_meta().recompute = ir::RecomputePolicy::MustSave;
      ++upgraded;
    }
  }
  d.fire(kSaveLayerBoundary, upgraded);
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
  // Only recompute tags change: the text (and its hash) changes exactly when a node's
  // final tag differs from its first, so that is compared instead of hashing twice.
  std::vector<ir::RecomputePolicy> before;
  before.reserve(graph.num_nodes());

  check::PassResult result;
  check::Decisions d(result, options);
  MutationIndex mutations(graph);
  const bool widened_policy = d.widened(kPolicyPreferRecompute);
  int64_t tagged = 0, copied_wait_tags = 0, policy_fired[3] = {0, 0, 0};
  // The forward nodes the in-place fixpoint must look at, found in the same walk.
  std::vector<ir::Node*> in_place_candidates;
  for (ir::Node* n : graph.nodes()) {
    const ir::NodeMeta& meta = n->meta();
    before.push_back(meta.recompute);
    if (meta.phase == ir::Phase::Backward) continue;
    const MutationIndex::ReadFacts reads = mutations.read_facts(*n);
    if (reads.may_read_value_written_later || exec::is_mutating(*n)) in_place_candidates.push_back(n);
    bool skip = false;
    for (const auto& prefix : skipped) skip |= has_prefix_component(meta.module_fqn, prefix);
    if (d.refuse(kSkippedModule, skip)) continue;
    ir::RecomputePolicy decision;
    bool symbolic_int = false;
    for (ir::Value* out : n->outputs()) symbolic_int |= out->type() == ir::ValueType::Int;
    bool forced = false;
    if (!meta.custom.empty()) {
      auto it = meta.custom.find("force_save");
      forced = it != meta.custom.end() && it->second == "1";
    }
    if (d.refuse(kForcedSave, forced) || d.refuse(kMustStayInForward, must_stay_in_forward(*n)) ||
        d.refuse(kReadsValueWrittenLater, reads.reads_value_written_later)) {
      decision = ir::RecomputePolicy::MustSave;
    } else if (const std::string_view base = op_base_of(*n);
               base == "wait_tensor" && n->num_operands() > 0 && n->operand(0)->producer()) {
      decision = n->operand(0)->producer()->meta().recompute;
      ++copied_wait_tags;
    } else if (d.refuse(kSymbolicInt, symbolic_int)) {
      decision = ir::RecomputePolicy::MustSave;
    } else {
      decision = policy.decide(base, meta.module_fqn, region_of(*n), exec::is_random(*n));
      // Widened: the policy's recompute class also takes the ops it would save.
      if (decision == ir::RecomputePolicy::MustSave && widened_policy) decision = ir::RecomputePolicy::PreferRecompute;
      ++policy_fired[decision == ir::RecomputePolicy::MustSave          ? 0
                     : decision == ir::RecomputePolicy::MustRecompute ? 1
                                                                        : 2];
    }
    if (meta.recompute != decision) n->mutable_meta().recompute = decision;
    ++tagged;
  }
  d.fire(kCopyWaitTag, copied_wait_tags);
  d.fire(kPolicyMustSave, policy_fired[0]);
  d.fire(kPolicyMustRecompute, policy_fired[1]);
  d.fire(kPolicyPreferRecompute, policy_fired[2]);
  result.stats["tagged_nodes"] = tagged;
  result.stats["layer_boundary_saves"] = save_layer_boundaries(graph, d);
  result.stats["in_place_saves"] = save_in_place_writes_to_saved_storage(d, mutations, in_place_candidates);
  int64_t recomputable = 0;
  bool changed = false;
  size_t i = 0;
  for (const ir::Node* n : graph.nodes()) {
    recomputable += ir::is_recomputable(n->meta().recompute);
    changed |= n->meta().recompute != before[i++];
  }
  result.stats["recomputable_nodes"] = recomputable;
  result.changed = changed;
  return result;
}

}  // namespace passcheck::passes
