// The default coverage campaign and its case sources (see coverage_campaign.h).
#include "generators/coverage_campaign.h"

#include "framework/check/repro.h"
#include "framework/ir/subgraph.h"
#include "generators/chained_allgathers.h"
#include "generators/cleanup_situations.h"
#include "generators/cudagraph_situations.h"
#include "generators/decision_situations.h"
#include "generators/distributed_situations.h"
#include "generators/program.h"
#include "generators/program_case.h"
#include "generators/random_graph.h"

namespace passcheck::gen {

namespace {

// Sources whose cases carry their own pipelines take none from the campaign line.
void require_no_pipeline(const std::string& source, const std::string& pipeline) {
  if (!pipeline.empty())
    throw std::invalid_argument(source + " run their own pipelines; give an empty one, got '" + pipeline + "'");
}

std::vector<std::string> check_graph_case(const ir::Graph& graph, const std::string& pipeline, uint64_t input_seed,
                                          int64_t int_high, const check::PassRegistry& registry) {
  return check::check_case(graph, pipeline, input_seed, int_high, registry).violations;
}

// True when a pass of `pipeline` refuses `graph` with a clear error (check::RefusedInput).
bool refuses(const ir::Graph& graph, const std::string& pipeline, const check::PassRegistry& registry) {
  std::unique_ptr<ir::Graph> g = graph.clone();
  try {
    for (const check::PassInvocation& p : check::parse_pipeline(pipeline, registry)) {
      const check::RegisteredPass& pass = registry.get(p.name);
      pass.run(*g, check::PassOptions(pass.info, p.options));
    }
  } catch (const check::RefusedInput&) {
    return true;
  } catch (const std::exception&) {
    return false;  // the properties report it
  }
  return false;
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

// Runs the passes only (decisions count, nothing is executed): for graphs whose tags come
// from elsewhere, which the generic properties do not promise anything about.
std::vector<std::string> run_passes_only(ir::Graph& graph, const std::string& pipeline,
                                         const check::PassRegistry& registry) {
  try {
    check::Pipeline::parse(pipeline, registry).run(graph);
  } catch (const std::exception&) {
    // A refusal, or unsafe tags remat refuses: its decisions up to here still count.
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
      {"chained-allgathers",
       [](uint64_t seed, const std::string& pipeline, const check::PassRegistry& registry) {
         return chained_allgathers_violations(generate_chained_allgathers(seed), pipeline, registry);
       }},
      {"ac-programs",
       [](uint64_t seed, const std::string& pipeline, const check::PassRegistry& registry) {
         GeneratedCase c = generate_case(seed, ac_coverage_options());
         // remat without rng=replay refuses random ops tagged recomputable: an outcome.
         if (refuses(*c.graph, pipeline, registry)) return std::vector<std::string>{};
         return check_graph_case(*c.graph, pipeline, c.input_seed, c.int_high, registry);
       }},
      {"repeated-layer-programs",
       [](uint64_t seed, const std::string& pipeline, const check::PassRegistry& registry) {
         GeneratedCase c = generate_repeated_layer_case(seed);
         return check_graph_case(*c.graph, pipeline, c.input_seed, c.int_high, registry);
       }},
      {"outlined-layer-programs",
       [](uint64_t seed, const std::string& pipeline, const check::PassRegistry& registry) {
         GeneratedCase c = generate_repeated_layer_case(seed);
         ir::outline_repeated_layers(*c.graph);  // nested input for the passes that take one
         return check_graph_case(*c.graph, pipeline, c.input_seed, c.int_high, registry);
       }},
      {"ac-programs-tagged-at-random",
       [](uint64_t seed, const std::string& pipeline, const check::PassRegistry& registry) {
         GeneratedCase c = generate_case(seed, ac_coverage_options());
         tag_randomly(*c.graph, seed);
         return run_passes_only(*c.graph, pipeline, registry);
       }},
      {"chunk-coverage-programs",
       [](uint64_t seed, const std::string& pipeline, const check::PassRegistry& registry) {
         std::vector<check::PassInvocation> passes = check::parse_pipeline(pipeline, registry);
         if (passes.size() != 2)
           throw std::invalid_argument("a chunk-coverage-programs pipeline names the chunk pass then the concretize "
                                       "pass, got '" + pipeline + "'");
         ChunkCase c = generate_chunk_case(seed, chunk_coverage_options());
         c.config.early_accumulation = (seed >> 11) & 1;  // both ways of adding the partials
         return run_chunk_case(c, registry, passes[0].name, passes[1].name).violations;
       }},
      {"distributed-situations",
       [](uint64_t, const std::string& pipeline, const check::PassRegistry& registry) {
         require_no_pipeline("distributed situations", pipeline);
         return distributed_situation_violations(registry);
       }},
      {"cudagraph-situations",
       [](uint64_t, const std::string& pipeline, const check::PassRegistry& registry) {
         require_no_pipeline("cudagraph situations", pipeline);
         return cudagraph_situation_violations(registry);
       }},
      {"decision-situations",
       [](uint64_t seed, const std::string& pipeline, const check::PassRegistry& registry) {
         require_no_pipeline("decision situations", pipeline);
         DecisionSituation c = generate_decision_situation(seed);
         return decision_situation_violations(c, c.pipeline, registry);
       }},
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

const std::map<std::string, std::string>& known_decision_gaps() {
  // The partitioners' decisions that need what generated single-process programs lack.
  const std::string replayed_tags =
      "the replayed tags (ap_must_save, ap_save_outputs) are written only by partition-min-cut{tag-saves=true} on a partitioned module and reach a joint graph through join_module, which is no pass: the round trip (passes/partition/round_trip.h) reaches it in suites/unit/partition_round_trip_test.cpp, and suites/passes_text/partition-save-all.graph and suites/unit/partition_replay_test.cpp give it tagged graphs";
  static const std::map<std::string, std::string> gaps = {
      {"partition-min-cut guard collective",
       "collectives run only on a mesh: traced single-process programs hold none; the FSDP llama3 rank graph of "
       "suites/unit/partition_round_trip_test.cpp reaches it"},
      {"partition-min-cut guard far-from-backward",
       "needs a forward node more than 1000 nodes from the backward; generated programs are far smaller"},
      {"partition-min-cut guard side-effects",
       "traced programs have no side-effecting forward node other than in-place writes, which the mutating guard "
       "refuses first"},
      {"partition-save-all rule save-tagged", replayed_tags},
      {"partition-save-all rule save-recorded-outputs", replayed_tags},
      {"partition-save-all guard must-recompute-blocks-save", replayed_tags},
      {"partition-save-all guard prefer-recompute-blocks-save", replayed_tags},
      {"partition-save-all rule force-save-collective",
       "collectives run only on a mesh: traced single-process programs hold none"},
      {"concretize guard leftover-symbol",
       "an assertion over concretize's own work: the loops before it substitute every sym(...) it inspects (input "
       "metadata, arguments down nested lists, output metadata) with the same traversal and fail with a clear "
       "error on a symbol without a hint, so no input graph leaves one; only a broken substitution "
       "(mutant-concretize-stale-input-symbols in suites/mutants/chunk_mutants.cpp) reaches it"},
      {"concretize rule substitute-in-subgraphs",
       "generated chunk programs are flat graphs, and the chunk pass refuses nested ones; the nested case of "
       "suites/passes_text/concretize.graph and suites/nested/nested_subgraph_test.cpp reach it"},
      {"fuse-chained-allgathers guard identity-unknown",
       "every generated chain is concrete and small, so the index map models each view and Z3 answers its claim; "
       "unknown needs a squeeze of a symbolic dimension or a prover timeout, which no generated graph has"},
  };
  return gaps;
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
      // Chained all_gathers on sim meshes; each case carries its own options.
      {"chained-allgathers", "fuse-chained-allgathers", 120, 20},
      // The AC passes under every policy and mode, then remat's own guards on tags from
      // elsewhere; the chunk passes on chunkable programs; and the IR-level situations
      // for the decisions traced programs cannot reach (each with its own pipeline).
      {"ac-programs", "ac-regions,sac-tag{policy=default},remat{rng=replay}", 32, 10},
      {"ac-programs", "ac-regions,sac-tag{policy=eager},remat{rng=replay}", 32, 11},
      {"ac-programs", "ac-regions,sac-tag{policy=full},remat", 32, 12},
      {"ac-programs", "ac-regions,sac-tag{policy=op},remat{rng=replay}", 32, 13},
      {"ac-programs", "ac-regions,apply-ac{mode=full},remat{rng=replay}", 32, 14},
      {"ac-programs", "ac-regions,apply-ac{mode=selective,option=2},remat{rng=replay}", 32, 15},
      {"ac-programs", "ac-regions,apply-ac{mode=selective,option=op},remat", 32, 16},
      {"ac-programs-tagged-at-random", "ac-regions,remat{rng=replay}", 48, 17},
      {"chunk-coverage-programs", "chunk,concretize", 48, 31},
      {"decision-situations", "", 96, 19},
      // The FSDP, placement and scheduling passes on hand-made per-rank graphs (every
      // situation in one case: they are few and fixed).
      {"distributed-situations", "", 1, 20},
      // The partitioners on traced programs: min-cut under AC tags (must-recompute,
      // must-save, random ops) with and without a memory budget, then the tagging.
      {"ac-programs", "classify-nodes", 16, 20},
      {"ac-programs", "ac-regions,sac-tag{policy=eager},partition-min-cut{tag-saves=true}", 32, 21},
      {"ac-programs", "ac-regions,sac-tag{policy=op},partition-min-cut{memory-budget=0.2}", 32, 22},
      {"ac-programs", "partition-min-cut,tag-ap-must-save", 32, 23},
      {"ac-programs", "ac-regions,sac-tag{policy=eager},partition-save-all", 32, 24},
      {"ac-programs", "ac-regions,sac-tag{policy=op},partition-save-all{semantics=pr467}", 32, 25},
      // The CUDA-graph wrapper on traced programs (joint, and forward/backward after the
      // partitioner), then on the hand-made graphs around its capturability guards.
      {"programs", "cudagraph", 16, 26},
      {"ac-programs", "partition-min-cut,cudagraph", 8, 27},
      {"cudagraph-situations", "", 1, 28},
      // Layer deduplication on programs whose layers repeat: outlined into shared bodies,
      // and (already outlined) inlined back; each pass held to its properties, bitwise
      // included. One pass a line: idempotence reruns a pass on the pipeline's result.
      {"repeated-layer-programs", "outline-repeated-layers", 24, 29},
      {"outlined-layer-programs", "inline-subgraphs", 24, 30},
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
