// remat: selective activation rematerialization over a forward-loss-backward graph.
//   1. No recomputable forward node: unchanged.
//   2. A random op tagged recomputable is an error, unless rng=replay.
//   3. The backward region search starts after the last node whose module is "loss" or
//      "lm_head"; regions are maximal runs of backward nodes; a region needs remat when
//      one of its nodes reads a recomputable forward node. More than one such region is
//      an error; none leaves the graph unchanged.
//   4. From each backward node of the region, walk inputs transitively through
//      recomputable forward nodes, recording for each the earliest backward node that
//      needs it.
//   5. In graph order, duplicate each of them right before that backward node
//      ("<name>_recomputed", phase backward, custom "recomputed_from").
//   6. Rewire the region's reads to the duplicates and erase originals left unused.
// rng=replay: a recomputable random op keeps its forward generator state
// (passcheck::rng_state, inserted before it) and its duplicate runs between two
// passcheck::swap_rng_state calls, so it draws the same numbers and leaves the generator
// where it found it.
// Everything one run needs (options, injected faults, the mutation index) lives in that
// run's locals: the pass holds no state between calls, so two threads may run it at once.
#include "framework/exec/op_properties.h"
#include "framework/ir/text.h"
#include "passes/ac/ac_passes.h"
#include "passes/ac/guard_names.h"

#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace passcheck::passes {

namespace {

using namespace ac_guards;

bool is_loss_or_head(const std::string& fqn) {
  for (std::string_view r : {std::string_view("loss"), std::string_view("lm_head")}) {
    if (fqn == r || (fqn.size() > r.size() && fqn.compare(0, r.size(), r) == 0 && fqn[r.size()] == '.')) return true;
  }
  return false;
}

c10::Device device_of(const ir::Node& n) {
  for (const ir::Value* out : n.outputs())
    if (out->meta()) return out->meta()->device;
  for (const ir::Value* in : n.operands())
    if (in->meta()) return in->meta()->device;
  return c10::Device(c10::DeviceType::CPU);
}

int64_t output_bytes(const ir::Node& n) {
  int64_t bytes = 0;
  for (const ir::Value* out : n.outputs())
    if (out->meta()) bytes += out->meta()->nbytes();
  return bytes;
}

}  // namespace

check::PassResult remat_pass(ir::Graph& graph, const check::PassOptions& options) {
  const MutationIndex mutations(graph);
  const bool replay_rng = options.get("rng") == "replay";
  std::vector<ir::Node*> nodes = graph.node_list();
  check::PassResult result;
  check::Decisions d(result, options);
  // The historical bugs a mutant may ask this call to reproduce (declared in PassInfo).
  const bool ignore_prefer_recompute = d.injected("ignore-prefer-recompute");
  const bool fresh_rng_on_replay = d.injected("fresh-rng-on-replay");
  const bool rewire_first_reader_only = d.injected("rewire-first-reader-only");
  const bool duplicate_per_reader = d.injected("duplicate-per-reader");
  // Candidates: forward nodes tagged recomputable that the guards let through. The
  // widened duplicate-target rule takes every forward node it reaches, tag and guards
  // ignored.
  const bool widen_targets = d.widened("duplicate-target");
  auto is_forward_recomputable = [&](const ir::Node& n) {
    if (n.meta().phase == ir::Phase::Backward) return false;
    if (widen_targets) return true;
    if (ignore_prefer_recompute && n.meta().recompute != ir::RecomputePolicy::MustRecompute) return false;
    if (!ir::is_recomputable(n.meta().recompute)) return false;
    // Tagged recomputable, but unsafe to run again (the taggers save these; other tags
    // may not).
    if (d.refuse(kMustStayInForward, must_stay_in_forward(n))) return false;
    if (d.refuse(kReadsValueWrittenLater, mutations.reads_value_written_later(n))) return false;
    return !d.refuse(kWritesSavedStorage, writes_saved_storage(n));
  };
  auto unchanged = [&] {
    result.changed = false;
    return result;
  };

  // 1-2.
  bool any_recomputable = false;
  // Step 3's start, found in the same walk: after the last forward or loss node of the
  // loss or the head (backward nodes inherit their forward node's FQN, so only forward
  // and loss nodes mark where the loss computation ends).
  size_t start = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    ir::Node* n = nodes[i];
    if (n->meta().phase != ir::Phase::Backward && is_loss_or_head(n->meta().module_fqn)) start = i + 1;
    if (!is_forward_recomputable(*n)) continue;
    any_recomputable = true;
    if (d.refuse("random-op-without-replay", exec::is_random(*n) && !replay_rng))
      throw check::RefusedInput("remat: `" + ir::print_node(*n) +
                               "` is a random op tagged recomputable; RNG ops cannot be recomputed in a "
                               "forward-loss-backward graph (move them out of the region, save them, or run remat "
                               "with rng=replay)",
                         result);
  }
  if (!any_recomputable) return unchanged();

  // 3. (start: above)
  std::vector<std::vector<ir::Node*>> regions_needing;
  for (size_t i = start; i < nodes.size();) {
    if (nodes[i]->meta().phase != ir::Phase::Backward) {
      ++i;
      continue;
    }
    std::vector<ir::Node*> region;
    bool needs = false;
    for (; i < nodes.size() && nodes[i]->meta().phase == ir::Phase::Backward; ++i) {
      region.push_back(nodes[i]);
      for (size_t slot = 0; slot < nodes[i]->num_operands(); ++slot) {
        const ir::Value* v = nodes[i]->operand(slot);
        if (v->producer() && is_forward_recomputable(*v->producer())) needs = true;
      }
    }
    if (needs) regions_needing.push_back(std::move(region));
  }
  if (regions_needing.empty()) return unchanged();
  if (d.refuse("disjoint-backward-regions", regions_needing.size() > 1)) {
    std::string firsts;
    for (const auto& r : regions_needing) firsts += "\n  region starting at `" + ir::print_node(*r.front()) + "`";
    throw check::RefusedInput("remat: " + std::to_string(regions_needing.size()) +
                           " disjoint backward regions need recomputation; expected one" + firsts,
                       result);
  }
  const std::vector<ir::Node*>& region = regions_needing.front();

  // 4. The first backward node (in order) to reach a target is its earliest user.
  std::unordered_map<ir::Node*, ir::Node*> earliest_user;
  for (ir::Node* b : region) {
    std::vector<ir::Node*> stack;
    for (ir::Value* v : b->operands())
      if (v->producer() && is_forward_recomputable(*v->producer())) stack.push_back(v->producer());
    while (!stack.empty()) {
      ir::Node* p = stack.back();
      stack.pop_back();
      if (!earliest_user.emplace(p, b).second) continue;
      for (ir::Value* v : p->operands())
        if (v->producer() && is_forward_recomputable(*v->producer())) stack.push_back(v->producer());
    }
  }

  // 5. Duplicate in graph order so a duplicate's inputs are duplicated before it.
  std::vector<ir::Node*> targets;
  for (ir::Node* n : nodes)
    if (earliest_user.count(n)) targets.push_back(n);
  d.fire("duplicate-target", static_cast<int64_t>(targets.size()));
  std::unordered_map<ir::Value*, ir::Value*> duplicate_of;
  std::unordered_map<ir::Node*, ir::Node*> duplicate_node;
  int64_t rng_replays = 0;
  for (ir::Node* t : targets) {
    ir::Node* anchor = earliest_user.at(t);
    const bool random = exec::is_random(*t);
    ir::Value* saved_state = nullptr;
    ir::Value* previous_state = nullptr;
    c10::Device device = device_of(*t);
    // Widened: every duplicate replays a generator state, random or not.
    // Without rng=replay no random target gets here unless its guard was disabled.
    const bool replay_state = (random || d.widened("replay-rng")) && replay_rng && !fresh_rng_on_replay;
    if (replay_state) {
      d.fire("replay-rng");
      ir::Node* state = graph.create("passcheck::rng_state", {ir::Arg::dev(device)}, t);
      state->mutable_meta() = t->meta();
      state->mutable_meta().recompute = ir::RecomputePolicy::MustSave;
      state->mutable_meta().custom["rng_state_of"] = t->output(0)->name();
      saved_state = state->add_output(ir::ValueType::Tensor, std::nullopt, t->output(0)->name() + "_rng_state");
      ir::Node* swap_in =
          graph.create("passcheck::swap_rng_state", {ir::Arg::of(saved_state), ir::Arg::dev(device)}, anchor);
      swap_in->mutable_meta().phase = ir::Phase::Backward;
      swap_in->mutable_meta().module_fqn = t->meta().module_fqn;
      swap_in->mutable_meta().ac_region_id = t->meta().ac_region_id;
      swap_in->mutable_meta().custom["recomputed_from"] = t->output(0)->name();
      previous_state = swap_in->add_output(ir::ValueType::Tensor, std::nullopt, t->output(0)->name() + "_rng_prev");
      ++rng_replays;
    }
    ir::Node* dup = graph.clone_node(
        *t,
        [&](ir::Value* v) {
          auto it = duplicate_of.find(v);
          return it == duplicate_of.end() ? v : it->second;
        },
        anchor, "_recomputed");
    dup->mutable_meta().phase = ir::Phase::Backward;
    dup->mutable_meta().custom["recomputed_from"] = t->output(0)->name();
    for (size_t i = 0; i < t->num_outputs(); ++i) duplicate_of[t->output(i)] = dup->output(i);
    duplicate_node[t] = dup;
    if (replay_state) {
      ir::Node* swap_back =
          graph.create("passcheck::swap_rng_state", {ir::Arg::of(previous_state), ir::Arg::dev(device)}, anchor);
      swap_back->mutable_meta() = dup->meta();
      swap_back->add_output(ir::ValueType::Tensor, std::nullopt, t->output(0)->name() + "_rng_restored");
    }
  }

  // 6. Rewire the region's reads (they all come after their duplicate), then erase
  // originals that nothing reads any more, consumers first.
  std::set<ir::Node*> in_region(region.begin(), region.end());
  // Widened: readers outside the region (forward ones too) move to the duplicate.
  const bool widen_rewire = d.widened("rewire-backward-reader");
  for (ir::Node* t : targets) {
    ir::Node* dup = duplicate_node.at(t);
    for (size_t i = 0; i < t->num_outputs(); ++i)
      t->output(i)->replace_uses_if(dup->output(i), [&](const ir::Use& use) {
        if (use.is_graph_output() || use.user == dup) return false;
        if (!in_region.count(use.user) && !widen_rewire) return false;
        if (rewire_first_reader_only && use.user != earliest_user.at(t)) return false;
        d.fire("rewire-backward-reader");
        return true;
      });
  }
  int64_t extra_duplicates = 0;
  if (duplicate_per_reader) {
    // The injected bug: every further backward reader gets a duplicate of its own.
    for (ir::Node* t : targets) {
      ir::Node* dup = duplicate_node.at(t);
      ir::UseList uses = dup->output(0)->uses();
      for (size_t u = 1; u < uses.size(); ++u) {
        if (uses[u].is_graph_output() || !in_region.count(uses[u].user)) continue;
        ir::Node* again = graph.clone_node(*dup, [](ir::Value* v) { return v; }, uses[u].user);
        uses[u].user->replace_operand(uses[u].slot, again->output(0));
        ++extra_duplicates;
      }
    }
  }
  int64_t erased = 0, freed_bytes = 0;
  // Widened: the erase ignores its guards (an original still read, a random draw).
  const bool widen_erase = d.widened("erase-original");
  for (auto it = targets.rbegin(); it != targets.rend(); ++it) {
    ir::Node* t = *it;
    if (!widen_erase && d.refuse("original-still-read", t->has_users())) continue;
    // Its draw advances the generator: erasing it would shift every later draw.
    if (!widen_erase && d.refuse("random-original-kept", exec::is_random(*t))) continue;
    freed_bytes += output_bytes(*t);
    graph.erase(t);
    d.fire("erase-original");
    ++erased;
  }

  result.changed = true;
  result.stats["recomputed_nodes"] = static_cast<int64_t>(targets.size()) + extra_duplicates;
  result.stats["erased_originals"] = erased;
  result.stats["erased_bytes"] = freed_bytes;
  result.stats["rng_replays"] = rng_replays;
  return result;
}

}  // namespace passcheck::passes
