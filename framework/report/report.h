// The HTML report of one passcheck run: a builder a command fills as it runs (the verdict,
// key figures, per-pass graph diffs, memory timelines, Z3 claims, per-step comparison
// tables, a fuzz campaign's failures) and write_html(), which renders it as one
// self-contained file a reviewer opens in a browser: inline CSS and SVG, collapsible
// regions as <details>, no script and nothing loaded from anywhere else. Every string
// from a graph, a file or a message is escaped. docs/reports.md describes the sections.
#pragma once

#include "framework/check/compare.h"
#include "framework/report/graph_diff.h"
#include "framework/report/html.h"
#include "framework/sym/prover.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace passcheck::ir {
class Graph;
}

namespace passcheck::report {

/// One pass of a pipeline: what it reported and the diff of its before and after graphs.
struct PassSection {
  std::string pass;
  size_t nodes_before = 0, nodes_after = 0;
  bool changed = false;
  double seconds = 0;
  /// "rule-name=3" / "guard-name=1" lines and the pass's own statistics.
  std::vector<std::string> details;
  std::optional<GraphDiff> diff;  ///< none when the graphs were not kept
};

/// A memory timeline: live bytes per node of one or more graphs (or runs).
struct MemoryTimeline {
  std::string title;
  std::vector<ChartSeries> series;
  /// Lines under the chart ("eager peak 1.2 MiB, traced peak 1.1 MiB").
  std::vector<std::string> notes;
  /// What the x axis counts, and its points in the plural (the legend's counts).
  std::string x_label = "node";
  std::string points_name = "nodes";
  std::string y_label = "live bytes";
};

/// One claim checked by Z3.
struct ClaimRow {
  std::string kind, pass, subject, condition;
  std::string verdict;  ///< "proved", "refuted", "unknown"
  double seconds = 0;
  std::string detail;  ///< counterexample or reason
};

/// One table of compared values (a training step, or the outputs of two graphs).
struct StepTable {
  std::string title;  ///< "step 1", "outputs"
  std::vector<check::TensorComparison> rows;
  std::vector<std::string> problems;
  std::vector<std::string> notes;  ///< memory figures of the step, etc.
  bool equal() const;
};

/// One failing case of a fuzz campaign.
struct FuzzFailure {
  int64_t index = 0;
  uint64_t seed = 0;
  std::string kind, detail;
  std::string repro;           ///< repro file ("" when none was written)
  std::string replay_command;  ///< "passcheck repro FILE"
  std::string minimized;       ///< "12 -> 4 nodes" or a note
};

struct FuzzSummary {
  std::string pipeline;
  int64_t cases_run = 0, violations = 0, crashes = 0, timeouts = 0, repro_files = 0;
  double seconds = 0;
  std::vector<FuzzFailure> failures;
};

/// A plain table for results the other sections do not model (a CI gate's per-pass
/// selection, say): every cell is escaped.
struct Table {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

/// What an exit code means under passcheck's contract (0, 1, 2).
std::string exit_code_meaning(int exit_code);

/// The report a command fills; render with html() or write_html().
class Report {
 public:
  /// `command`: "check", "equiv", ...; `command_line`: the full invocation as typed.
  Report(std::string command, std::string command_line);

  /// The outcome: exit code and a one-line summary (the verdict line the command printed).
  void set_verdict(int exit_code, std::string summary);
  bool has_verdict() const { return exit_code_.has_value(); }
  const std::string& summary() const { return summary_; }
  /// A key figure shown under the verdict ("model" -> "mlp", "steps" -> "2").
  void add_fact(const std::string& label, const std::string& value);
  void add_pass(PassSection pass);
  /// Diffs the two graphs and adds the pass with that diff.
  void add_pass_with_graphs(PassSection pass, const ir::Graph& before, const ir::Graph& after);
  void add_memory_timeline(MemoryTimeline timeline);
  void add_claims(const std::vector<ClaimRow>& rows);
  /// The rows of a Z3 proof report.
  void add_claims(const sym::ProofReport& proofs);
  void add_step_table(StepTable table);
  void set_fuzz(FuzzSummary fuzz);
  /// A table shown after the verdict, in the section "results" (id "results").
  void add_table(Table table);

  const std::vector<PassSection>& passes() const { return passes_; }
  const std::vector<ClaimRow>& claims() const { return claims_; }
  const std::vector<StepTable>& step_tables() const { return steps_; }

  /// The whole document.
  std::string html() const;

 private:
  std::string command_, command_line_;
  std::optional<int> exit_code_;
  std::string summary_;
  std::vector<std::pair<std::string, std::string>> facts_;
  std::vector<PassSection> passes_;
  std::vector<MemoryTimeline> timelines_;
  std::vector<ClaimRow> claims_;
  bool claims_checked_ = false;
  std::vector<StepTable> steps_;
  std::optional<FuzzSummary> fuzz_;
  std::vector<Table> tables_;
};

/// The HTML of one graph diff: counts, then a <details> per region (module FQN and
/// phase), open when something in it changed, listing the changed nodes.
std::string render_diff(const GraphDiff& diff);

/// Writes report.html() to `path` atomically (io::write_file_atomically).
void write_html(const std::string& path, const Report& report);

}  // namespace passcheck::report
