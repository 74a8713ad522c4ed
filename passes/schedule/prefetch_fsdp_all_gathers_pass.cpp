// prefetch-fsdp-all-gathers: the scheduling that makes compute batch up. Every forward
// FSDP all_gather (check::fsdp_all_gather_of) moves, with the single-input chain that
// feeds it from its parameter (a dtype cast), to the top of the graph in its original
// order, so all gathers are in flight before the first compute; the waits stay where
// they are, before their first use. With bucket-reduce-scatters=n > 0, each run of n
// consecutive reduce_scatters is issued together at the last one's place (their waits
// right after it), which lets the backward compute between them run back to back. A
// member whose wait is read before the bucket, or by another member, stays put. Before moving anything, it
// records the compute order (record_compute_order) for cap-compute-batch-size. Only moves
// nodes: what is computed is unchanged.
#include "framework/check/distributed_properties.h"
#include "framework/exec/op_properties.h"
#include "passes/schedule/schedule_passes.h"
#include "passes/schedule/stable_topo_sort.h"

#include <algorithm>
#include <set>
#include <vector>

namespace passcheck::passes {

namespace {

// The wait reading a collective's result (the verifier guarantees it is its only user).
ir::Node* wait_of(const ir::Node& collective) {
  for (const ir::Use& u : collective.output(0)->uses())
    if (!u.is_graph_output() && u.user->op() == "_c10d_functional::wait_tensor") return u.user;
  return nullptr;
}

}  // namespace

bool is_reduce_scatter(const ir::Node& node) { return node.op() == "_c10d_functional::reduce_scatter_tensor"; }

int64_t record_compute_order(ir::Graph& graph) {
  for (const ir::Node* n : graph.nodes())
    if (n->meta().custom.count(kScheduleRankKey)) return 0;
  int64_t rank = 0;
  std::string last_reduce_scatter;
  for (ir::Node* n : graph.nodes()) {
    if (is_reduce_scatter(*n)) last_reduce_scatter = n->output(0)->name();
    if (!exec::has_flop_formula(*n)) continue;
    n->mutable_meta().custom[kScheduleRankKey] = std::to_string(rank++);
    n->mutable_meta().custom[kScheduleReduceScatterKey] = last_reduce_scatter;
  }
  return rank;
}

check::PassResult prefetch_fsdp_all_gathers_pass(ir::Graph& graph, const check::PassOptions& options) {
  check::PassResult result;
  check::Decisions d(result, options);
  const int64_t bucket = options.get_int("bucket-reduce-scatters");
  struct Gather {
    std::vector<ir::Node*> nodes;  // the chain from the parameter, then the all_gather
  };
  std::vector<Gather> gathers;
  std::vector<ir::Node*> reduce_scatters;
  for (ir::Node* n : graph.nodes()) {
    if (is_reduce_scatter(*n)) {
      // The verifier guarantees every reduce_scatter its wait.
      if (wait_of(*n)) reduce_scatters.push_back(n);
      continue;
    }
    ir::Node* ag = check::fsdp_all_gather_of(*n);
    if (!ag || n->meta().phase != ir::Phase::Forward) continue;
    Gather g;
    g.nodes = *check::fsdp_unshard_chain(*ag);
    g.nodes.push_back(ag);
    bool pinned = false;
    for (const ir::Node* c : g.nodes) pinned |= is_order_barrier(*c);
    if (d.refuse("chain-has-barrier", pinned)) continue;
    gathers.push_back(std::move(g));
  }
  const std::vector<ir::Node*> before = graph.node_list();
  if (gathers.empty() && (bucket <= 0 || reduce_scatters.size() < 2)) return result;
  // The recording needs the order before any move; it changes the graph only when some
  // node moves (checked below), so a graph already scheduled stays unchanged.
  int64_t recorded = record_compute_order(graph);

  ir::Node* cursor = nullptr;  // the last node placed at the top
  for (const Gather& g : gathers) {
    for (ir::Node* n : g.nodes) {
      if (cursor) n->move_after(cursor);
      else if (graph.first_node() != n) n->move_before(graph.first_node());
      cursor = n;
    }
    d.fire("prefetch-all-gather");
  }
  if (bucket > 0) {
    for (size_t start = 0; start + 1 < reduce_scatters.size(); start += static_cast<size_t>(bucket)) {
      size_t end = std::min(reduce_scatters.size(), start + static_cast<size_t>(bucket));
      ir::Node* anchor = reduce_scatters[end - 1];
      ir::Node* wait_cursor = anchor;
      // Every member is issued before the anchor's place, so a member (or the anchor)
      // that reduces another member's waited result (fsdp2d's reduce_scatter over dp of
      // the one over tp) reads that wait early too.
      const std::set<const ir::Node*> members(reduce_scatters.begin() + static_cast<std::ptrdiff_t>(start),
                                              reduce_scatters.begin() + static_cast<std::ptrdiff_t>(end));
      for (size_t i = start; i + 1 < end; ++i) {
        ir::Node* rs = reduce_scatters[i];
        ir::Node* wait = wait_of(*rs);
        bool read_early = false;
        for (const ir::Use& u : wait->output(0)->uses())
          read_early |= !u.is_graph_output() && (u.user->is_before(anchor) || members.count(u.user) > 0);
        if (d.refuse("wait-read-before-bucket", read_early)) continue;
        rs->move_before(anchor);
        wait->move_after(wait_cursor);
        wait_cursor = wait;
        d.fire("bucket-reduce-scatter");
      }
    }
  }
  if (graph.node_list() == before) {
    // Nothing moved: drop the recording too.
    if (recorded > 0)
      for (ir::Node* n : graph.nodes()) {
        // Only the nodes it recorded: writing the metadata marks a node changed (and
        // gives a node without metadata its own).
        if (!n->meta().custom.count(kScheduleRankKey) && !n->meta().custom.count(kScheduleReduceScatterKey)) continue;
        ir::NodeMeta& m = n->mutable_meta();
        m.custom.erase(kScheduleRankKey);
        m.custom.erase(kScheduleReduceScatterKey);
      }
    return check::PassResult{false, {}, result.rules_fired, result.guards_refused, {}};
  }
  result.changed = true;
  result.stats["prefetched_all_gathers"] = static_cast<int64_t>(gathers.size());
  result.stats["recorded_compute_nodes"] = recorded;
  return result;
}

}  // namespace passcheck::passes
