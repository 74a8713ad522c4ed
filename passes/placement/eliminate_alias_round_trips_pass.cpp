// eliminate-alias-round-trips: a placement solver may give an aten::alias A of X another
// placement than X's; a consumer that wants A's value in X's placement would then have
// it redistributed back, keeping X alive to feed the round trip. Each consumer C whose
// wanted placements (NodeMeta::wanted_placements) at ALL the slots where it reads A equal
// X's placement reads X at all those slots instead; A is erased once nothing reads it.
// A consumer wanting A's placement, or a third one, keeps reading A: rewiring it would
// hand it a value in a placement it does not want (historical bug 12). An alias is the
// identity on the local tensor, so the numbers computed never change.
#include "passes/placement/placement_passes.h"

#include <algorithm>
#include <vector>

namespace passcheck::passes {

check::PassResult eliminate_alias_round_trips_pass(ir::Graph& graph, const check::PassOptions& options) {
  check::PassResult result;
  check::Decisions d(result, options);
  int64_t rewired = 0, erased = 0;
  for (ir::Node* alias : graph.node_list()) {
    if (alias->op() != "aten::alias" || alias->num_operands() != 1) continue;
    ir::Value* producer = alias->operand(0);
    ir::Value* aliased = alias->output(0);
    if (d.refuse("no-placements", producer->placements().empty() || aliased->placements().empty())) continue;
    if (d.refuse("placements-equal", producer->placements() == aliased->placements())) continue;
    std::vector<ir::Node*> consumers;
    for (const ir::Use& u : aliased->uses())
      if (!u.is_graph_output() && std::find(consumers.begin(), consumers.end(), u.user) == consumers.end())
        consumers.push_back(u.user);
    for (ir::Node* consumer : consumers) {
      const auto& wanted = consumer->meta().wanted_placements;
      if (d.refuse("no-wanted-placements", wanted.size() != consumer->num_operands())) continue;
      std::vector<size_t> slots;
      bool wants_alias = false, wants_producer = true;
      for (size_t slot = 0; slot < consumer->num_operands(); ++slot) {
        if (consumer->operand(slot) != aliased) continue;
        slots.push_back(slot);
        wants_alias |= wanted[slot] == aliased->placements();
        wants_producer &= wanted[slot] == producer->placements();
      }
      if (d.refuse("consumer-wants-alias-placement", wants_alias)) continue;
      // Bug 12: a consumer wanting a third placement was rewired too.
      if (d.refuse("consumer-wants-third-placement", !wants_producer) && !d.injected("rewire-third-placement"))
        continue;
      for (size_t slot : slots) consumer->replace_operand(slot, producer);
      d.fire("rewire-consumer");
      ++rewired;
    }
    if (!aliased->has_uses()) {
      graph.erase(alias);
      d.fire("erase-alias");
      ++erased;
    }
  }
  result.changed = rewired > 0 || erased > 0;
  result.stats["rewired_consumers"] = rewired;
  result.stats["erased_aliases"] = erased;
  return result;
}

void register_placement_passes(check::PassRegistry& registry) {
  check::PassInfo info{
      "eliminate-alias-round-trips",
      "Consumers wanting an alias's input in its producer's placement read the producer; unused aliases go",
      {},
      check::NumericsEffect::Preserves,
      true,
      {{"rewire-consumer", "a consumer wanting the producer's placement at every slot reading the alias reads the producer"},
       {"erase-alias", "an alias nothing reads any more is erased"}},
      {{"no-placements", "an alias or producer without recorded placements is left alone"},
       {"placements-equal", "an alias placed like its producer is no round trip"},
       {"no-wanted-placements", "a consumer without wanted placements keeps reading the alias"},
       {"consumer-wants-alias-placement", "a consumer wanting the alias's placement at some slot keeps reading it"},
       {"consumer-wants-third-placement", "a consumer wanting neither placement keeps reading the alias"}}};
  info.injectable_bugs = {{"rewire-third-placement",
                           "a consumer wanting a third placement is rewired to the producer as well (bug 12)"}};
  registry.add(info, eliminate_alias_round_trips_pass);
}

}  // namespace passcheck::passes
