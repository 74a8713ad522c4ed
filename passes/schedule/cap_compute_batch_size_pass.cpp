// cap-compute-batch-size: after a scheduling pass, a stable topological sort can run
// hundreds of compute nodes back to back (their activations all live at once). In each
// run of nodes between two reduce_scatters holding more than max-consecutive compute
// nodes (exec::has_flop_formula), the compute nodes are sorted by their recorded rank
// (schedule_rank, written by record_compute_order before scheduling; the current order
// when a node has none), cut into chunks of max-consecutive, every node of a chunk
// ordered after the previous chunk's last node and after the reduce_scatter recorded as
// the nearest before it (upstream pins a chunk's first node only); then the stable topological sort (stable_topo_sort.h) reorders the graph honouring
// these extra dependencies. The sort works on a copy of the order: on a cycle the graph
// is left untouched, the fallback is counted (stats cycle_fallbacks, guard cycle).
// Historical bug 14 (injectable): upstream moved nodes in place before it noticed the
// cycle, so its fallback kept a graph out of topological order.
#include "framework/exec/op_properties.h"
#include "passes/schedule/schedule_passes.h"
#include "passes/schedule/stable_topo_sort.h"

#include <algorithm>
#include <string>

namespace passcheck::passes {

namespace {

// A node's recorded rank, or nullopt.
std::optional<int64_t> recorded_rank(const ir::Node& n) {
  auto it = n.meta().custom.find(kScheduleRankKey);
  if (it == n.meta().custom.end()) return std::nullopt;
  try {
    return std::stoll(it->second);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Bug 14: each extra dependency applied in place by moving the later node alone right
// after the earlier one, before the cycle check; the moved node's users are not moved.
void reorder_in_place(const std::vector<OrderEdge>& extra) {
  for (const auto& [first, second] : extra)
    if (second->is_before(first)) second->move_after(first);
}

}  // namespace

check::PassResult cap_compute_batch_size_pass(ir::Graph& graph, const check::PassOptions& options) {
  check::PassResult result;
  check::Decisions d(result, options);
  const size_t max = static_cast<size_t>(options.get_int("max-consecutive"));
  std::vector<std::vector<ir::Node*>> runs(1);
  for (ir::Node* n : graph.nodes()) {
    if (is_reduce_scatter(*n)) runs.emplace_back();
    else if (exec::has_flop_formula(*n)) runs.back().push_back(n);
  }
  std::vector<OrderEdge> extra;
  int64_t capped = 0;
  for (std::vector<ir::Node*>& run : runs) {
    if (run.size() <= max) continue;
    bool all_recorded = std::all_of(run.begin(), run.end(), [](const ir::Node* n) { return recorded_rank(*n).has_value(); });
    if (!d.refuse("no-recorded-order", !all_recorded))
      std::stable_sort(run.begin(), run.end(),
                       [](const ir::Node* a, const ir::Node* b) { return *recorded_rank(*a) < *recorded_rank(*b); });
    for (size_t start = 0; start < run.size(); start += max) {
      if (start > 0) {
        // The whole chunk after the previous one: its nodes need not depend on its first.
        for (size_t i = start; i < std::min(run.size(), start + max); ++i) extra.emplace_back(run[start - 1], run[i]);
        d.fire("chunk-after-previous");
      }
      // The chunk's first node after its recorded nearest reduce_scatter, and so every
      // other node of the chunk after its own: none is hoisted above a reduce_scatter it
      // followed in the recorded order (upstream pins the first only, which lets the
      // rest of a chunk that straddles a reduce_scatter run ahead of it).
      for (size_t i = start; i < std::min(run.size(), start + max); ++i) {
        auto rs = run[i]->meta().custom.find(kScheduleReduceScatterKey);
        if (rs == run[i]->meta().custom.end() || rs->second.empty()) continue;
        ir::Value* v = graph.find_value(rs->second);
        if (d.refuse("recorded-reduce-scatter-gone", !v || !v->producer() || !is_reduce_scatter(*v->producer())))
          continue;
        extra.emplace_back(v->producer(), run[i]);
        d.fire("chunk-after-reduce-scatter");
      }
    }
    ++capped;
  }
  result.stats["capped_runs"] = capped;
  if (extra.empty()) return result;
  const std::vector<ir::Node*> before = graph.node_list();
  if (d.injected("reorder-in-place-before-cycle-check")) reorder_in_place(extra);
  TopoOrder sorted = stable_topological_order(graph, extra);
  if (d.refuse("cycle", !sorted.acyclic())) {
    // The upstream fallback: the order as it now is, which the in-place moves broke.
    result.stats["cycle_fallbacks"] = 1;
    result.changed = graph.node_list() != before;
    return result;
  }
  result.changed = apply_order(graph, sorted.order) || graph.node_list() != before;
  return result;
}

void register_schedule_passes(check::PassRegistry& registry) {
  registry.add({"prefetch-fsdp-all-gathers",
                "Issue FSDP all_gathers at the top and reduce_scatters in buckets, recording the compute order",
                {{"bucket-reduce-scatters", "reduce_scatters issued together (0: leave them)", "8", {},
                  check::option_checks::integer_in(0, 1 << 20)}},
                check::NumericsEffect::Preserves,
                true,
                {{"prefetch-all-gather", "an FSDP all_gather and its input chain move to the top of the graph"},
                 {"bucket-reduce-scatter", "a reduce_scatter and its wait move to the last reduce_scatter of its bucket"}},
                {{"chain-has-barrier", "an all_gather chain with an in-place, random or side-effecting node stays put"},
                 {"wait-read-before-bucket", "a reduce_scatter whose wait is read before its bucket stays put"}}},
               prefetch_fsdp_all_gathers_pass);
  check::PassInfo cap{"cap-compute-batch-size",
                      "Cut runs of compute nodes between reduce_scatters into chunks ordered after the recorded ones",
                      {{"max-consecutive", "compute nodes a chunk holds", "8", {}, check::option_checks::integer_in(1, 1 << 20)}},
                      check::NumericsEffect::Preserves,
                      true,
                      {{"chunk-after-previous", "a chunk's first compute node is ordered after the previous chunk"},
                       {"chunk-after-reduce-scatter",
                        "a chunk's first compute node is ordered after its recorded nearest reduce_scatter"}},
                      {{"no-recorded-order", "a run with a compute node without a recorded rank keeps the current order"},
                       {"recorded-reduce-scatter-gone", "a recorded reduce_scatter no longer in the graph adds no dependency"},
                       {"cycle", "the dependencies form a cycle: the graph is left untouched (cycle_fallbacks)"}}};
  cap.injectable_bugs = {{"reorder-in-place-before-cycle-check",
                          "the graph is reordered in place before the cycle is noticed; the fallback keeps a graph out "
                          "of topological order (bug 14)"}};
  registry.add(cap, cap_compute_batch_size_pass);
}

}  // namespace passcheck::passes
