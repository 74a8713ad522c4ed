// Repro files (see repro.h): replay of a parsed repro (the text form is repro_format.cpp).
#include "framework/check/repro.h"

#include "framework/check/remat_properties.h"
#include "framework/exec/inputs.h"
#include "framework/ir/text.h"

namespace passcheck::check {

namespace {

constexpr const char* kRematPrefix = "remat property: ";

}  // namespace

bool pipeline_has_remat(const std::string& pipeline, const PassRegistry& registry) {
  for (const PassInvocation& p : parse_pipeline(pipeline, registry))
    if (p.name == "remat" || p.name.rfind("mutant-remat", 0) == 0) return true;
  return false;
}

std::string property_of(const std::string& violation) {
  return violation.rfind(kRematPrefix, 0) == 0 ? "remat-properties" : "pass-properties";
}

PassPropertyReport check_case(const ir::Graph& graph, const std::string& pipeline, uint64_t seed, int64_t int_high,
                              const PassRegistry& registry) {
  exec::InputOptions options;
  options.seed = seed;
  options.int_high = int_high;
  const bool remat = pipeline_has_remat(pipeline, registry);
  std::unique_ptr<ir::Graph> after;  // the pipeline's result, for the remat properties
  PassPropertyReport report =
      check_pass_properties(graph, exec::make_inputs(graph, options), pipeline, registry, remat ? &after : nullptr);
  if (remat && after) {
    try {
      for (const std::string& v : check_remat_properties(graph, *after)) report.violations.push_back(kRematPrefix + v);
    } catch (const PassFailure&) {
      // Already reported by check_pass_properties.
    }
  }
  return report;
}

PassPropertyReport replay(const Repro& repro, const PassRegistry& registry) {
  if (repro.is_chunk_case())
    throw std::invalid_argument("a chunk case replays through the program generator: passcheck repro FILE");
  if (repro.is_sim_mesh_case())
    throw std::invalid_argument("a sim-mesh case replays on every rank of its mesh: passcheck repro FILE");
  std::unique_ptr<ir::Graph> graph = ir::parse_graph(repro.graph_text(), "<repro graph>");
  return check_case(*graph, repro.pipeline, repro.seed, repro.int_high, registry);
}

}  // namespace passcheck::check
