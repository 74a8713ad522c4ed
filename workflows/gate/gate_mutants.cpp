// Generated cases against a mutant (see gate_mutants.h). A case counts only when the real
// pipeline holds on it (or refuses it with a clear error the mutant does not make), so a
// failure is the mutant's doing, as in the mutant suites (suites/mutants).
#include "workflows/gate/gate_mutants.h"

#include "framework/check/pipeline.h"
#include "framework/check/repro.h"
#include "generators/cleanup_situations.h"
#include "generators/coverage_campaign.h"
#include "generators/decision_situations.h"
#include "generators/program_case.h"
#include "oracles/pass_on_models.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <functional>
#include <vector>

namespace passcheck::gate {

namespace {

// `pipeline` with every invocation of `real` renamed `mutant` (options kept); "" when the
// pipeline does not run `real`.
std::string with_mutant(const std::string& pipeline, const std::string& real, const std::string& mutant,
                        const check::PassRegistry& registry) {
  std::vector<check::PassInvocation> passes = check::Pipeline::parse(pipeline, registry).passes();
  bool renamed = false;
  for (check::PassInvocation& p : passes)
    if (p.name == real) {
      p.name = mutant;
      renamed = true;
    }
  return renamed ? check::Pipeline(passes, registry).str() : "";
}

// The violation of `mutant` on a graph where `real` holds, or "".
std::string differential(const ir::Graph& graph, uint64_t input_seed, int64_t int_high, const std::string& real,
                         const std::string& mutant, const check::PassRegistry& registry) {
  const bool real_refuses = check::pipeline_refuses(graph, real, registry);
  if (!real_refuses && !check::check_case(graph, real, input_seed, int_high, registry).violations.empty()) return "";
  if (real_refuses && check::pipeline_refuses(graph, mutant, registry)) return "";
  const auto v = check::check_case(graph, mutant, input_seed, int_high, registry).violations;
  return v.empty() ? "" : mutant + ": " + v.front();
}

// The pipelines the AC coverage programs run `pass` in, one per policy or mode (the same
// as the AC decision mutant suite, suites/mutants/decision_mutants_ac_test.cpp).
std::vector<std::string> ac_pipelines(const std::string& pass) {
  const char* const policies[] = {"default", "eager", "full", "op"};
  std::vector<std::string> out;
  if (pass == "sac-tag") {
    for (const char* p : policies) out.push_back(std::string("ac-regions,sac-tag{policy=") + p + "},remat{rng=replay}");
    out.push_back("ac-regions,sac-tag{policy=default},remat");
    out.push_back("ac-regions,sac-tag{policy=full},remat");
  } else if (pass == "apply-ac") {
    for (const char* m : {"{mode=full}", "{mode=selective,option=2}", "{mode=selective,option=op}"})
      out.push_back(std::string("ac-regions,apply-ac") + m + ",remat{rng=replay}");
    out.push_back("ac-regions,apply-ac{mode=full},remat");
  } else if (pass == "remat") {
    for (const char* p : policies) out.push_back(std::string("ac-regions,sac-tag{policy=") + p + "},remat{rng=replay}");
    out.push_back("ac-regions,sac-tag{policy=default},remat");
  } else {
    for (const char* p : policies) out.push_back(pass + ",sac-tag{policy=" + p + "},remat{rng=replay}");
  }
  return out;
}

}  // namespace

std::string catch_mutant_on_generated_cases(const std::string& mutant, const std::string& real,
                                            const std::string& family, const check::PassRegistry& registry,
                                            uint64_t seed, double seconds) {
  // One engine tries case i of its generator and says what caught the mutant ("" : nothing).
  // std::nullopt: the engine has no case i (it is exhausted).
  using Engine = std::function<std::optional<std::string>(int64_t i)>;
  std::vector<Engine> engines;
  // Decision situations: graphs built to reach each declared decision, every motif in turn.
  const size_t motifs = gen::decision_motifs().size();
  engines.push_back([&, motifs](int64_t i) -> std::optional<std::string> {
    if (static_cast<size_t>(i) >= motifs * 6) return std::nullopt;
    const uint64_t s = gen::case_seed(seed, i / static_cast<int64_t>(motifs));
    const gen::DecisionSituation sit = gen::generate_decision_situation(s, static_cast<size_t>(i) % motifs);
    const std::string pipeline = with_mutant(sit.pipeline, real, mutant, registry);
    if (pipeline.empty() || !gen::decision_situation_violations(sit, sit.pipeline, registry).empty()) return "";
    const auto v = gen::decision_situation_violations(sit, pipeline, registry);
    return v.empty() ? "" : "generate_decision_situation(" + std::to_string(s) + ") " + sit.description + ", " + v.front();
  });
  if (family == "cleanup")
    engines.push_back([&](int64_t i) -> std::optional<std::string> {
      const uint64_t s = gen::case_seed(seed, i);
      const gen::SituationCase c = gen::generate_cleanup_situation(s);
      for (const std::string& pipeline : {real, std::string("canonicalize")}) {
        const std::string m = with_mutant(pipeline, real, mutant, registry);
        if (m.empty()) continue;
        const std::string v = differential(*c.graph, c.input_seed, c.int_high, pipeline, m, registry);
        if (!v.empty()) return "generate_cleanup_situation(" + std::to_string(s) + "): " + v;
      }
      return "";
    });
  if (family == "chunk")
    engines.push_back([&](int64_t i) -> std::optional<std::string> {
      const uint64_t s = gen::case_seed(seed, i);
      const gen::ChunkCase cc = gen::generate_chunk_case(s, gen::chunk_coverage_options());
      const gen::ChunkCaseResult base = gen::run_chunk_case(cc, registry);
      if (!base.violations.empty()) return "";
      const gen::ChunkCaseResult r = gen::run_chunk_case(cc, registry, real == "chunk" ? mutant : "chunk",
                                                         real == "concretize" ? mutant : "concretize");
      const auto pass_of = [](const std::string& refusal) { return refusal.substr(0, refusal.find(':')); };
      const bool new_refusal = !r.refusal.empty() && (base.refusal.empty() || pass_of(base.refusal) != pass_of(r.refusal));
      if (!r.violations.empty()) return "generate_chunk_case(" + std::to_string(s) + "): " + r.violations.front();
      if (new_refusal) return "generate_chunk_case(" + std::to_string(s) + "): refused where the real passes do not: " + r.refusal;
      return "";
    });
  if (family == "ac")
    engines.push_back([&](int64_t i) -> std::optional<std::string> {
      const uint64_t s = gen::case_seed(seed, i);
      const gen::GeneratedCase g = gen::generate_case(s, gen::ac_coverage_options());
      for (const std::string& pipeline : ac_pipelines(real)) {
        const std::string m = with_mutant(pipeline, real, mutant, registry);
        if (m.empty()) continue;
        const std::string v = differential(*g.graph, g.input_seed, g.int_high, pipeline, m, registry);
        if (!v.empty()) return "generate_case(" + std::to_string(s) + "): " + v;
      }
      return "";
    });

  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::vector<bool> exhausted(engines.size(), false);
  for (int64_t i = 0; elapsed() < seconds; ++i) {
    for (size_t e = 0; e < engines.size() && elapsed() < seconds; ++e) {
      if (exhausted[e]) continue;
      std::optional<std::string> caught;
      try {
        caught = engines[e](i);
      } catch (const std::exception&) {
        caught = "";  // a case the generator cannot build: the next one may
      }
      if (!caught) exhausted[e] = true;
      else if (!caught->empty()) return *caught;
    }
    if (std::all_of(exhausted.begin(), exhausted.end(), [](bool x) { return x; })) break;
  }
  return "";
}

}  // namespace passcheck::gate
