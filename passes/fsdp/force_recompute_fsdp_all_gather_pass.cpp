// force-recompute-fsdp-all-gather: an FSDP wait is a _c10d_functional::wait_tensor whose input is
// an all_gather reading a graph input through nodes with exactly one distinct input each
// (check::fsdp_all_gather_of). With reshard-after-forward (the default) the all_gather
// and the wait are tagged MUST_RECOMPUTE in region 100000, then the chain below the wait
// while the current node has exactly one user and that user at most one distinct input
// (add(w, w) counts as one), and a dtype cast the all_gather reads directly: the
// rematerialization then gathers the parameter again in the backward instead of holding
// the gathered (and transposed) weight across the boundary. Without it, the chain's last
// node, walking back over views, is tagged MUST_SAVE instead. Forward nodes only; tags
// only, so the numbers computed never change.
#include "framework/check/distributed_properties.h"
#include "framework/exec/op_properties.h"
#include "passes/fsdp/fsdp_passes.h"

#include <unordered_set>

namespace passcheck::passes {

namespace {

bool is_forward(const ir::Node& n) { return n.meta().phase == ir::Phase::Forward; }

bool is_dtype_cast(const ir::Node& n) {
  return n.op() == "aten::_to_copy" || n.op() == "aten::to.dtype" || n.op() == "aten::to.dtype_layout" ||
         n.op() == "prims::convert_element_type";
}

bool is_view(const ir::Node& n) { return exec::aliases_input(n) && !exec::is_mutating(n); }

// The only node reading `n`'s outputs, or null (no user, several, or a graph output).
ir::Node* single_user(const ir::Node& n) {
  std::unordered_set<ir::Node*> users;
  for (const ir::Value* out : n.outputs())
    for (const ir::Use& u : out->uses()) {
      if (u.is_graph_output()) return nullptr;
      users.insert(u.user);
    }
  return users.size() == 1 ? *users.begin() : nullptr;
}

// Sets a tag; true when it changed something.
bool tag(ir::Node& n, ir::RecomputePolicy policy) {
  if (n.meta().recompute == policy && n.meta().ac_region_id == kFsdpUnshardRegion) return false;
  ir::NodeMeta& m = n.mutable_meta();
  m.recompute = policy;
  m.ac_region_id = kFsdpUnshardRegion;
  return true;
}

}  // namespace

check::PassResult force_recompute_fsdp_all_gather_pass(ir::Graph& graph, const check::PassOptions& options) {
  check::PassResult result;
  check::Decisions d(result, options);
  const bool recompute = options.get_bool("reshard-after-forward");
  const bool only_slice = d.injected("tag-only-slice-after-wait");
  int64_t unshards = 0, tagged = 0, changed = 0;
  auto apply = [&](ir::Node& n, ir::RecomputePolicy policy) {
    ++tagged;
    if (tag(n, policy)) ++changed;
  };
  for (ir::Node* wait : graph.node_list()) {
    if (wait->op() != "_c10d_functional::wait_tensor") continue;
    if (d.refuse("not-forward", !is_forward(*wait))) continue;
    ir::Node* ag = check::fsdp_all_gather_of(*wait);
    if (d.refuse("gathers-computed-value", !ag && wait->operand(0)->producer() &&
                                               wait->operand(0)->producer()->op() == "_c10d_functional::all_gather_into_tensor"))
      continue;
    if (!ag) continue;
    ++unshards;
    // The single-input chain below the wait.
    ir::Node* end = wait;
    std::vector<ir::Node*> chain;
    for (ir::Node* user = single_user(*end); user; user = single_user(*end)) {
      if (d.refuse("user-reads-other-values", check::distinct_operands(*user) > 1)) break;
      if (!is_forward(*user)) break;
      // Bug 5: only a slice right after the wait was tagged, never the permute after it.
      if (only_slice && (end != wait || user->op_base() != "slice")) break;
      chain.push_back(user);
      end = user;
    }
    ir::Node* cast = nullptr;
    if (ir::Value* in = ag->operand(0); in->producer() && is_dtype_cast(*in->producer())) cast = in->producer();
    if (recompute) {
      apply(*ag, ir::RecomputePolicy::MustRecompute);
      apply(*wait, ir::RecomputePolicy::MustRecompute);
      d.fire("recompute-all-gather-and-wait");
      for (ir::Node* n : chain) apply(*n, ir::RecomputePolicy::MustRecompute);
      d.fire("recompute-chain", static_cast<int64_t>(chain.size()));
      if (cast) {
        apply(*cast, ir::RecomputePolicy::MustRecompute);
        d.fire("recompute-cast");
      }
    } else {
      while (end != wait && is_view(*end)) end = end->operand(0)->producer();
      apply(*end, ir::RecomputePolicy::MustSave);
      d.fire("save-chain-end");
    }
  }
  result.changed = changed > 0;
  result.stats["fsdp_unshards"] = unshards;
  result.stats["tagged_nodes"] = tagged;
  return result;
}

}  // namespace passcheck::passes
