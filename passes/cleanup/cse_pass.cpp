// cse: common subexpression elimination. Two nodes are the same computation when they
// name the same operator overload with structurally equal arguments, graph values
// compared by identity; the later one's uses go to the first and it is erased. Never
// merged: nodes without outputs, RNG draws (two draws differ), uninitialized
// allocations (two buffers must stay two), operators whose output aliases an input
// (merging views would merge later writes through them), mutating operators,
// collectives (unless merge-collectives: the partition round trip dedupes the all_gather
// chains a re-imported backward repeats), and rematerialized duplicates (custom
// "recomputed_from": merging them with their original would undo the recomputation).
// Mutations bound the search: a mutating or side-effecting node lies between the
// candidates it separates (guard mutation-between), and a candidate whose result (or a
// view of it) is later written is not merged into (guard result-written). Each reason is
// a guard of its own name.
// The kept node takes over the metadata that decides how the value is saved (stat
// merged_metadata; historical bug 16 dropped it): ap_must_save is the union; the saved
// outputs (ap_save_outputs) are the union, or all of them when either tag lists none;
// the recompute policy is the stronger of the two in the order MUST_SAVE >
// MUST_RECOMPUTE > PREFER_RECOMPUTE > PREFER_SAVE > unset, so a save beats a recompute
// only when either says MUST_SAVE; custom keys only the erased node has are copied.
#include "passes/cleanup/cleanup_passes.h"
#include "passes/cleanup/rewrite_util.h"

#include "framework/exec/op_properties.h"
#include "framework/ir/text.h"

#include <cstdint>
#include <string_view>
#include <set>
#include <sstream>
#include <unordered_map>

namespace passcheck::passes {

namespace {

// The guard that keeps `n` from being merged into an equal node, or null. Mutating,
// side-effecting and collective nodes never get here: they are barriers.
const char* unmergeable_because(const ir::Node& n) {
  if (exec::is_random(n)) return "random";
  if (exec::is_uninitialized_allocation(n)) return "uninitialized";
  if (exec::aliases_input(n)) return "aliases-input";
  if (n.meta().custom.count("recomputed_from")) return "recomputed";
  return nullptr;
}

// The text of the operator and its arguments: values print as their (unique) names,
// which is identity; constants print exactly (format_double round-trips). Widened
// (mutants only): constants are left out, so add(x, y, 1) and add(x, y, 2) look equal.
void key_of(const ir::Node& n, bool values_only, std::string& key) {
  key.clear();
  key += n.op();
  key += '(';
  for (size_t i = 0; i < n.num_args(); ++i) {
    if (values_only && n.arg(i).kind != ir::Arg::Kind::Value) continue;
    if (i) key += ", ";
    ir::append_arg_text(key, n.arg(i));
  }
  key += ')';
}

// Whether a value, or a view of it (followed through users whose outputs alias their
// input), has a use `Hit` accepts. Memoized per value; forget() drops one value's answer.
template <bool (*Hit)(const ir::Use&)>
class ViewReach {
 public:
  bool reaches(const ir::Value* v) {
    auto it = memo_.find(v);
    if (it != memo_.end()) return it->second;
    memo_[v] = false;  // views form a DAG; this only guards against malformed input
    bool result = false;
    for (const ir::Use& u : v->uses()) {
      if (Hit(u)) result = true;
      else if (!u.is_graph_output() && exec::aliases_input(*u.user))
        for (const ir::Value* out : u.user->outputs()) result = result || reaches(out);
      if (result) break;
    }
    memo_[v] = result;
    return result;
  }
  void forget(const ir::Value* v) { memo_.erase(v); }

 private:
  std::unordered_map<const ir::Value*, bool> memo_;
};

bool writes(const ir::Use& u) { return !u.is_graph_output() && exec::is_mutating(*u.user); }
bool returns(const ir::Use& u) { return u.is_graph_output(); }

// Whether a write may reach a value: some user mutates it, or views it (a view's users
// may write through it).
using WriteExposure = ViewReach<writes>;
// Whether a value, or a view of it, is returned by the graph: merging two such values
// would return one storage for two outputs that were distinct. A merge makes the kept
// value returned where the erased one was: forget() its answer then.
using ReturnExposure = ViewReach<returns>;

int policy_strength(ir::RecomputePolicy p) {
  switch (p) {
    case ir::RecomputePolicy::MustSave: return 4;
    case ir::RecomputePolicy::MustRecompute: return 3;
    case ir::RecomputePolicy::PreferRecompute: return 2;
    case ir::RecomputePolicy::PreferSave: return 1;
    case ir::RecomputePolicy::Unset: return 0;
  }
  return 0;
}

// The save-deciding metadata of `into` after `from` merges into it (file comment).
ir::NodeMeta merged_meta(const ir::NodeMeta& into, const ir::NodeMeta& from) {
  ir::NodeMeta merged = into;
  if (policy_strength(from.recompute) > policy_strength(into.recompute)) merged.recompute = from.recompute;
  for (const auto& [key, value] : from.custom) merged.custom.emplace(key, value);
  auto& custom = merged.custom;
  const bool into_saves = into.custom.count("ap_must_save") > 0, from_saves = from.custom.count("ap_must_save") > 0;
  if (into_saves && from_saves) {
    auto a = into.custom.find("ap_save_outputs"), b = from.custom.find("ap_save_outputs");
    if (a == into.custom.end() || b == from.custom.end()) {
      custom.erase("ap_save_outputs");  // one of them saves every output
    } else {
      std::set<long long> indices;
      for (const std::string* list : {&a->second, &b->second}) {
        std::stringstream items(*list);
        for (std::string item; std::getline(items, item, ',');)
          if (!item.empty()) indices.insert(std::stoll(item));
      }
      std::string joined;
      for (long long i : indices) joined += (joined.empty() ? "" : ",") + std::to_string(i);
      custom["ap_save_outputs"] = joined;
    }
  } else if (from_saves) {
    custom["ap_must_save"] = from.custom.at("ap_must_save");
    auto b = from.custom.find("ap_save_outputs");
    if (b == from.custom.end()) custom.erase("ap_save_outputs");
    else custom["ap_save_outputs"] = b->second;
  }
  return merged;
}

}  // namespace

check::PassInfo cse_pass_info() {
  check::PassInfo info;
  info.name = "cse";
  info.summary = "Merge nodes computing the same operator on the same arguments (keeps the first)";
  info.options = {{"merge-collectives",
                   "merge equal collectives (and their waits) too instead of treating them as barriers",
                   "false",
                   {"true", "false"}}};
  info.rules = {{"merge-duplicate", "a node equal to an earlier one: its uses go to the earlier one and it is erased"}};
  info.guards = {
      {"random", "two random draws are two different draws"},
      {"uninitialized", "two uninitialized allocations are two buffers"},
      {"aliases-input", "views (outputs aliasing an input) are not merged"},
      {"recomputed", "a rematerialized duplicate (custom recomputed_from) is kept apart from its original"},
      {"mutation-between", "a mutating, side-effecting or collective node lies between the two"},
      {"result-written", "one of the two results (or a view of it) is written later"},
      {"distinct-outputs",
       "both results (or views of them) are returned by the graph: merged, two distinct outputs would share one "
       "storage, and a write into one would change the other"},
  };
  info.injectable_bugs = {{"drop-duplicate-metadata",
                           "historical bug 16 (upstream): the erased duplicate's metadata is dropped, so a tag only "
                           "it carried (ap_must_save, a recompute policy) is lost"}};
  info.numerics = check::NumericsEffect::Preserves;
  info.idempotent = true;
  return info;
}

check::PassResult cse_pass(ir::Graph& graph, const check::PassOptions& options) {
  int64_t erased = 0, rewired = 0, merged_metadata = 0;
  check::PassResult decisions;
  check::Decisions d(decisions, options);
  const bool values_only = d.widened("merge-duplicate");
  const bool merge_collectives = options.values().count("merge-collectives") && options.get_bool("merge-collectives");
  const bool drop_metadata = d.injected("drop-duplicate-metadata");
  // The first node of each key and the barrier epoch it was seen in: a mutation
  // between the two (a later epoch) makes the earlier result stale.
  struct Seen {
    ir::Node* node;
    int64_t epoch;
  };
  // By the hash of the key, not the key: no string kept per node. A hit is confirmed by
  // the stored node's key (its arguments never change once seen: only later nodes are
  // rewired); keys that share a hash with another key live in `overflow`.
  std::unordered_map<uint64_t, Seen> seen;
  std::unordered_map<std::string, Seen> overflow;
  seen.reserve(graph.num_nodes());
  std::string key, stored_key;
  // The entry of `key`, or null after recording `fresh` as its first node.
  auto find_or_add = [&](const Seen& fresh) -> Seen* {
    const uint64_t h = std::hash<std::string_view>{}(key);
    auto [it, added] = seen.try_emplace(h, fresh);
    if (added) return nullptr;
    key_of(*it->second.node, values_only, stored_key);
    if (stored_key == key) return &it->second;
    auto [other, added_other] = overflow.try_emplace(key, fresh);
    return added_other ? nullptr : &other->second;
  };
  int64_t epoch = 0;
  WriteExposure exposure;
  ReturnExposure returned;
  for (ir::Node* n : graph.nodes()) {
    if (exec::is_mutating(*n) || exec::has_side_effects(*n) || (exec::is_collective(*n) && !merge_collectives)) {
      ++epoch;
      continue;
    }
    if (n->num_outputs() == 0) continue;  // nothing to forward
    key_of(*n, values_only, key);
    Seen* it = find_or_add(Seen{n, epoch});
    if (it == nullptr) continue;
    ir::Node* first = it->node;
    // Equal keys mean the same operator, so the same reason, except a rematerialized
    // node met before its plain twin: then the plain one becomes the one to merge into.
    const char* own_reason = unmergeable_because(*n);
    const char* reason = own_reason ? own_reason : unmergeable_because(*first);
    if (reason && d.refuse(reason, true)) {
      if (!own_reason) *it = Seen{n, epoch};
      continue;
    }
    if (d.refuse("mutation-between", it->epoch != epoch)) {
      *it = Seen{n, epoch};  // later duplicates merge into this one
      continue;
    }
    // Equal operators on equal arguments have equal outputs; a mismatch means the
    // metadata is not to be trusted (no guard: it cannot happen in a graph that runs).
    bool compatible = first->num_outputs() == n->num_outputs();
    for (size_t i = 0; compatible && i < n->num_outputs(); ++i)
      compatible = first->output(i)->type() == n->output(i)->type() && first->output(i)->meta() == n->output(i)->meta();
    if (!compatible) continue;
    bool written = false;
    for (size_t i = 0; i < n->num_outputs(); ++i)
      written = written || exposure.reaches(first->output(i)) || exposure.reaches(n->output(i));
    if (d.refuse("result-written", written)) continue;
    bool both_returned = false;
    for (size_t i = 0; i < n->num_outputs(); ++i)
      both_returned = both_returned || (returned.reaches(n->output(i)) && returned.reaches(first->output(i)));
    if (d.refuse("distinct-outputs", both_returned)) continue;
    for (size_t i = 0; i < n->num_outputs(); ++i) returned.forget(first->output(i));
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      rewired += static_cast<int64_t>(n->output(i)->uses().size());
      n->output(i)->replace_all_uses_with(first->output(i));
    }
    if (!drop_metadata) {
      ir::NodeMeta merged = merged_meta(first->meta(), n->meta());
      if (!(merged == first->meta())) {
        first->mutable_meta() = std::move(merged);
        ++merged_metadata;
      }
    }
    graph.erase(n);
    ++erased;
    d.fire("merge-duplicate");
  }
  check::PassResult result = detail::rewrite_result(erased, rewired);
  detail::add_decisions(result, decisions);
  if (merged_metadata) result.stats["merged_metadata"] = merged_metadata;
  return result;
}

}  // namespace passcheck::passes
