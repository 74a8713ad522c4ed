// Fuzzing the FSDP and placement passes with generated rank graphs
// (generators/fsdp_graphs.h) against references written from the spec's words
// (specs/distributed.md), independent of the passes' code:
// - force-recompute-fsdp-all-gather tags exactly the all_gather, the wait, a cast the
//   gather reads, and the single-input chain below the wait (historical bug 5 tags less);
// - eliminate-alias-round-trips redirects exactly the reads whose consumer wants the
//   producer's placement at every slot reading that alias, erases exactly the aliases left
//   unread, and never hands a consumer a placement it does not want (bug 12).
// Each property holds for the real pass over RapidCheck runs and is shown to fail on the
// mutant of its historical bug within a bounded number of generated cases.
#include "framework/check/distributed_properties.h"
#include "framework/check/pipeline.h"
#include "framework/ir/text.h"
#include "generators/fsdp_graphs.h"
#include "suites/mutants/mutants.h"
#include "suites/support/rc_check.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace passcheck {
namespace {

using testing::check_n;

constexpr int64_t kUnshardRegion = 100000;

size_t distinct_inputs(const ir::Node& n) {
  std::set<const ir::Value*> in;
  for (const ir::Value* v : n.operands()) in.insert(v);
  return in.size();
}

// The node that alone reads `v`, or null (no reader, several, or a graph output).
const ir::Node* only_reader(const ir::Value& v) {
  std::set<const ir::Node*> readers;
  for (const ir::Use& u : v.uses()) {
    if (u.is_graph_output()) return nullptr;
    readers.insert(u.user);
  }
  return readers.size() == 1 ? *readers.begin() : nullptr;
}

// The spec: an FSDP wait reads an all_gather whose input comes from a graph input through
// nodes of exactly one distinct input; tag the gather, the wait, a cast the gather reads,
// and walk down while the current node has one reader with at most one distinct input.
std::set<std::string> reference_tags(const ir::Graph& g) {
  std::set<std::string> tags;
  for (const ir::Node* wait : g.nodes()) {
    if (wait->op() != "_c10d_functional::wait_tensor") continue;
    const ir::Node* ag = wait->operand(0)->producer();
    if (!ag || ag->op() != "_c10d_functional::all_gather_into_tensor") continue;
    bool from_input = true;
    for (const ir::Value* v = ag->operand(0); v->producer(); v = v->producer()->operand(0))
      if (distinct_inputs(*v->producer()) != 1) {
        from_input = false;
        break;
      }
    if (!from_input) continue;
    tags.insert(ag->output()->name());
    tags.insert(wait->output()->name());
    const ir::Node* in = ag->operand(0)->producer();
    if (in && in->op() == "aten::_to_copy") tags.insert(in->output()->name());
    for (const ir::Node* cur = wait; const ir::Node* next = only_reader(*cur->output());) {
      if (distinct_inputs(*next) > 1) break;
      tags.insert(next->output()->name());
      cur = next;
    }
  }
  return tags;
}

// "" when the pass tagged exactly the reference set, else what differs.
std::string force_recompute_difference(const std::string& text, const std::string& pass) {
  std::unique_ptr<ir::Graph> g = ir::parse_graph(text, "generated");
  const std::set<std::string> expected = reference_tags(*g);
  check::Pipeline::parse(pass, mutants::registry_with_mutants()).run(*g);
  std::string out;
  for (const ir::Node* n : g->nodes()) {
    const bool tagged = n->meta().recompute == ir::RecomputePolicy::MustRecompute &&
                        n->meta().ac_region_id == kUnshardRegion;
    const bool want = expected.count(n->output()->name()) > 0;
    if (tagged != want)
      out += "%" + n->output()->name() + (want ? " should be tagged MUST_RECOMPUTE but is not" : " was tagged but is "
                                                                                                  "no part of an unshard") +
             "\n";
  }
  return out;
}

TEST(FsdpProperties, ForceRecomputeTagsExactlyTheUnshardChains) {
  check_n(300, [] {
    const std::string text = *gen::arbitrary_fsdp_chain_graph();
    const std::string diff = force_recompute_difference(text, "force-recompute-fsdp-all-gather");
    if (!diff.empty()) RC_FAIL(diff + text);
  });
}

// The alias reference: the operand each consumer slot must read after the pass.
struct AliasExpectation {
  std::map<std::pair<std::string, size_t>, std::string> reads;  // (consumer, slot) -> value
  std::set<std::string> erased;
};

AliasExpectation reference_alias_rewrite(const ir::Graph& g) {
  AliasExpectation e;
  std::map<std::string, int64_t> readers_left;
  for (const ir::Node* n : g.nodes()) {
    if (n->op() == "aten::alias") readers_left[n->output()->name()] = 0;
    for (size_t s = 0; s < n->num_operands(); ++s) e.reads[{n->output()->name(), s}] = n->operand(s)->name();
  }
  for (const ir::Node* c : g.nodes()) {
    const std::vector<ir::Value*> operands = c->operands();
    for (const ir::Value* v : std::set<ir::Value*>(operands.begin(), operands.end())) {
      const ir::Node* alias = v->producer();
      if (!alias || alias->op() != "aten::alias") continue;
      const ir::Value* x = alias->operand(0);
      bool all_want_x = v->placements() != x->placements() && !c->meta().wanted_placements.empty();
      for (size_t s = 0; all_want_x && s < c->num_operands(); ++s)
        if (c->operand(s) == v && c->meta().wanted_placements.at(s) != x->placements()) all_want_x = false;
      if (all_want_x) {
        for (size_t s = 0; s < c->num_operands(); ++s)
          if (c->operand(s) == v) e.reads[{c->output()->name(), s}] = x->name();
      } else {
        ++readers_left[v->name()];
      }
    }
  }
  for (const auto& [alias, left] : readers_left)
    if (left == 0 && g.find_value(alias)->placements() != g.find_value(alias)->producer()->operand(0)->placements())
      e.erased.insert(alias);
  return e;
}

std::string alias_difference(const std::string& text, const std::string& pass) {
  std::unique_ptr<ir::Graph> before = ir::parse_graph(text, "generated");
  std::unique_ptr<ir::Graph> g = before->clone();
  const AliasExpectation e = reference_alias_rewrite(*g);
  check::Pipeline::parse(pass, mutants::registry_with_mutants()).run(*g);
  std::string out;
  for (const std::string& v : check::check_redirected_reads_wanted(*before, *g)) out += v + "\n";
  for (const auto& [slot, value] : e.reads) {
    const ir::Value* consumer = g->find_value(slot.first);
    if (!consumer) {
      if (!e.erased.count(slot.first)) out += "%" + slot.first + " disappeared\n";
      continue;
    }
    const std::string now = consumer->producer()->operand(slot.second)->name();
    if (now != value)
      out += "%" + slot.first + " slot " + std::to_string(slot.second) + " reads %" + now + ", expected %" + value + "\n";
  }
  for (const ir::Node* n : g->nodes())
    if (n->op() == "aten::alias" && e.erased.count(n->output()->name()))
      out += "alias %" + n->output()->name() + " has no reader left but was kept\n";
  return out;
}

TEST(FsdpProperties, AliasRoundTripsRewireExactlyTheConsumersWantingTheProducer) {
  check_n(300, [] {
    const std::string text = *gen::arbitrary_alias_graph();
    const std::string diff = alias_difference(text, "eliminate-alias-round-trips");
    if (!diff.empty()) RC_FAIL(diff + text);
  });
}

// The first of a fixed sequence of generated graphs on which `difference` reports
// something for `mutant` (-1 when none of `max_cases` does).
template <typename Difference>
int64_t first_caught(const std::string& mutant, Difference difference, std::string (*graph_for)(uint64_t),
                     int64_t max_cases, std::string& message) {
  for (int64_t i = 0; i < max_cases; ++i) {
    message = difference(graph_for(static_cast<uint64_t>(i)), mutant);
    if (!message.empty()) return i;
  }
  return -1;
}

TEST(FsdpProperties, TheTagOnlySliceMutantIsCaughtByFuzzing) {
  std::string message;
  int64_t at = first_caught("mutant-force-recompute-fsdp-tags-only-slice", force_recompute_difference,
                            gen::fsdp_chain_graph_for_seed, 100, message);
  ASSERT_GE(at, 0) << "bug 5 survived 100 generated graphs";
  std::printf("bug 5 caught at generated graph %lld: %s", static_cast<long long>(at), message.c_str());
  EXPECT_NE(message.find("should be tagged MUST_RECOMPUTE"), std::string::npos) << message;
}

TEST(FsdpProperties, TheThirdPlacementMutantIsCaughtByFuzzing) {
  std::string message;
  int64_t at = first_caught("mutant-eliminate-alias-rewires-third-placement", alias_difference,
                            gen::alias_graph_for_seed, 100, message);
  ASSERT_GE(at, 0) << "bug 12 survived 100 generated graphs";
  std::printf("bug 12 caught at generated graph %lld: %s", static_cast<long long>(at), message.c_str());
}

}  // namespace
}  // namespace passcheck
