// The cases of a fuzz campaign (see cases.h): case pipelines, case graphs and the case
// process body.
#include "workflows/campaign/cases.h"

#include "framework/check/coverage.h"
#include "framework/check/pipeline.h"
#include "framework/check/repro.h"
#include "framework/io/files.h"
#include "framework/ir/graph.h"
#include "framework/ir/text.h"
#include "oracles/models/subject.h"
#include "oracles/training_driver.h"
#include "generators/eager_islands.h"
#include "generators/chained_allgathers.h"
#include "generators/cleanup_situations.h"
#include "generators/program.h"
#include "generators/program_case.h"
#include "generators/program_features.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace passcheck::campaign {

namespace {

struct CaseGraph {
  std::shared_ptr<ir::Graph> graph;
  uint64_t input_seed = 0;
  int64_t int_high = 2;
  std::string description;
};

// Whether a pass of `pipeline` decides on host reads or data-dependent shapes (declares
// the guards the cudagraph pass, and any stand-in copying its declaration, refuses them
// with): such a pipeline gets programs that have them.
bool decides_on_eager_islands(const std::string& pipeline, const check::PassRegistry& registry) {
  const check::Pipeline parsed = check::Pipeline::parse(pipeline, registry);  // passes() refers into it
  for (const check::PassInvocation& p : parsed.passes())
    for (const check::DecisionInfo& guard : registry.get(p.name).info.guards)
      if (guard.name == "data-dependent-shape" || guard.name == "data-dependent-scalar") return true;
  return false;
}

// Case `index` of the campaign: from the program generator (every other one with eager
// islands when `islands`), the cleanup situations generator, or the debug models in turn.
CaseGraph make_case(uint64_t case_seed, int64_t index, CaseSource source, bool islands) {
  CaseGraph c;
  // Both generators return a graph with its input seed, integer range and description.
  auto adopt = [&](const auto& g, const std::string& generator) {
    c.graph = g.graph;
    c.input_seed = g.input_seed;
    c.int_high = g.int_high;
    c.description = generator + "(" + std::to_string(case_seed) + "): " + g.description;
    return c;
  };
  if (source == CaseSource::Situations) return adopt(gen::generate_cleanup_situation(case_seed), "generate_cleanup_situation");
  if (source == CaseSource::Programs && islands && index % 2 == 1)
    return adopt(gen::generate_eager_island_case(case_seed), "generate_eager_island_case");
  if (source == CaseSource::Programs) return adopt(gen::generate_case(case_seed), "generate_case");
  std::vector<std::string> names = models::available_subjects();
  const std::string& name = names[static_cast<size_t>(index) % names.size()];
  models::SubjectOptions options = models::suite_options(name);
  options.seed = case_seed;
  auto subject = models::make_subject(name, options);
  trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), false);
  c.graph = std::shared_ptr<ir::Graph>(program.graph().clone().release());
  c.input_seed = case_seed;
  c.description = "debug model " + name + " (seed " + std::to_string(case_seed) + ")";
  return c;
}

// The case's decision counts, written on every way out of run_case that returns (the
// baseline's decisions are not the campaign's, so they run on the plain registry): to the
// case's coverage file, or added to the caller's Coverage when the case has none.
struct CoverageOnReturn {
  const std::string path;
  check::Coverage* into;
  const check::CountingRegistry& counting;
  check::Coverage coverage;
  CoverageOnReturn(std::string p, check::Coverage* to, const check::CountingRegistry& c)
      : path(std::move(p)), into(to), counting(c) {
    counting.attach(&coverage);
  }
  ~CoverageOnReturn() {
    counting.attach(nullptr);
    if (path.empty()) {
      if (into) into->merge(coverage);
      return;
    }
    try {
      io::write_file(path, coverage.serialize(), "case coverage file", /*sync=*/false);
    } catch (const std::exception&) {
      // The table then misses one case; the verdict does not depend on it.
    }
  }
};

int run_chunk_case(const CaseSpec& spec, const CampaignOptions& options, const check::PassRegistry& registry,
                   const check::PassRegistry& counting) {
  gen::ChunkCase cc = gen::generate_chunk_case(spec.seed);
  cc.config.mode = options.chunk;
  check::Repro repro;
  repro.pipeline = spec.pipeline;
  repro.registries = options.registries;
  repro.seed = cc.seed;
  repro.chunk = cc.config.str();
  repro.program = cc.program;
  repro.case_description = "generate_chunk_case(" + std::to_string(spec.seed) + "): " + cc.description;
  {
    // The program traced at the hint, for the reader (the replay runs the program).
    models::SubjectOptions so;
    so.seed = cc.seed;
    auto subject = gen::make_program_subject(gen::decode_spec(cc.program), so);
    repro.original = oracles::trace_subject(*subject, subject->batch(0), false).graph().print();
  }
  // In the file system before the passes run (no fsync: the case process crashing
  // cannot lose it, and a campaign does not outlive a power cut).
  check::write_claimed_repro(spec.repro_path, repro);
  auto [chunk_pass, concretize_pass] = chunk_passes_of(spec.pipeline, registry);
  gen::ChunkCaseResult result = gen::run_chunk_case(cc, counting, chunk_pass, concretize_pass);
  if (result.violations.empty()) return kCasePassed;
  if (!spec.baseline.empty()) {
    auto [base_chunk, base_concretize] = chunk_passes_of(spec.baseline, registry);
    if (!gen::run_chunk_case(cc, registry, base_chunk, base_concretize).violations.empty()) return kCaseBaselineFailsToo;
  }
  repro.status = "failed";
  repro.property = "chunk-properties";
  repro.messages = result.violations;
  check::write_repro(spec.repro_path, repro);
  return kCaseViolated;
}

// A per-rank graph of chained all_gathers through the pass, then run on every rank of
// its sim mesh (threads of this process) against the original.
int run_sim_mesh_case(const CaseSpec& spec, const CampaignOptions& options, const check::PassRegistry& counting) {
  gen::ChainedGatherCase c = gen::generate_chained_allgathers(spec.seed);
  check::Repro repro;
  repro.pipeline = spec.pipeline + c.options;
  repro.registries = options.registries;
  repro.seed = spec.seed;
  repro.sim_mesh = c.mesh;
  repro.case_description = "generate_chained_allgathers(" + std::to_string(spec.seed) + "): " + c.description;
  repro.original = c.graph_text;
  check::write_claimed_repro(spec.repro_path, repro);  // in place before the pass runs
  std::vector<std::string> violations = gen::chained_allgathers_violations(c, spec.pipeline, counting);
  if (violations.empty()) return kCasePassed;
  repro.status = "failed";
  repro.property = "sim-mesh-properties";
  repro.messages = violations;
  check::write_repro(spec.repro_path, repro);
  return kCaseViolated;
}

}  // namespace

std::string kind_name(CaseKind kind) {
  switch (kind) {
    case CaseKind::Graph:
      return "programs";
    case CaseKind::SimMesh:
      return "sim-mesh";
    case CaseKind::Chunk:
      return "chunk";
  }
  return "?";
}

std::vector<CaseKind> parse_mix(const std::string& text) {
  std::vector<CaseKind> kinds;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item == "programs") kinds.push_back(CaseKind::Graph);
    else if (item == "sim-mesh") kinds.push_back(CaseKind::SimMesh);
    else if (item == "chunk") kinds.push_back(CaseKind::Chunk);
    else
      throw std::invalid_argument("--mix: unknown case kind '" + item + "' (known: programs, sim-mesh, chunk)");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return kinds;
}

CaseKind case_kind(const CampaignOptions& options, int64_t index) {
  if (options.mix.empty()) return options.chunk.empty() ? CaseKind::Graph : CaseKind::Chunk;
  return options.mix[static_cast<size_t>(index) % options.mix.size()];
}

std::string case_pipeline(const CampaignOptions& options, CaseKind kind, uint64_t case_seed) {
  if (options.mix.empty()) return case_pipeline(options, case_seed);
  CampaignOptions one = options;
  one.mix.clear();
  switch (kind) {
    case CaseKind::Graph:
      one.chunk.clear();
      break;
    case CaseKind::SimMesh:
      return options.sim_mesh_pass;
    case CaseKind::Chunk:
      one.chunk = "batch";
      one.pipeline.clear();
      one.pass = options.chunk_pass;
      break;
  }
  return case_pipeline(one, case_seed);
}

std::string case_pipeline(const CampaignOptions& options, uint64_t case_seed) {
  if (!options.pipeline.empty()) return options.pipeline;
  const std::string& p = options.pass;
  if (!options.chunk.empty()) {
    // Chunk mode: "<chunk pass>,<concretize pass>", --pass standing in for one of them.
    if (p.empty()) return "chunk,concretize";
    return p.find("concretize") != std::string::npos ? "chunk," + p : p + ",concretize";
  }
  static const char* policies[] = {"default", "eager", "full"};
  std::string policy = policies[case_seed % 3];
  if (p == "remat" || p.rfind("mutant-remat", 0) == 0)
    return "ac-regions,sac-tag{policy=" + policy + "}," + p + "{rng=replay}";
  if (p == "sac-tag") return "ac-regions,sac-tag{policy=" + policy + "}";
  if (p == "apply-ac") return "ac-regions,apply-ac";
  return p;
}

std::pair<std::string, std::string> chunk_passes_of(const std::string& pipeline, const check::PassRegistry& registry) {
  std::vector<check::PassInvocation> passes = check::parse_pipeline(pipeline, registry);
  if (passes.size() != 2 || !passes[0].options.empty() || !passes[1].options.empty())
    throw std::invalid_argument("a chunk pipeline names two passes without options, the chunk pass then the "
                                "concretize pass (e.g. chunk,concretize); got '" + pipeline + "'");
  return {passes[0].name, passes[1].name};
}

int run_case(const CaseSpec& spec, const CampaignOptions& options, const check::PassRegistry& registry) {
  check::CountingRegistry counting(registry);
  check::Coverage coverage;
  return run_case(spec, options, registry, counting, &coverage);
}

int run_case(const CaseSpec& spec, const CampaignOptions& options, const check::PassRegistry& registry,
             const check::CountingRegistry& counter, check::Coverage* into) {
  CoverageOnReturn coverage(spec.coverage_path, into, counter);
  const check::PassRegistry& counting = counter.registry();
  if (spec.kind == CaseKind::Chunk) {
    CampaignOptions chunk = options;
    if (chunk.chunk.empty()) chunk.chunk = "batch";  // a mixed campaign's chunk case
    return run_chunk_case(spec, chunk, registry, counting);
  }
  if (spec.kind == CaseKind::SimMesh) return run_sim_mesh_case(spec, options, counting);
  // The cudagraph pass's eager islands (host reads, data-dependent shapes) never come out
  // of a traced program: every other program case gets one.
  CaseGraph c = make_case(spec.seed, spec.index, options.source, decides_on_eager_islands(spec.pipeline, registry));
  if (!options.features.empty() && options.source != CaseSource::Situations) {
    // writes-through-views returns a forward value, which remat cannot stop holding into
    // the backward: its memory property would blame remat for the feature. Not added
    // to cases of a pipeline with remat.
    std::vector<std::string> features = options.features;
    if (check::pipeline_has_remat(spec.pipeline, registry))
      features.erase(std::remove(features.begin(), features.end(), "writes-through-views"), features.end());
    std::vector<std::string> added = gen::apply_features(*c.graph, spec.seed, features);
    std::set<std::string> counted;  // a case counts once per feature
    for (const std::string& line : added) {
      if (counted.insert(line.substr(0, line.find_first_of(" :"))).second)
        coverage.coverage.add_feature(line.substr(0, line.find_first_of(" :")));
      c.description += "; " + line;
    }
  }
  check::Repro repro;
  repro.pipeline = spec.pipeline;
  repro.registries = options.registries;
  repro.seed = c.input_seed;
  repro.int_high = c.int_high;
  repro.case_description = c.description;
  repro.original = c.graph->print();
  check::write_claimed_repro(spec.repro_path, repro);  // in place before the pass runs (see above)
  check::PassPropertyReport report = check::check_case(*c.graph, spec.pipeline, c.input_seed, c.int_high, counting);
  if (!report.tolerated.empty()) coverage.coverage.add_tolerated(report.tolerated_max_ulp);
  if (report.violations.empty()) return kCasePassed;
  // Differential mode: a failure counts only when the baseline pass survives the case.
  if (!spec.baseline.empty() &&
      !check::check_case(*c.graph, spec.baseline, c.input_seed, c.int_high, registry).violations.empty())
    return kCaseBaselineFailsToo;
  repro.status = "failed";
  repro.property = check::property_of(report.violations.front());
  repro.messages = report.violations;
  // Several passes: the repro names the first after which the case fails and, where it
  // fails alone on what the passes before it made, replays that pass alone on that graph.
  if (std::optional<Bisection> b = bisect_failure(*c.graph, spec.pipeline, c.input_seed, c.int_high, registry)) {
    const std::string where = "first fails after pass " + std::to_string(b->pass_index + 1) + " of " +
                              std::to_string(b->passes) + ", " + b->pass;
    if (!b->graph.empty()) {
      repro.case_description += "; bisected: " + where + ", replayed alone on the graph the passes before it made";
      repro.pipeline = b->pass;
      repro.original = b->graph;
      repro.property = check::property_of(b->violations.front());
      repro.messages = b->violations;
    } else {
      repro.case_description += "; bisected: " + where + " (it fails only after the passes before it)";
    }
  }
  check::write_repro(spec.repro_path, repro);
  return kCaseViolated;
}

std::optional<Bisection> bisect_failure(const ir::Graph& graph, const std::string& pipeline, uint64_t seed,
                                       int64_t int_high, const check::PassRegistry& registry) {
  const check::Pipeline whole = check::Pipeline::parse(pipeline, registry);
  const std::vector<check::PassInvocation>& passes = whole.passes();
  if (passes.size() < 2) return std::nullopt;
  auto prefix = [&](size_t n) {
    std::string text;
    for (size_t i = 0; i < n; ++i) text += (i ? "," : "") + passes[i].str();
    return text;
  };
  // The shortest failing prefix; the whole pipeline fails (the caller found it so).
  size_t first = passes.size();
  for (size_t k = 1; k < passes.size(); ++k) {
    if (!check::check_case(graph, prefix(k), seed, int_high, registry).violations.empty()) {
      first = k;
      break;
    }
  }
  Bisection b;
  b.pass_index = first - 1;
  b.pass = passes[first - 1].str();
  b.passes = passes.size();
  // The graph the passes before it made: a graph, unless one of them left a module.
  std::unique_ptr<ir::Graph> input = graph.clone();
  if (first > 1) {
    const check::Pipeline before = check::Pipeline::parse(prefix(first - 1), registry);
    if (before.has_module_pass()) return b;
    try {
      before.run(*input);
    } catch (const check::PassFailure&) {
      return b;  // passed inside check_case: not expected, and then nothing to replay alone
    }
  }
  check::PassPropertyReport alone = check::check_case(*input, b.pass, seed, int_high, registry);
  if (alone.violations.empty()) return b;  // fails only after the passes before it, run together
  b.graph = input->print();
  b.violations = alone.violations;
  return b;
}

void check_sim_mesh_graph(const check::Repro& repro) {
  // Every rank runs the case's graph on its one shard: a graph of another kind of case
  // under a '#! sim-mesh:' line is bad input, not a failure on every rank.
  std::unique_ptr<ir::Graph> graph = ir::parse_graph(repro.graph_text(), "<repro graph>");
  if (graph->inputs().size() != 1 || !graph->inputs()[0]->meta())
    throw std::invalid_argument("a sim-mesh repro's graph takes one tensor input (each rank's shard); this one takes " +
                                std::to_string(graph->inputs().size()) +
                                " inputs: the '#! sim-mesh:' line does not belong to this case");
}

std::vector<std::string> replay_sim_mesh_case(const check::Repro& repro, const check::PassRegistry& registry) {
  std::unique_ptr<ir::Graph> graph = ir::parse_graph(repro.graph_text(), "<repro graph>");
  gen::ChainedGatherCase c;
  c.mesh = repro.sim_mesh;
  c.graph_text = repro.graph_text();
  check_sim_mesh_graph(repro);
  for (const ir::Value* input : graph->inputs()) {
    if (!input->meta()) throw std::invalid_argument("a sim-mesh repro's graph input has no tensor type");
    c.input_sizes = input->meta()->sizes;
    break;
  }
  c.description = repro.case_description;
  return gen::chained_allgathers_violations(c, repro.pipeline, registry);  // options are in the pipeline
}

}  // namespace passcheck::campaign
