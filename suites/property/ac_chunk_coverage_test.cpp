// Decision coverage of the AC and chunk passes: the fixed-seed campaign of
// generators/ac_chunk_coverage.h must reach every declared rule and guard of ac-regions,
// sac-tag, apply-ac, remat, chunk and concretize (traced programs, plus the IR-level
// decision situations for what tracing cannot produce), except the two gen::known_decision_gaps() lists with
// the reason no input graph can reach them (kept honest: the test fails when a listed gap
// is reached after all).
#include "generators/ac_chunk_coverage.h"
#include "generators/coverage_campaign.h"
#include "generators/decision_situations.h"

#include "framework/check/chunk_properties.h"
#include "framework/check/pipeline.h"
#include "generators/program_case.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <iostream>
#include <map>
#include <set>

namespace passcheck {
namespace {

const std::map<std::string, std::string>& known_gaps() { return gen::known_decision_gaps(); }

TEST(AcChunkCoverage, EveryDeclaredDecisionIsReachedForTheFixedSeed) {
  const gen::AcChunkCoverage c = gen::ac_chunk_coverage(check::PassRegistry::global());
  std::cout << c.cases << " pipeline runs, " << c.refusals << " refused with a clear error\n" << c.table();
  for (const std::string& r : c.refusal_messages) std::cout << "refused: " << r.substr(0, 300) << "\n";
  for (const std::string& p : c.problems) ADD_FAILURE() << "unexpected failure: " << p;
  std::set<std::string> unreached;
  for (const std::string& u : c.unreached()) {
    unreached.insert(u);
    if (!known_gaps().count(u)) ADD_FAILURE() << "never reached: " << u;
  }
  for (const auto& [decision, why] : known_gaps()) {
    // Only the gaps of the passes this campaign runs ("<pass> rule|guard <name>").
    const std::string pass = decision.substr(0, decision.find(' '));
    const std::vector<std::string> passes = gen::ac_chunk_passes();
    if (std::find(passes.begin(), passes.end(), pass) == passes.end()) continue;
    EXPECT_TRUE(unreached.count(decision)) << decision << " is reached now: remove it from the known gaps";
    std::cout << "known gap: " << decision << " (" << why << ")\n";
  }
  EXPECT_GT(c.refusals, 0);
  // Every name a pass reported is one it declares (the counts start from the declarations).
  for (const std::string& pass : gen::ac_chunk_passes()) {
    const check::PassInfo& info = check::PassRegistry::global().get(pass).info;
    auto size = [&](const gen::DecisionCounts& counts) { return counts.count(pass) ? counts.at(pass).size() : 0; };
    EXPECT_EQ(size(c.rules), info.rules.size()) << pass << " reported an undeclared rule";
    EXPECT_EQ(size(c.guards), info.guards.size()) << pass << " reported an undeclared guard";
  }
}

// Found by this campaign: early accumulation added a multi-output reduction's first
// output (native_layer_norm_backward's input gradient, a chunk-dim value) and left the
// chain it runs once on the sum marked as chunk 0 without a chunk 1 copy.
TEST(AcChunkCoverage, EarlyAccumulationKeepsTheChunkInvariants) {
  int accumulated = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const gen::ChunkCase c = gen::generate_chunk_case(seed, gen::chunk_coverage_options());
    std::shared_ptr<ir::Graph> g = gen::trace_chunk_case(c);
    const check::Pipeline chunk({{"chunk", {{"modules", c.config.modules}, {"early-accumulation", "true"}}}});
    std::vector<check::PassRecord> records;
    try {
      records = chunk.run(*g);
    } catch (const check::PassFailure& e) {
      EXPECT_NE(std::string(e.what()).find("chunk: "), std::string::npos) << e.what();  // a clear refusal
      continue;
    }
    accumulated += records.at(0).stats.at("early_accumulations") > 0;
    for (const std::string& v : check::check_chunk_invariants(*g))
      ADD_FAILURE() << "generate_chunk_case(" << seed << ") " << c.config.str() << "\n" << c.description << v;
  }
  EXPECT_GT(accumulated, 5);
}

// Every decision situation reaches the decision it is built for, with the outcome it
// expects, and the real passes hold the situation property on it; the same seed gives
// the same text.
TEST(AcChunkCoverage, EveryDecisionSituationReachesItsDecisionAndHolds) {
  const check::PassRegistry& registry = check::PassRegistry::global();
  for (size_t motif = 0; motif < gen::decision_motifs().size(); ++motif) {
    for (uint64_t seed = 0; seed < 4; ++seed) {
      const gen::DecisionSituation c = gen::generate_decision_situation(seed * 31 + 7, motif);
      EXPECT_EQ(c.text, gen::generate_decision_situation(seed * 31 + 7, motif).text);
      const std::string what = c.description + ", " + c.pipeline + "\n" + c.text;
      for (const std::string& v : gen::decision_situation_violations(c, c.pipeline, registry))
        ADD_FAILURE() << what << v;
      // The decision it names, counted by the passes themselves.
      const std::string pass = c.decision.substr(0, c.decision.find(' '));
      const bool guard = c.decision.find(" guard ") != std::string::npos;
      const std::string name = c.decision.substr(c.decision.rfind(' ') + 1);
      std::unique_ptr<ir::Graph> g = c.graph->clone();
      int64_t reached = 0;
      bool refused = false;
      for (const check::PassInvocation& p : check::parse_pipeline(c.pipeline, registry)) {
        const check::RegisteredPass& rp = registry.get(p.name);
        check::PassResult r;
        try {
          r = rp.run(*g, check::PassOptions(rp.info, p.options));
        } catch (const check::RefusedInput& e) {
          r = e.partial();
          refused = true;
        }
        if (p.name == pass) reached += guard ? (r.guards_refused.count(name) ? r.guards_refused.at(name) : 0)
                                             : (r.rules_fired.count(name) ? r.rules_fired.at(name) : 0);
        if (refused) break;
      }
      EXPECT_GT(reached, 0) << c.decision << " not reached by " << what;
      EXPECT_EQ(refused, c.refusal_expected) << what;
    }
  }
}

TEST(AcChunkCoverage, EveryDeclaredDecisionIsListed) {
  const gen::AcChunkCoverage c = gen::ac_chunk_coverage(check::PassRegistry::global(), {1, 0, 0, 0});
  for (const std::string& pass : gen::ac_chunk_passes()) {
    const check::PassInfo& info = check::PassRegistry::global().get(pass).info;
    EXPECT_FALSE(info.rules.empty()) << pass;
    for (const auto& r : info.rules) EXPECT_EQ(c.rules.at(pass).count(r.name), 1u) << pass << " " << r.name;
    for (const auto& g : info.guards) EXPECT_EQ(c.guards.at(pass).count(g.name), 1u) << pass << " " << g.name;
  }
  EXPECT_EQ(c.unreached().size(), [&] {
    size_t n = 0;
    for (const std::string& pass : gen::ac_chunk_passes()) {
      const check::PassInfo& info = check::PassRegistry::global().get(pass).info;
      n += info.rules.size() + info.guards.size();
    }
    return n;
  }());
}

// Regression (found by the coverage campaign's chunk programs): a region reads
// `x + running_mean`, then updates running_mean in place. Per-chunk execution gives chunk 1
// the updated buffer, interleaved chunks would read it before either update: the chunk
// pass must refuse. (Its mutant is caught on the read-before-update decision situation,
// DecisionMutantAc; here the update also reads no chunked value, so update-runs-once
// refuses next.)
TEST(AcChunkCoverage, ReadBeforeUpdateIsRefused) {
  const gen::ChunkCase c = gen::generate_chunk_case(10708086180188519124ull, gen::chunk_coverage_options());
  gen::ChunkCaseResult real = gen::run_chunk_case(c, check::PassRegistry::global());
  std::string all = real.refusal;
  for (const std::string& v : real.violations) all += v;
  EXPECT_NE(all.find("before"), std::string::npos) << all;
  EXPECT_NE(all.find("updates it in place"), std::string::npos) << all;
}

}  // namespace
}  // namespace passcheck
