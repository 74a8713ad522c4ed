// The default coverage campaign: which case sources run which pipelines, how many
// cases and from which seed, so that every rule and guard every registered pass
// declares is reached at least once (suites/property/coverage_campaign_test.cpp holds
// it to that). Defined here, once, so the test, the fuzzer and anyone reading coverage
// agree on it. A pass family adds its line to default_coverage_campaign(); a new kind
// of case adds a source to campaign_sources().
#pragma once

#include "framework/check/coverage.h"
#include "framework/check/pass.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace passcheck::gen {

/// One line of a campaign: `cases` cases of `source`, each checked with `pipeline`.
struct CampaignEntry {
  std::string source;    ///< a key of campaign_sources()
  std::string pipeline;  ///< pipeline text (the source decides how it is run)
  int64_t cases = 0;
  uint64_t seed = 0;     ///< case i uses case_seed(seed, i)
};

/// Runs one case: the case for `case_seed`, checked with `pipeline` of `registry`;
/// returns the violated properties (empty: the case holds).
using CaseRunner = std::function<std::vector<std::string>(uint64_t case_seed, const std::string& pipeline,
                                                           const check::PassRegistry& registry)>;

/// The case sources by name:
///  - "cleanup-situations": generate_cleanup_situation, generic pass properties;
///  - "programs": generate_case (traced random programs), generic pass properties;
///  - "chunk-programs": generate_chunk_case, run_chunk_case; the pipeline names the
///    chunk pass then the concretize pass ("chunk,concretize");
///  - "random-ir": arbitrary_graph (structurally valid, not executable IR, e.g. with
///    collectives); only the pipeline runs, and since such graphs are not programs a
///    pass may rightly refuse them: they reach decisions, they report no violations;
///  - "ac-programs": generate_case with ac_coverage_options(), generic pass properties
///    (with the remat properties, check::check_case);
///  - "ac-programs-tagged-at-random": the same programs with tag_randomly tags; only the
///    pipeline runs (tags from elsewhere may be unsafe: remat's guards, no promises);
///  - "chunk-coverage-programs": generate_chunk_case with chunk_coverage_options(),
///    run_chunk_case, pipeline "chunk,concretize" as for "chunk-programs";
///  - "chained-allgathers": generate_chained_allgathers, chained_allgathers_violations;
///    the pipeline is the pass's name alone (each case adds its own options);
///  - "decision-situations": generate_decision_situation, each with its own pipeline
///    (the entry's is empty), decision_situation_violations;
///  - "cudagraph-situations": every cudagraph_situations() graph through its own
///    pipeline (the entry's is empty), cudagraph_situation_violations;
///  - "distributed-situations": every distributed_situations() graph through its own
///    pipeline (the entry's is empty), distributed_situation_violations.
const std::map<std::string, CaseRunner>& campaign_sources();

/// The seed of case `index` of a campaign line seeded `seed`.
uint64_t case_seed(uint64_t seed, int64_t index);

/// "pass rule|guard name" -> why no input graph can reach it: the declared decisions
/// the default campaign (and the AC/chunk campaign) is not expected to reach. Shared by
/// the coverage tests, which fail when a listed gap is reached after all.
const std::map<std::string, std::string>& known_decision_gaps();

/// The default campaign (see the file comment).
const std::vector<CampaignEntry>& default_coverage_campaign();

struct CampaignResult {
  check::Coverage coverage;
  int64_t cases = 0;
  /// "<source> case <i> (seed s), <pipeline>: <violation>" for every failing case.
  std::vector<std::string> violations;
};

/// Runs every entry with `registry` (through a counting copy) and sums the decisions,
/// those a pass reported before refusing its input included.
CampaignResult run_campaign(const std::vector<CampaignEntry>& entries, const check::PassRegistry& registry);

}  // namespace passcheck::gen
