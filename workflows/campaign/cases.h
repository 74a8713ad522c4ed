// The cases of a fuzz campaign: which pipeline a case runs, where its graph comes from
// (the program generator, the cleanup situations generator or the debug models), and
// what the case process does (write the pending repro, run the property checks, finish
// the repro on a violation). Used by run_campaign() and by `passcheck repro` for chunk
// cases.
#pragma once

#include "workflows/campaign/campaign.h"
#include "framework/check/pass.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace passcheck::ir {
class Graph;
}
namespace passcheck::check {
struct Repro;
class Coverage;
class CountingRegistry;
}

namespace passcheck::campaign {

/// The chunk and concretize passes a chunk-mode pipeline names; std::invalid_argument
/// when it does not name exactly those two, without options.
std::pair<std::string, std::string> chunk_passes_of(const std::string& pipeline, const check::PassRegistry& registry);

/// What a case process reports through its exit status.
enum CaseExit : int { kCasePassed = 0, kCaseViolated = 1, kCaseBaselineFailsToo = 4 };

/// One case to run in a case process.
struct CaseSpec {
  int64_t index = 0;
  uint64_t seed = 0;
  CaseKind kind = CaseKind::Graph;
  std::string pipeline;
  std::string baseline;       ///< "" unless differential mode
  std::string repro_path;     ///< claimed by the parent; the pending repro goes here
  std::string coverage_path;  ///< the case's decision counts go here ("": sent back by a persistent worker)
};

/// The body of a case process: writes the pending repro before any pass runs, runs the
/// checks, completes the repro on a violation. Returns a CaseExit.
int run_case(const CaseSpec& spec, const CampaignOptions& options, const check::PassRegistry& registry);
/// The same with a counting registry built once for many cases (`counting`, made from
/// `registry`). The case's decision counts go to spec.coverage_path, or, when it is
/// empty, are added to `*coverage` (a persistent worker sends them back itself).
int run_case(const CaseSpec& spec, const CampaignOptions& options, const check::PassRegistry& registry,
             const check::CountingRegistry& counting, check::Coverage* coverage);

/// Where a failing case of a pipeline of several passes first fails.
struct Bisection {
  size_t pass_index = 0;  ///< 0-based: the first pass after which the case fails
  size_t passes = 0;      ///< passes in the pipeline
  std::string pass;       ///< that pass's invocation text
  /// The graph the passes before it made and the violations of that pass run alone on
  /// it; both empty when it does not fail alone there (or an earlier pass left a module).
  std::string graph;
  std::vector<std::string> violations;
};
/// Bisects a case that fails under `pipeline` (a graph, the seed and int_high of its
/// inputs): the properties are checked after each prefix of the pipeline, and the first
/// pass whose prefix fails is the one to blame. nullopt for a pipeline of one pass.
std::optional<Bisection> bisect_failure(const ir::Graph& graph, const std::string& pipeline, uint64_t seed,
                                        int64_t int_high, const check::PassRegistry& registry);

/// Throws std::invalid_argument when a sim-mesh repro's graph is not one every rank can
/// run on its shard (one tensor input): the header then belongs to another kind of case.
void check_sim_mesh_graph(const check::Repro& repro);

/// Replays a sim-mesh repro (check::Repro::is_sim_mesh_case): the graph through the repro's
/// pipeline, its claims proved, and the result against the original bit for bit on every
/// rank of the mesh. Returns the violations (empty: it passes).
std::vector<std::string> replay_sim_mesh_case(const check::Repro& repro, const check::PassRegistry& registry);

}  // namespace passcheck::campaign
