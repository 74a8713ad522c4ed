// Every registered decision mutant of the AC and chunk passes (a guard disabled, a rule
// widened: decision_mutants_ac.h) is caught by the generic properties on generated
// programs within a bounded, fixed-seed campaign: check_case (pass properties plus the
// remat properties) for the AC passes, the situation property on the IR-level decision
// situations (gen::decision_situation_violations: a clear refusal where the real passes
// refuse; else the gate and the input graph's numbers), run_chunk_case (claims proved, chunk invariants,
// no symbol left, graph chunking bitwise equal to eager chunking) for the chunk passes.
// A case counts only when the real pipeline holds on it or refuses it with a clear
// error, and the mutant does not refuse it. Each test prints the cases to the first
// failure.
#include "framework/check/pass_properties.h"
#include "framework/check/pipeline.h"
#include "framework/exec/inputs.h"
#include "framework/check/repro.h"
#include "generators/decision_situations.h"
#include "generators/program.h"
#include "generators/program_case.h"
#include "suites/mutants/ac_mutants.h"
#include "suites/mutants/decision_mutants_ac.h"

#include <gtest/gtest.h>

#include <iostream>

namespace passcheck {
namespace mutants {
// GoogleTest prints a parameter through this (found by argument-dependent lookup).
void PrintTo(const DecisionMutant& m, std::ostream* os) { *os << m.pass; }
}  // namespace mutants

namespace {

using mutants::DecisionMutant;
using mutants::registry_with_mutants;

constexpr int kAcCases = 80;
constexpr int kChunkCases = 80;

uint64_t case_seed(int i) { return 0x5eed0000ULL + static_cast<uint64_t>(i) * 7919; }

// The pipelines a case runs with `pass` standing for the real pass it replaces.
std::vector<std::string> ac_pipelines(const std::string& replaces, const std::string& pass) {
  std::vector<std::string> out;
  const char* policies[] = {"default", "eager", "full", "op"};
  if (replaces == "sac-tag") {
    for (const char* p : policies) out.push_back("ac-regions," + pass + "{policy=" + p + "},remat{rng=replay}");
    // Without rng=replay, a random op tagged recomputable is refused by remat.
    out.push_back("ac-regions," + pass + "{policy=default},remat");
    out.push_back("ac-regions," + pass + "{policy=full},remat");
  } else if (replaces == "apply-ac") {
    for (const char* m : {"{mode=full}", "{mode=selective,option=2}", "{mode=selective,option=op}"})
      out.push_back("ac-regions," + pass + m + ",remat{rng=replay}");
    out.push_back("ac-regions," + pass + "{mode=full},remat");
  } else if (replaces == "remat") {
    for (const char* p : policies) out.push_back(std::string("ac-regions,sac-tag{policy=") + p + "}," + pass + "{rng=replay}");
    out.push_back("ac-regions,sac-tag{policy=default}," + pass);
  } else {
    for (const char* p : policies) out.push_back(pass + ",sac-tag{policy=" + std::string(p) + "},remat{rng=replay}");
  }
  return out;
}

struct Caught {
  int case_index = -1;
  int runs = 0;
  std::string what;
};

// One run: the real pipeline and the mutant's on one graph. Caught when the real one
// holds (or refuses the graph) and the mutant's violates a property; a refusal by the
// mutant where the real pipeline accepts the graph is a violation too.
bool caught_on(const ir::Graph& graph, const gen::GeneratedCase& g, const std::string& real, const std::string& mutant,
               std::string& what) {
  const check::PassRegistry& registry = registry_with_mutants();
  const bool real_refuses = check::pipeline_refuses(graph, real, registry);
  if (!real_refuses && !check::check_case(graph, real, g.input_seed, g.int_high, registry).violations.empty())
    return false;  // the real pipeline fails this case: not the mutant's doing
  if (real_refuses && check::pipeline_refuses(graph, mutant, registry)) return false;
  const auto v = check::check_case(graph, mutant, g.input_seed, g.int_high, registry).violations;
  if (v.empty()) return false;
  what = mutant + ": " + v.front();
  return true;
}

// The generic properties without remat's memory promise, which assumes a tagger that
// saved what remat refuses to recompute (randomly tagged graphs break that assumption).
std::vector<std::string> numbers_and_gate(const ir::Graph& graph, const std::vector<c10::IValue>& inputs,
                                          const std::string& pipeline) {
  std::vector<std::string> out;
  for (const std::string& v : check::check_pass_properties(graph, inputs, pipeline, registry_with_mutants()).violations)
    if (v.rfind("bytes of recomputable values held", 0) != 0) out.push_back(v);
  return out;
}

Caught catch_ac_mutant(const DecisionMutant& m) {
  const std::vector<std::string> real = ac_pipelines(m.replaces, m.replaces);
  const std::vector<std::string> mutant = ac_pipelines(m.replaces, m.pass);
  Caught c;
  for (int i = 0; i < kAcCases; ++i) {
    const uint64_t seed = case_seed(i);
    const gen::GeneratedCase g = gen::generate_case(seed, gen::ac_coverage_options());
    std::string what;
    for (size_t p = 0; p < real.size(); ++p) {
      ++c.runs;
      if (caught_on(*g.graph, g, real[p], mutant[p], what)) {
        c.case_index = i;
        c.what = "generate_case(" + std::to_string(seed) + "), " + what;
        return c;
      }
    }
    if (m.replaces == "remat") {
      // Tags from elsewhere, unsafe ones included: remat's own guards must keep the
      // numbers. (The remat properties assume a tagger that saved what remat refuses, so
      // only the generic pass properties apply here.)
      exec::InputOptions in;
      in.seed = g.input_seed;
      in.int_high = g.int_high;
      const auto inputs = exec::make_inputs(*g.graph, in);
      const check::PassRegistry& registry = registry_with_mutants();
      for (uint64_t t = 0; t < 3; ++t) {
        std::unique_ptr<ir::Graph> tagged = g.graph->clone();
        gen::tag_randomly(*tagged, seed + t);
        ++c.runs;
        if (!numbers_and_gate(*tagged, inputs, "remat{rng=replay}").empty()) continue;
        const auto v = numbers_and_gate(*tagged, inputs, m.pass + "{rng=replay}");
        if (v.empty()) continue;
        c.case_index = i;
        c.what = "generate_case(" + std::to_string(seed) + ") tagged at random (" + std::to_string(seed + t) + "), " +
                 m.pass + ": " + v.front();
        return c;
      }
    }
  }
  return c;
}

Caught catch_chunk_mutant(const DecisionMutant& m) {
  const check::PassRegistry& registry = registry_with_mutants();
  const std::string chunk = m.replaces == "chunk" ? m.pass : "chunk";
  const std::string concretize = m.replaces == "concretize" ? m.pass : "concretize";
  Caught c;
  for (int i = 0; i < kChunkCases; ++i) {
    const uint64_t seed = case_seed(i);
    const gen::ChunkCase cc = gen::generate_chunk_case(seed, gen::chunk_coverage_options());
    ++c.runs;
    const gen::ChunkCaseResult base = gen::run_chunk_case(cc, registry);
    if (!base.violations.empty()) continue;
    const gen::ChunkCaseResult r = gen::run_chunk_case(cc, registry, chunk, concretize);
    // A refusal the real passes do not make is a failure too, and so is one that moves
    // from chunk to concretize: the mutant's chunk pass let through a program it must
    // refuse, recording claims that do not hold (concretize finds one false at the hint).
    const auto pass_of = [](const std::string& refusal) { return refusal.substr(0, refusal.find(':')); };
    const bool new_refusal = !r.refusal.empty() && (base.refusal.empty() || pass_of(base.refusal) != pass_of(r.refusal));
    if (r.violations.empty() && !new_refusal) continue;
    if (r.violations.empty()) {
      c.case_index = i;
      c.what = "generate_chunk_case(" + std::to_string(seed) + ") " + cc.config.str() +
               ": refused where the real passes " + (base.refusal.empty() ? "accept it" : "refuse it in " + pass_of(base.refusal)) +
               ": " + r.refusal;
      return c;
    }
    c.case_index = i;
    c.what = "generate_chunk_case(" + std::to_string(seed) + ") " + cc.config.str() + ": " + r.violations.front();
    return c;
  }
  return c;
}

// `pipeline` with every invocation of `real` renamed `mutant` (options kept).
std::string with_pass(const std::string& pipeline, const std::string& real, const std::string& mutant) {
  std::string out;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= pipeline.size(); ++i) {
    if (i < pipeline.size() && pipeline[i] == '{') ++depth;
    if (i < pipeline.size() && pipeline[i] == '}') --depth;
    if (i < pipeline.size() && (pipeline[i] != ',' || depth > 0)) continue;
    const std::string item = pipeline.substr(start, i - start);
    const size_t brace = item.find('{');
    const std::string name = item.substr(0, brace);
    out += (out.empty() ? "" : ",") + (name == real ? mutant + (brace == std::string::npos ? "" : item.substr(brace)) : item);
    start = i + 1;
  }
  return out;
}

constexpr uint64_t kSituationSeeds = 6;

// The decision situations whose pipeline runs the mutated pass: caught when the real
// passes hold the situation property and the mutant's violates it.
Caught catch_on_situations(const DecisionMutant& m) {
  const check::PassRegistry& registry = registry_with_mutants();
  Caught c;
  for (size_t motif = 0; motif < gen::decision_motifs().size(); ++motif) {
    for (uint64_t s = 0; s < kSituationSeeds; ++s) {
      const gen::DecisionSituation sit = gen::generate_decision_situation(case_seed(static_cast<int>(s)), motif);
      const std::string mutant = with_pass(sit.pipeline, m.replaces, m.pass);
      if (mutant == sit.pipeline) break;  // the motif does not run this pass
      ++c.runs;
      if (!gen::decision_situation_violations(sit, sit.pipeline, registry).empty()) continue;
      const std::vector<std::string> v = gen::decision_situation_violations(sit, mutant, registry);
      if (v.empty()) continue;
      c.case_index = static_cast<int>(motif * kSituationSeeds + s);
      c.what = "generate_decision_situation(" + std::to_string(case_seed(static_cast<int>(s))) + ", " +
               std::to_string(motif) + ") " + sit.description + ", " + mutant + ": " + v.front();
      return c;
    }
  }
  return c;
}

class DecisionMutantAc : public ::testing::TestWithParam<DecisionMutant> {};

TEST_P(DecisionMutantAc, IsCaughtOnGeneratedPrograms) {
  const DecisionMutant& m = GetParam();
  ASSERT_TRUE(registry_with_mutants().contains(m.pass)) << m.pass;
  const bool chunk_family = m.replaces == "chunk" || m.replaces == "concretize";
  Caught c = catch_on_situations(m);
  if (c.case_index < 0) {
    const int situation_runs = c.runs;
    c = chunk_family ? catch_chunk_mutant(m) : catch_ac_mutant(m);
    c.runs += situation_runs;
  }
  ASSERT_GE(c.case_index, 0) << m.pass << " survived " << c.runs << " generated runs";
  std::cout << m.pass << ": first failure at case " << c.case_index << " (" << c.runs << " runs): "
            << c.what.substr(0, 400) << std::endl;
}

std::vector<DecisionMutant> registered() {
  std::vector<DecisionMutant> out;
  for (const DecisionMutant& m : mutants::ac_chunk_decision_mutants())
    if (m.excluded.empty()) out.push_back(m);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Registered, DecisionMutantAc, ::testing::ValuesIn(registered()),
                         [](const ::testing::TestParamInfo<DecisionMutant>& info) {
                           std::string name = info.param.pass.substr(std::string("mutant-").size());
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name;
                         });

TEST(DecisionMutantsAc, EveryDeclaredDecisionHasAMutantOrAReason) {
  size_t declared = 0;
  for (const char* pass : {"ac-regions", "sac-tag", "apply-ac", "remat", "chunk", "concretize"}) {
    const check::PassInfo& info = check::PassRegistry::global().get(pass).info;
    declared += info.rules.size() + info.guards.size();
  }
  EXPECT_EQ(mutants::ac_chunk_decision_mutants().size(), declared);
  for (const DecisionMutant& m : mutants::ac_chunk_decision_mutants()) {
    if (m.excluded.empty()) EXPECT_TRUE(registry_with_mutants().contains(m.pass)) << m.pass;
    else EXPECT_FALSE(registry_with_mutants().contains(m.pass)) << m.pass;
  }
  // At least one mutant per pass that has decisions worth breaking.
  for (const char* pass : {"sac-tag", "apply-ac", "remat", "chunk", "concretize"}) {
    int n = 0;
    for (const DecisionMutant& m : mutants::ac_chunk_decision_mutants()) n += m.replaces == pass && m.excluded.empty();
    EXPECT_GT(n, 0) << pass;
  }
}

}  // namespace
}  // namespace passcheck
