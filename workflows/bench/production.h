// The production-shapes benchmark (`passcheck bench --production`): production model
// configurations traced on meta, single-rank and per rank of a parallel plan, then every
// pass and the named pipelines timed on those graphs, each in a child process with a time
// limit. production.cpp says what each figure measures.
#pragma once

#include "oracles/models/subject.h"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace passcheck::bench {

/// One timed run of a pipeline on a graph, in a child process.
struct PassTiming {
  std::string status = "ok";  ///< "ok", "skipped: > N s", "failed: ...", "crashed: signal N"
  double pass_ms = 0;         ///< the timed passes themselves
  double gated_ms = 0;        ///< the same with their gate (verifier, changed-claim, claims)
  double prerequisites_ms = 0;
  size_t nodes_after = 0;
  double child_peak_rss_mib = 0;
};

/// The figures of one configuration.
struct ConfigFigures {
  std::string model, config;
  int64_t parameters = 0;
  double build_ms = 0, trace_ms = 0, peak_rss_mib = 0;
  size_t nodes = 0;
  std::string rank_plan;  ///< "fsdp dp=128 rank 0"
  double rank_trace_ms = 0;
  size_t rank_nodes = 0;
  int64_t ranks = 1;
  std::string rank_error;
  std::vector<std::pair<std::string, PassTiming>> passes;  ///< in order, pipelines last
};

struct ProductionOptions {
  /// (model, config) pairs; empty: every production configuration.
  std::vector<std::pair<std::string, std::string>> configs;
  /// The per-rank graph's plan, mesh and rank.
  std::string plan = "fsdp";
  std::string mesh = "dp=128";
  int64_t rank = 0;
  bool trace_only = false;    ///< no pass, tracing figures only
  double pass_limit_s = 60;   ///< per pass; a pass over it is reported as skipped
  /// The subject's variant (layers, dtype, attention, batch, sequence); the configuration
  /// and the meta device are set per configuration.
  models::SubjectOptions subject;
};

struct ProductionReport {
  double baseline_rss_mib = 0;  ///< the process's resident set before the first trace
  std::vector<ConfigFigures> configs;
};

/// "llama3:405b,deepseek_v3:671b" as (model, config) pairs, each checked; "" gives every
/// production configuration. Throws std::invalid_argument naming a malformed item.
std::vector<std::pair<std::string, std::string>> parse_production_configs(const std::string& text);

/// Measures every configuration; `progress` gets a line per stage.
ProductionReport measure_production(const ProductionOptions& options, std::ostream& progress);

/// The report as JSON (what `bench --production --json` writes).
std::string production_json(const ProductionReport& report);

}  // namespace passcheck::bench
