// fuse-chained-allgathers (collective_passes.h): ag1 -> wait1 -> [identity views] -> ag2
// -> wait2 becomes one all_gather of ag1's input over the flattened group whose rank
// order matches the chain, plus a wait. Gathering over dp then tp concatenates in the
// order of the column-major group (tp_dp: ranks of the mesh transposed), tp then dp in
// the order of the row-major one (dp_tp); the wrong one permutes the row blocks
// (historical bug 6). The view chain must be the identity on values, which the pass
// proves with Z3 over the chain's index map; upstream compares the two ends' shapes and
// strides instead, which accepts a permute, a copying reshape and a view back (bug 13).
#include "passes/collectives/collective_passes.h"

#include "framework/sym/prover.h"
#include "passes/collectives/view_index_map.h"

#include <algorithm>
#include <set>

namespace passcheck::passes {

namespace {

const char* const kAllGather = "_c10d_functional::all_gather_into_tensor";
const char* const kWait = "_c10d_functional::wait_tensor";

std::vector<std::string> split_group(const std::string& name) {
  std::vector<std::string> dims;
  size_t start = 0;
  while (true) {
    const size_t sep = name.find('_', start);
    dims.push_back(name.substr(start, sep == std::string::npos ? std::string::npos : sep - start));
    if (sep == std::string::npos) return dims;
    start = sep + 1;
  }
}

// Size of the group `name` of `mesh` (dims joined by '_'), nullopt when a dim is unknown
// or repeated (framework/dist/mesh.h names groups this way).
std::optional<int64_t> group_size(const ir::MeshInfo& mesh, const std::string& name) {
  int64_t size = 1;
  std::vector<std::string> seen;
  for (const std::string& dim : split_group(name)) {
    if (std::find(seen.begin(), seen.end(), dim) != seen.end()) return std::nullopt;
    seen.push_back(dim);
    auto it = std::find_if(mesh.dims.begin(), mesh.dims.end(), [&](const auto& d) { return d.first == dim; });
    if (it == mesh.dims.end()) return std::nullopt;
    size *= it->second;
  }
  return size;
}

std::string row_major_group(const ir::MeshInfo& mesh) {
  std::string name;
  for (const auto& [dim, size] : mesh.dims) name += (name.empty() ? "" : "_") + dim;
  return name;
}

// What the options and the mesh say about the flattened groups.
struct Groups {
  std::string row_major;     // full-group
  int64_t full_size = 0;
  std::string column_major;  // "" when none was given
  std::vector<std::string> order;
};

Groups groups_of(const ir::MeshInfo& mesh, const check::PassOptions& options) {
  Groups g;
  g.row_major = options.get("full-group").empty() ? row_major_group(mesh) : options.get("full-group");
  auto size = group_size(mesh, g.row_major);
  if (!size)
    throw check::RefusedInput("fuse-chained-allgathers: full-group '" + g.row_major +
                                  "' is not a group of the graph's mesh (dims joined by '_')",
                              {});
  g.full_size = *size;
  g.column_major = options.get("column-major-group");
  g.order = options.get_list("subgroup-order");
  return g;
}

struct Gather {
  ir::Node* node = nullptr;
  int64_t size = 0;
  std::string group;
};

// The all_gather `n` with constant group size and name, or nullopt.
std::optional<Gather> read_gather(ir::Node* n) {
  if (n == nullptr || n->op() != kAllGather || n->num_args() < 3 || !n->arg(0).is_value() ||
      n->arg(1).kind != ir::Arg::Kind::Int || n->arg(2).kind != ir::Arg::Kind::String)
    return std::nullopt;
  return Gather{n, n->arg(1).i, n->arg(2).str()};
}

// A candidate: ag1 -> wait1 -> chain -> ag2 -> wait2.
struct Candidate {
  Gather ag1, ag2;
  ir::Node* wait1 = nullptr;
  ir::Node* wait2 = nullptr;
  std::vector<const ir::Node*> chain;  // in order, wait1's user first
};

bool same_ends_shape_and_stride(const ir::Value& a, const ir::Value& b) {
  return a.meta() && b.meta() && a.meta()->sizes == b.meta()->sizes && a.meta()->strides == b.meta()->strides;
}

class Fuser {
 public:
  Fuser(ir::Graph& graph, const check::PassOptions& options, check::PassResult& result)
      : graph_(graph), result_(result), d_(result, options), groups_(groups_of(*graph.mesh(), options)) {}

  void run() {
    std::vector<ir::Node*> gathers;
    for (ir::Node* n : graph_.nodes())
      if (n->op() == kAllGather) gathers.push_back(n);
    for (ir::Node* ag2 : gathers) {
      // Fusing erases earlier gathers (an ag1) and later waits, never a later gather.
      if (erased_.count(ag2)) continue;
      Candidate c;
      if (!match(ag2, c)) continue;
      auto chosen = route(c);
      if (!chosen) continue;
      if (!c.chain.empty() && !identity(c)) continue;
      fuse(c, *chosen);
    }
  }

 private:
  // Steps 1-3 of the spec: the shape of the chain, sizes, groups and dtypes.
  bool match(ir::Node* ag2_node, Candidate& c) {
    // The schema check makes group sizes and names constants in any graph that runs.
    auto ag2 = read_gather(ag2_node);
    if (!ag2) return false;
    c.ag2 = *ag2;
    const ir::UseList& ag2_uses = ag2_node->output()->uses();
    // The verifier guarantees the gather's only user is its wait.
    if (ag2_uses.size() != 1 || ag2_uses[0].is_graph_output() || ag2_uses[0].user->op() != kWait) return false;
    c.wait2 = ag2_uses[0].user;
    // Walk back over single-user nodes to a wait.
    ir::Value* cur = ag2_node->arg(0).value;
    std::vector<const ir::Node*> reversed;
    while (true) {
      ir::Node* producer = cur->producer();
      if (d_.refuse("no-wait-upstream", producer == nullptr || producer->num_outputs() != 1)) return false;
      if (producer->op() == kWait) {
        c.wait1 = producer;
        break;
      }
      if (d_.refuse("chain-value-shared", cur->uses().size() != 1)) return false;
      if (d_.refuse("no-wait-upstream", producer->num_args() == 0 || !producer->arg(0).is_value())) return false;
      reversed.push_back(producer);
      cur = producer->arg(0).value;
    }
    c.chain.assign(reversed.rbegin(), reversed.rend());
    if (d_.refuse("wait-has-other-users", c.wait1->output()->uses().size() != 1)) return false;
    ir::Value* gathered = c.wait1->num_args() > 0 && c.wait1->arg(0).is_value() ? c.wait1->arg(0).value : nullptr;
    auto ag1 = read_gather(gathered ? gathered->producer() : nullptr);
    if (d_.refuse("not-after-all-gather", !ag1 || gathered->uses().size() != 1)) return false;
    c.ag1 = *ag1;
    for (const ir::Node* n : c.chain)
      if (d_.refuse("not-a-view", !collectives::is_modeled_view(*n))) return false;
    const bool reorders = std::any_of(c.chain.begin(), c.chain.end(),
                                      [](const ir::Node* n) { return collectives::is_real_reorder(*n); });
    if (d_.refuse("no-reorder", !c.chain.empty() && !reorders)) return false;
    if (d_.refuse("sizes-not-full", c.ag1.size * c.ag2.size != groups_.full_size)) return false;
    if (d_.refuse("same-group", c.ag1.group == c.ag2.group)) return false;
    // Views keep the dtype, so this holds for every chain that got here; the spec lists it.
    const ir::Value* in1 = c.ag1.node->arg(0).value;
    const ir::Value* out2 = c.ag2.node->output();
    return in1->meta() && out2->meta() && in1->meta()->dtype == out2->meta()->dtype;
  }

  // Step 4: which flattened group gathers in the chain's rank order.
  std::optional<std::string> route(const Candidate& c) {
    std::string chosen;
    if (!groups_.order.empty()) {
      const auto position = [&](const std::string& g) { return std::find(groups_.order.begin(), groups_.order.end(), g); };
      const auto p1 = position(c.ag1.group), p2 = position(c.ag2.group);
      if (d_.refuse("group-not-in-order", p1 == groups_.order.end() || p2 == groups_.order.end())) return std::nullopt;
      // p1 == p2 ("equal dims") cannot happen: the group names differ.
      if (p1 < p2) {
        // Ascending (major dim first): the column-major group, when there is one.
        if (d_.refuse("no-column-major-group", groups_.column_major.empty())) return std::nullopt;
        chosen = groups_.column_major;
      } else {
        chosen = groups_.row_major;
      }
    } else {
      if (d_.refuse("direct-without-order", c.chain.empty())) return std::nullopt;
      chosen = groups_.row_major;
    }
    if (d_.injected("swap-flattened-groups")) {
      if (chosen == groups_.column_major) chosen = groups_.row_major;
      else if (!groups_.column_major.empty()) chosen = groups_.column_major;
    }
    return chosen;
  }

  // Step 2's identity, proved: the claim is recorded only for a chain that is fused.
  bool identity(const Candidate& c) {
    const ir::Value& source = *c.wait1->output();
    const ir::Value& end = *c.chain.back()->output();
    std::string why_not;
    auto map = collectives::compose_view_chain(source, c.chain, why_not);
    if (d_.refuse("identity-unknown", !map)) {
      result_.notes.push_back("%" + end.name() + ": " + why_not);
      return false;
    }
    sym::Claim claim = collectives::view_identity_claim(source, end, *map, "fuse-chained-allgathers", "%" + end.name());
    bool accepted;
    if (d_.injected("skip-identity-proof")) {
      accepted = true;  // bug 7: any chain with a reorder taken as the identity
    } else if (d_.injected("shape-stride-identity")) {
      accepted = same_ends_shape_and_stride(source, end);  // bug 13: upstream's check
    } else {
      const sym::ClaimResult r = sym::prove(claim, graph_.symbols());
      ++result_.stats["identity_claims_checked"];
      if (r.verdict != sym::Verdict::Proved) result_.notes.push_back(r.format());
      if (d_.refuse("not-identity", r.verdict == sym::Verdict::Refuted)) return false;
      if (d_.refuse("identity-unknown", r.verdict == sym::Verdict::Unknown)) return false;
      accepted = true;
    }
    if (accepted) graph_.add_claim(std::move(claim));
    return accepted;
  }

  // Step 5: one gather of ag1's input over `group`, a wait, wait2's uses moved to it.
  void fuse(const Candidate& c, const std::string& group) {
    ir::Value* input = c.ag1.node->arg(0).value;
    ir::Value* old_result = c.wait2->output();
    ir::Node* ag = graph_.create(kAllGather, {ir::Arg::of(input), ir::Arg::integer(groups_.full_size), ir::Arg::string(group)},
                                 c.ag2.node);
    ag->mutable_meta() = c.ag2.node->meta();
    ir::Value* gathered = ag->add_output(ir::ValueType::Tensor, c.ag2.node->output()->meta(), c.ag2.node->output()->name());
    ir::Node* wait = graph_.create(kWait, {ir::Arg::of(gathered)}, c.ag2.node);
    wait->mutable_meta() = c.wait2->meta();
    ir::Value* result = wait->add_output(ir::ValueType::Tensor, old_result->meta(), old_result->name());
    result->set_placements(old_result->placements());
    old_result->replace_all_uses_with(result);
    std::vector<ir::Node*> dead = {c.wait2, c.ag2.node};
    for (auto it = c.chain.rbegin(); it != c.chain.rend(); ++it) dead.push_back(const_cast<ir::Node*>(*it));
    dead.push_back(c.wait1);
    dead.push_back(c.ag1.node);
    const std::string gathered_name = c.ag2.node->output()->name(), result_name = old_result->name();
    for (ir::Node* n : dead) {
      graph_.erase(n);
      erased_.insert(n);
    }
    // The fused values take the names of the values they replace.
    graph_.rename(gathered, gathered_name);
    graph_.rename(result, result_name);
    d_.fire(c.chain.empty() ? "fuse-direct-chain" : "fuse-view-chain");
    result_.changed = true;
    ++result_.stats["fused_chains"];
    result_.stats["erased_nodes"] += static_cast<int64_t>(dead.size());
  }

  ir::Graph& graph_;
  check::PassResult& result_;
  check::Decisions d_;
  Groups groups_;
  std::set<const ir::Node*> erased_;
};

}  // namespace

check::PassInfo fuse_chained_allgathers_pass_info() {
  check::PassInfo info;
  info.name = "fuse-chained-allgathers";
  info.summary = "One all_gather over a flattened mesh group for an all_gather feeding another through identity views";
  info.options = {
      {"full-group", "the row-major flattened group (default: every mesh dim joined by '_', e.g. dp_tp)", "", {}},
      {"subgroup-order", "comma-separated mesh dim names, major first; decides the flattened group of each chain", "", {}},
      {"column-major-group", "the column-major flattened group (e.g. tp_dp); ascending chains need it", "", {}},
  };
  info.numerics = check::NumericsEffect::Preserves;
  info.idempotent = true;
  info.rules = {
      {"fuse-view-chain", "ag -> wait -> identity views -> ag -> wait becomes one gather over a flattened group"},
      {"fuse-direct-chain", "ag -> wait -> ag -> wait with a subgroup order becomes one gather over a flattened group"},
  };
  info.guards = {
      {"no-wait-upstream", "walking back from the gather's input over single-input nodes reaches no wait"},
      {"chain-value-shared", "a value between the first wait and the second gather has another user"},
      {"wait-has-other-users", "the first wait's result has another user"},
      {"not-after-all-gather", "the first wait does not wait on an all_gather with one user"},
      {"not-a-view", "a node between the wait and the second gather is not permute/transpose/t/view/reshape/"
                     "expand/unsqueeze/squeeze"},
      {"no-reorder", "the view chain has no real reorder (t, transpose of two dims, a non-trivial permute)"},
      {"sizes-not-full", "the two group sizes do not multiply to the full group's size"},
      {"same-group", "both gathers are over the same group"},
      {"group-not-in-order", "a gather's group is not in subgroup-order"},
      {"no-column-major-group", "an ascending chain (major dim first) and no column-major group given"},
      {"direct-without-order", "a direct chain (no views) and no subgroup order to tell its direction"},
      {"not-identity", "Z3 refuted the claim that the view chain is the identity (counterexample in the notes)"},
      {"identity-unknown", "the index map cannot model a view (a squeeze of a symbolic dim), or Z3 could neither "
                           "prove nor refute the identity claim"},
  };
  info.injectable_bugs = {
      {"swap-flattened-groups", "the row-major and column-major flattened groups are swapped (bug 6)"},
      {"skip-identity-proof", "any view chain with a reorder is taken as the identity, unproved (bug 7)"},
      {"shape-stride-identity", "a view chain is taken as the identity when its ends have equal shape and strides, "
                                "upstream's check (bug 13)"},
  };
  return info;
}

check::PassResult fuse_chained_allgathers_pass(ir::Graph& graph, const check::PassOptions& options) {
  check::PassResult result;
  // A single-rank graph has no mesh and no collectives to fuse.
  if (!graph.mesh()) return result;
  Fuser(graph, options, result).run();
  return result;
}

void register_collective_passes(check::PassRegistry& registry) {
  registry.add(fuse_chained_allgathers_pass_info(), fuse_chained_allgathers_pass);
}

}  // namespace passcheck::passes
