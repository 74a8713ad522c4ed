// canonicalize: remove-detach, remove-identity-view, remove-b2b-transpose,
// remove-identity-slice and normalize-views, in that order. One round of the five is
// not always a fixpoint: removing an identity slice can put two transposes back to
// back (t(slice(t(x)))) after the transpose pass already ran. So the round repeats
// until one changes nothing, which makes canonicalize idempotent like its parts; on
// traced graphs the second round finds nothing and the cost is one extra scan. Its
// rules and guards are its steps', named "<step>/<decision>"; faults injected under
// those names reach the step that owns the decision.
#include "passes/cleanup/cleanup_passes.h"
#include "passes/cleanup/rewrite_util.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace passcheck::passes {

namespace {

using Step = check::PassResult (*)(ir::Graph&, const check::PassOptions&);
using StepInfo = check::PassInfo (*)();

struct CanonicalizeStep {
  Step run;
  StepInfo info;
};

const CanonicalizeStep steps[] = {
    {remove_detach_pass, remove_detach_pass_info},
    {remove_identity_view_pass, remove_identity_view_pass_info},
    {remove_b2b_transpose_pass, remove_b2b_transpose_pass_info},
    {remove_identity_slice_pass, remove_identity_slice_pass_info},
    {normalize_views_pass, normalize_views_pass_info},
};

// canonicalize's own decision names: the step's, qualified by the step ("remove-detach/forward-detach").
std::string qualified(const std::string& step, const std::string& decision) { return step + "/" + decision; }

// The faults of one step: those injected into canonicalize under the step's qualified names.
check::InjectedFaults faults_for(const std::string& step, const check::InjectedFaults& faults) {
  check::InjectedFaults out;
  const std::string prefix = step + "/";
  for (const auto* from : {&faults.disabled_guards, &faults.widened_rules}) {
    auto* to = from == &faults.disabled_guards ? &out.disabled_guards : &out.widened_rules;
    for (const std::string& name : *from)
      if (name.rfind(prefix, 0) == 0) to->insert(name.substr(prefix.size()));
  }
  return out;
}

}  // namespace

check::PassInfo canonicalize_pass_info() {
  check::PassInfo info;
  info.name = "canonicalize";
  info.summary =
      "remove-detach, remove-identity-view, remove-b2b-transpose, remove-identity-slice, normalize-views "
      "(repeated until nothing changes)";
  // Its decisions are its steps', under qualified names, so coverage and mutants treat
  // the composition as the pass it is registered as.
  for (const CanonicalizeStep& step : steps) {
    check::PassInfo part = step.info();
    for (const check::DecisionInfo& r : part.rules) info.rules.push_back({qualified(part.name, r.name), r.description});
    for (const check::DecisionInfo& g : part.guards)
      info.guards.push_back({qualified(part.name, g.name), g.description});
  }
  info.numerics = check::NumericsEffect::Preserves;
  info.idempotent = true;
  return info;
}

check::PassResult canonicalize_pass(ir::Graph& graph, const check::PassOptions& options) {
  std::vector<std::pair<std::string, check::PassOptions>> step_options;
  for (const CanonicalizeStep& step : steps) {
    std::string name = step.info().name;
    step_options.emplace_back(name, check::PassOptions().with_faults(faults_for(name, options.faults())));
  }
  // Every round that changes something erases or rewrites at least one node, so the
  // number of rounds is bounded by the graph; the cap only guards against a bug.
  const int64_t max_rounds = static_cast<int64_t>(graph.num_nodes()) + 2;
  // Without injected faults each step acts only on nodes of its own operators (detach;
  // view, reshape, _unsafe_view and _reshape_alias; t and transpose.int; slice.Tensor;
  // view and _unsafe_view), and no step creates a node but normalize-views, whose
  // reshape takes the place of its view. So one scan gives every step its candidates in
  // graph order, and they stay exact from round to round: a round walks them instead of
  // the graph five times. With faults (mutants) a widened rule may take any operator,
  // and every step scans the graph.
  const bool by_candidates = options.faults().empty();
  detail::NodeList detaches, views, transposes, slices;
  if (by_candidates)
    for (ir::Node* n : graph.nodes()) {
      const std::string& op = n->op();
      if (op == "aten::detach") detaches.push_back(n);
      else if (op == "aten::view" || op == "aten::reshape" || op == "aten::_unsafe_view" || op == "aten::_reshape_alias")
        views.push_back(n);
      else if (op == "aten::t" || op == "aten::transpose.int") transposes.push_back(n);
      else if (op == "aten::slice.Tensor") slices.push_back(n);
    }
  detail::NodeList* candidates[] = {&detaches, &views, &transposes, &slices, &views};
  using StepOn = check::PassResult (*)(ir::Graph&, const check::PassOptions&, detail::NodeList*);
  const StepOn steps_on[] = {detail::remove_detach_on, detail::remove_identity_view_on, detail::remove_b2b_transpose_on,
                             detail::remove_identity_slice_on, detail::normalize_views_on};
  static_assert(std::size(steps_on) == std::size(steps));
  check::PassResult result;
  int64_t rounds = 0;
  bool round_changed = true;
  while (round_changed) {
    if (++rounds > max_rounds) throw std::logic_error("canonicalize: no fixpoint after " + std::to_string(max_rounds) + " rounds");
    round_changed = false;
    if (by_candidates)
      for (detail::NodeList* list : {&detaches, &views, &transposes, &slices})
        list->erase(std::remove(list->begin(), list->end(), nullptr), list->end());
    for (size_t i = 0; i < std::size(steps); ++i) {
      check::PassResult r = by_candidates ? steps_on[i](graph, step_options[i].second, candidates[i])
                                          : steps[i].run(graph, step_options[i].second);
      round_changed |= r.changed;
      for (const auto& [k, v] : r.stats) result.stats[k] += v;
      detail::add_decisions(result, r, step_options[i].first + "/");
    }
    result.changed |= round_changed;
  }
  result.stats["rounds"] = rounds;
  return result;
}

}  // namespace passcheck::passes
