// Graph texts built around the decisions of the AC and chunk passes that traced programs
// never reach: a live-in carrying the chunk symbol in two dimensions, a reshape with a
// baked size, a forward node reading a backward value, module state carrying the symbol,
// a buffer updated twice or read after its update, an out= write, a live-out without
// metadata or that is not a partial sum, a symbolic scalar in a chunk body, seq chunking
// through attention, scalar plumbing for concretize, a wait_tensor after a collective
// and a scalar-producing forward node for sac-tag, two disjoint backward regions for
// remat. Each case is one motif with random sizes, hint, layer and variant, written as
// text (every value typed) and parsed; it names the pipeline to run and whether a clear
// refusal is the expected outcome. Symbolic and collective cases are not executable:
// the campaigns only run the passes on them.
#pragma once

#include "framework/check/pass.h"
#include "framework/ir/graph.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace passcheck::gen {

struct DecisionSituation {
  std::string motif;     ///< a name of decision_motifs()
  std::string decision;  ///< "pass rule|guard name" the motif is built to reach
  std::string text;      ///< the graph text, before parsing
  std::shared_ptr<ir::Graph> graph;
  std::string pipeline;  ///< pipeline text to run the graph through
  bool refusal_expected = false;  ///< the real pipeline refuses it with check::RefusedInput
  size_t refusing_step = 0;       ///< which pass of the pipeline refuses (when expected)
  /// The graph runs on the executor (after concretize when symbolic); false for
  /// collectives, which need more than one process.
  bool executable = true;
  uint64_t input_seed = 0;        ///< exec::make_inputs seed
  std::string description;        ///< motif and variant
};

/// The names of the motifs, in the order generate_decision_situation indexes them.
const std::vector<std::string>& decision_motifs();

/// The case for `seed` (deterministic) of motif `motif` (an index into decision_motifs()).
DecisionSituation generate_decision_situation(uint64_t seed, size_t motif);
/// The case for `seed` (deterministic), its motif drawn from the seed.
DecisionSituation generate_decision_situation(uint64_t seed);

/// The property every situation holds for the passes of `pipeline` in `registry` (the
/// real passes, or a mutant standing for one): the passes run one by one, the verifier
/// after each. A refusal (check::RefusedInput) holds where the situation expects one, by
/// the same step of the pipeline, and is a violation elsewhere; any other error, a verifier failure, or a result whose
/// outputs differ bit for bit from the input graph's (both concretized by the real
/// concretize pass when symbolic; concrete graphs go through check::check_case, the
/// generic pass and remat properties) is a violation. Empty: the property holds.
std::vector<std::string> decision_situation_violations(const DecisionSituation& situation,
                                                       const std::string& pipeline,
                                                       const check::PassRegistry& registry);

}  // namespace passcheck::gen
