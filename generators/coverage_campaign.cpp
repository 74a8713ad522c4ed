// The default coverage campaign and its case sources (see coverage_campaign.h).
#include "generators/coverage_campaign.h"

#include "framework/check/repro.h"
#include "generators/cleanup_situations.h"
#include "generators/program.h"
#include "generators/program_case.h"
#include "generators/random_graph.h"

namespace passcheck::gen {

namespace {

std::vector<std::string> check_graph_case(const ir::Graph& graph, const std::string& pipeline, uint64_t input_seed,
                                          int64_t int_high, const check::PassRegistry& registry) {
  return check::check_case(graph, pipeline, input_seed, int_high, registry).violations;
}

std::vector<std::string> run_random_ir(uint64_t seed, const std::string& pipeline, const check::PassRegistry& registry) {
  std::shared_ptr<ir::Graph> graph = graph_for_seed(seed);
  check::PipelineOptions options;
  options.verify_each = false;  // arbitrary graphs need not verify to begin with
  try {
    check::Pipeline::parse(pipeline, registry).run(*graph, options);
  } catch (const std::exception&) {
    // Not a program: a pass may refuse it. Its decisions up to here still count.
  }
  return {};
}

}  // namespace

const std::map<std::string, CaseRunner>& campaign_sources() {
  static const std::map<std::string, CaseRunner> sources = {
      {"cleanup-situations",
       [](uint64_t seed, const std::string& pipeline, const check::PassRegistry& registry) {
         SituationCase c = generate_cleanup_situation(seed);
         return check_graph_case(*c.graph, pipeline, c.input_seed, c.int_high, registry);
       }},
      {"programs",
       [](uint64_t seed, const std::string& pipeline, const check::PassRegistry& registry) {
         GeneratedCase c = generate_case(seed);
         return check_graph_case(*c.graph, pipeline, c.input_seed, c.int_high, registry);
       }},
      {"chunk-programs",
       [](uint64_t seed, const std::string& pipeline, const check::PassRegistry& registry) {
         std::vector<check::PassInvocation> passes = check::parse_pipeline(pipeline, registry);
         if (passes.size() != 2)
           throw std::invalid_argument("a chunk-programs pipeline names the chunk pass then the concretize pass, got '" +
                                       pipeline + "'");
         return run_chunk_case(generate_chunk_case(seed), registry, passes[0].name, passes[1].name).violations;
       }},
      {"random-ir", run_random_ir},
  };
  return sources;
}

// The seeds `passcheck fuzz --seed S` gives its cases (splitmix64 of S * FNV prime + i),
// so a campaign line and a fuzz run with the same seed draw the same cases.
uint64_t case_seed(uint64_t seed, int64_t index) {
  uint64_t x = seed * 0x100000001b3ULL + static_cast<uint64_t>(index) + 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

const std::vector<CampaignEntry>& default_coverage_campaign() {
  // One line per (source, pipeline). Cleanup passes run one at a time on the cleanup
  // situations, so each pass sees every motif before another pass rewrites it.
  static const std::vector<CampaignEntry> campaign = {
      {"cleanup-situations", "dce", 150, 1},
      {"cleanup-situations", "cse", 150, 2},
      {"cleanup-situations", "remove-detach", 150, 3},
      {"cleanup-situations", "remove-identity-view", 150, 4},
      {"cleanup-situations", "remove-b2b-transpose", 150, 5},
      {"cleanup-situations", "remove-identity-slice", 150, 6},
      {"cleanup-situations", "normalize-views", 150, 7},
      {"cleanup-situations", "canonicalize", 150, 8},
      // Collectives cannot run in one process: dce meets them in random IR.
      {"random-ir", "dce", 60, 9},
  };
  return campaign;
}

CampaignResult run_campaign(const std::vector<CampaignEntry>& entries, const check::PassRegistry& registry) {
  CampaignResult result;
  check::PassRegistry counting = check::counting_registry(registry, &result.coverage);
  for (const CampaignEntry& entry : entries) {
    auto source = campaign_sources().find(entry.source);
    if (source == campaign_sources().end()) throw std::invalid_argument("unknown campaign source '" + entry.source + "'");
    for (int64_t i = 0; i < entry.cases; ++i) {
      uint64_t seed = case_seed(entry.seed, i);
      ++result.cases;
      for (const std::string& v : source->second(seed, entry.pipeline, counting))
        result.violations.push_back(entry.source + " case " + std::to_string(i) + " (seed " + std::to_string(seed) +
                                    "), " + entry.pipeline + ": " + v);
    }
  }
  return result;
}

}  // namespace passcheck::gen
