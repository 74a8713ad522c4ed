// The AC and chunk decision-coverage campaign (see ac_chunk_coverage.h). Counting is a
// wrapper around each counted pass in a copy of the registry, so the pipelines run
// unchanged and a pass that refuses still reports the decisions it made before.
#include "generators/ac_chunk_coverage.h"

#include "framework/check/coverage.h"
#include "framework/check/pipeline.h"
#include "generators/decision_situations.h"
#include "generators/program.h"
#include "generators/program_case.h"

#include <algorithm>
#include <memory>
#include <sstream>

namespace passcheck::gen {

namespace {

// Every policy and mode of the AC family; remat without rng=replay meets random ops
// tagged recomputable (its refusal), with it replays them.
const std::vector<std::string> kAcPipelines = {
    "ac-regions,sac-tag{policy=default},remat{rng=replay}",
    "ac-regions,sac-tag{policy=eager},remat{rng=replay}",
    "ac-regions,sac-tag{policy=full},remat{rng=replay}",
    "ac-regions,sac-tag{policy=op},remat{rng=replay}",
    "ac-regions,sac-tag{policy=default},remat",
    "ac-regions,apply-ac{mode=full},remat{rng=replay}",
    "ac-regions,apply-ac{mode=selective,option=2},remat{rng=replay}",
    "ac-regions,apply-ac{mode=selective,option=op},remat{rng=replay}",
};

uint64_t case_seed(uint64_t seed, int index, uint64_t stream) {
  uint64_t x = seed * 0x100000001b3ULL + static_cast<uint64_t>(index) * 2 + stream + 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Runs `pipeline` on `graph` with passes of a counting registry over `counted`: a
// refusal (counted.refusals() grew) is an expected outcome, any other error a problem.
void run_pipeline(const check::Pipeline& pipeline, ir::Graph& graph, const check::Coverage& counted,
                  AcChunkCoverage& coverage, const std::string& what) {
  ++coverage.cases;
  const int64_t refusals_before = counted.refusals();
  try {
    pipeline.run(graph);
  } catch (const std::exception& e) {
    const std::string message = what + ", " + pipeline.str() + ": " + e.what();
    if (counted.refusals() > refusals_before) {
      ++coverage.refusals;
      coverage.refusal_messages.push_back(message);
    } else {
      coverage.problems.push_back(message);
    }
  }
}

}  // namespace

const std::vector<std::string>& ac_chunk_passes() {
  static const std::vector<std::string> passes = {"ac-regions", "sac-tag", "apply-ac", "remat", "chunk", "concretize"};
  return passes;
}

std::vector<std::string> AcChunkCoverage::unreached() const {
  std::vector<std::string> out;
  for (const auto& [pass, counts] : rules)
    for (const auto& [name, n] : counts)
      if (n == 0) out.push_back(pass + " rule " + name);
  for (const auto& [pass, counts] : guards)
    for (const auto& [name, n] : counts)
      if (n == 0) out.push_back(pass + " guard " + name);
  return out;
}

std::string AcChunkCoverage::table() const {
  std::ostringstream os;
  for (const std::string& pass : ac_chunk_passes()) {
    if (auto it = rules.find(pass); it != rules.end())
      for (const auto& [name, n] : it->second) os << pass << " rule " << name << " " << n << "\n";
    if (auto it = guards.find(pass); it != guards.end())
      for (const auto& [name, n] : it->second) os << pass << " guard " << name << " " << n << "\n";
  }
  return os.str();
}

AcChunkCoverage ac_chunk_coverage(const check::PassRegistry& registry, const AcChunkCoverageOptions& options) {
  AcChunkCoverage coverage;
  for (const std::string& name : ac_chunk_passes()) {
    const check::PassInfo& info = registry.get(name).info;
    for (const check::DecisionInfo& r : info.rules) coverage.rules[name][r.name] = 0;
    for (const check::DecisionInfo& g : info.guards) coverage.guards[name][g.name] = 0;
  }
  check::Coverage counted;
  const check::PassRegistry counting = check::counting_registry(registry, &counted);

  for (int i = 0; i < options.program_cases; ++i) {
    const uint64_t seed = case_seed(options.seed, i, 0);
    GeneratedCase c = generate_case(seed, ac_coverage_options());
    const std::string what = "generate_case(" + std::to_string(seed) + ")";
    for (const std::string& pipeline : kAcPipelines) {
      std::unique_ptr<ir::Graph> g = c.graph->clone();
      run_pipeline(check::Pipeline::parse(pipeline, counting), *g, counted, coverage, what);
    }
    // Tags from elsewhere, unsafe ones included: remat's own guards.
    for (uint64_t t = 0; t < 3; ++t) {
      std::unique_ptr<ir::Graph> tagged = c.graph->clone();
      tag_randomly(*tagged, seed + t);
      run_pipeline(check::Pipeline::parse("ac-regions,remat{rng=replay}", counting), *tagged, counted, coverage,
                   what + " tagged at random (" + std::to_string(seed + t) + ")");
    }
  }

  for (int i = 0; i < options.chunk_cases; ++i) {
    const uint64_t seed = case_seed(options.seed, i, 1);
    ChunkCase c = generate_chunk_case(seed, chunk_coverage_options());
    const std::string what = "generate_chunk_case(" + std::to_string(seed) + ")";
    std::shared_ptr<ir::Graph> graph;
    try {
      graph = trace_chunk_case(c);
    } catch (const std::exception& e) {
      coverage.problems.push_back(what + ": symbolic trace failed: " + e.what());
      continue;
    }
    // Both ways of materializing parameter gradients: added at the end, or early.
    for (const char* early : {"false", "true"}) {
      const std::map<std::string, std::string> chunk_options = {
          {"mode", c.config.mode}, {"modules", c.config.modules}, {"early-accumulation", early}};
      const check::Pipeline pipeline({{"chunk", chunk_options}, {"concretize", {}}}, counting);
      std::unique_ptr<ir::Graph> g = graph->clone();
      run_pipeline(pipeline, *g, counted, coverage, what);
    }
    // The AC passes on a symbolic graph: its size nodes produce symbolic integers.
    std::unique_ptr<ir::Graph> ac = graph->clone();
    run_pipeline(check::Pipeline::parse(kAcPipelines[0], counting), *ac, counted, coverage, what);
  }

  // What traced programs cannot produce: each motif in turn, so every one is drawn.
  for (int i = 0; i < options.situation_cases; ++i) {
    const uint64_t seed = case_seed(options.seed, i, 2);
    const DecisionSituation c = generate_decision_situation(seed, static_cast<size_t>(i) % decision_motifs().size());
    const std::string what = "generate_decision_situation(" + std::to_string(seed) + ") " + c.description;
    std::unique_ptr<ir::Graph> g = c.graph->clone();
    const size_t problems = coverage.problems.size();
    const int64_t refusals = coverage.refusals;
    run_pipeline(check::Pipeline::parse(c.pipeline, counting), *g, counted, coverage, what);
    if (coverage.problems.size() != problems) continue;
    const bool refused = coverage.refusals != refusals;
    if (refused != c.refusal_expected)
      coverage.problems.push_back(what + ", " + c.pipeline + ": " +
                                  (refused ? "refused, expected to pass" : "passed, expected a clear refusal"));
  }
  // The six passes' counts (declared ones were listed at zero above; an undeclared name
  // a pass reported shows up too, and fails the coverage test).
  for (const std::string& name : ac_chunk_passes()) {
    if (auto it = counted.rule_counts().find(name); it != counted.rule_counts().end())
      for (const auto& [rule, n] : it->second) coverage.rules[name][rule] += n;
    if (auto it = counted.guard_counts().find(name); it != counted.guard_counts().end())
      for (const auto& [guard, n] : it->second) coverage.guards[name][guard] += n;
  }
  return coverage;
}

}  // namespace passcheck::gen
