// The decision-coverage campaign of the activation-checkpointing passes (ac-regions,
// sac-tag, apply-ac, remat) and the chunking passes (chunk, concretize): a fixed-seed
// set of generated cases (generators/program.h with ProgramGenOptions::
// decision_coverage) and of IR-level decision situations (generators/
// decision_situations.h, for what traced programs cannot produce) run through pipelines that exercise every policy and mode, with
// each rule firing and guard refusal of these passes summed per pass and decision. A
// pass that refuses a case with check::RefusedInput counts the guard that refused (an
// expected outcome, not a problem). No graph is executed: only the passes run.
#pragma once

#include "framework/check/pass.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace passcheck::gen {

/// pass -> decision name -> how often it fired (rules) or refused (guards).
using DecisionCounts = std::map<std::string, std::map<std::string, int64_t>>;

struct AcChunkCoverageOptions {
  uint64_t seed = 1;
  int program_cases = 32;  ///< AC cases: generate_case with ac_coverage_options()
  int chunk_cases = 48;    ///< chunk cases: generate_chunk_case with chunk_coverage_options()
  /// Decision situations (generators/decision_situations.h), motif i % motifs for case i.
  int situation_cases = 48;
};

struct AcChunkCoverage {
  /// Every declared rule and guard of the six passes appears, reached or not.
  DecisionCounts rules, guards;
  int64_t cases = 0;     ///< pipeline runs
  int64_t refusals = 0;  ///< runs a pass refused with a clear error (expected)
  std::vector<std::string> refusal_messages;  ///< their errors, in order
  /// Runs that failed otherwise (a verifier error, a symbolization failure): each one a
  /// finding about the passes or the generator.
  std::vector<std::string> problems;
  /// "pass rule|guard name" for every declared decision never reached.
  std::vector<std::string> unreached() const;
  /// One line per pass and decision: "remat guard random-original-kept 12".
  std::string table() const;
};

/// The passes the campaign counts.
const std::vector<std::string>& ac_chunk_passes();

/// Runs the campaign with the passes of `registry` (PassRegistry::global() for the real
/// ones); deterministic for given options.
AcChunkCoverage ac_chunk_coverage(const check::PassRegistry& registry, const AcChunkCoverageOptions& options = {});

}  // namespace passcheck::gen
