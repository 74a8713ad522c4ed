// canonicalize: remove-detach, remove-identity-view, remove-b2b-transpose,
// remove-identity-slice and normalize-views, in that order. One round of the five is
// not always a fixpoint: removing an identity slice can put two transposes back to
// back (t(slice(t(x)))) after the transpose pass already ran. So the round repeats
// until one changes nothing, which makes canonicalize idempotent like its parts; on
// traced graphs the second round finds nothing and the cost is one extra scan.
#include "passes/cleanup/cleanup_passes.h"

#include <stdexcept>

namespace passcheck::passes {

check::PassInfo canonicalize_pass_info() {
  check::PassInfo info;
  info.name = "canonicalize";
  info.summary =
      "remove-detach, remove-identity-view, remove-b2b-transpose, remove-identity-slice, normalize-views "
      "(repeated until nothing changes)";
  info.numerics = check::NumericsEffect::Preserves;
  info.idempotent = true;
  return info;
}

check::PassResult canonicalize_pass(ir::Graph& graph, const check::PassOptions&) {
  using Step = check::PassResult (*)(ir::Graph&, const check::PassOptions&);
  static const Step steps[] = {remove_detach_pass, remove_identity_view_pass, remove_b2b_transpose_pass,
                               remove_identity_slice_pass, normalize_views_pass};
  // Every round that changes something erases or rewrites at least one node, so the
  // number of rounds is bounded by the graph; the cap only guards against a bug.
  const int64_t max_rounds = static_cast<int64_t>(graph.num_nodes()) + 2;
  check::PassResult result;
  int64_t rounds = 0;
  bool round_changed = true;
  while (round_changed) {
    if (++rounds > max_rounds) throw std::logic_error("canonicalize: no fixpoint after " + std::to_string(max_rounds) + " rounds");
    round_changed = false;
    for (Step step : steps) {
      check::PassResult r = step(graph, check::PassOptions());
      round_changed |= r.changed;
      for (const auto& [k, v] : r.stats) result.stats[k] += v;
    }
    result.changed |= round_changed;
  }
  result.stats["rounds"] = rounds;
  return result;
}

}  // namespace passcheck::passes
