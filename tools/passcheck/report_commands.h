// What the commands with --report share (check, chunk, fuzz, equiv): the command line,
// writing the report whatever the run's outcome, keeping each pass's before graph to diff
// it with the after graph, and turning the drivers' results into report sections
// (framework/report/report.h).
#pragma once

#include "workflows/campaign/campaign.h"
#include "framework/check/memory_estimate.h"
#include "framework/check/pipeline.h"
#include "tools/passcheck/commands.h"
#include "workflows/graph_files/graph_tools.h"
#include "framework/ir/sym_expr.h"
#include "framework/report/report.h"
#include "oracles/training_driver.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace passcheck::cli {

/// The command line this process was started with, each argument quoted for a shell
/// where it needs it ("passcheck check --pipeline 'dce,cse'").
std::string current_command_line();

/// Runs `body` (a command's work, filling `report`) and, when `path` is not empty, writes
/// the report there whatever the outcome: the exit code body returns, or the exception it
/// throws (a pass failure as 1, anything else as 2, its message as the verdict summary),
/// which is then rethrown for guarded(). `path` is checked writable before body runs, so
/// a long run never ends unable to write its report. A summary body set is kept.
int run_reported(const std::string& path, report::Report& report, const std::function<int()>& body);

/// Keeps the graph before each pass (PipelineOptions::dump) and diffs it with the graph
/// after, and the claims of the last graph seen.
class PassDiffRecorder {
 public:
  using Dump = std::function<void(const std::string& when, const std::string& pass, const ir::Graph&)>;
  /// A dump callback that records, then calls `next` (when set).
  Dump dump(Dump next = nullptr);
  void observe(const std::string& when, const std::string& pass, const ir::Graph& graph);
  /// One section per pass that ran, in order, each with its diff; the record of the same
  /// pass (matched in order by label) adds its time and statistics.
  void add_to(report::Report& report, const std::vector<check::PassRecord>& records) const;
  /// Memory estimates of the first graph a pass saw and of the last graph a pass left
  /// (null before any pass ran).
  const check::MemoryEstimate* first_estimate() const { return first_estimate_ ? &*first_estimate_ : nullptr; }
  const check::MemoryEstimate* last_estimate() const { return last_estimate_ ? &*last_estimate_ : nullptr; }
  /// Claims (and their symbols) of the last graph a pass left.
  const std::vector<sym::Claim>& last_claims() const { return claims_; }
  const std::vector<sym::Symbol>& last_symbols() const { return symbols_; }

 private:
  struct Entry {
    std::string pass;
    report::GraphDiff diff;
  };
  std::unique_ptr<ir::Graph> before_;
  std::string before_pass_;
  std::vector<Entry> entries_;
  std::vector<sym::Claim> claims_;
  std::vector<sym::Symbol> symbols_;
  std::optional<check::MemoryEstimate> first_estimate_, last_estimate_;
};

/// What a single-rank `check` run produced, as far as it got.
struct CheckRun {
  std::string pipeline;  ///< "" without --pipeline
  std::string eager_checkpointing;
  size_t traced_nodes = 0;
  const std::vector<check::PassRecord>& records;
  /// The traced graph's estimate, then one per pass.
  const std::vector<check::MemoryEstimate>& estimates;
  const PassDiffRecorder& diffs;
  const oracles::DriverReport* driver = nullptr;  ///< null when training did not run
};

/// check's sections: key figures, passes with diffs, the memory timeline (traced vs after
/// the pipeline, the last step's measured peaks), the final graph's claims, step tables.
void add_check_sections(report::Report& report, const CheckArgs& args, const CheckRun& run);

/// A record without graphs (a module pass, or a run whose graphs were not kept).
report::PassSection pass_section(const check::PassRecord& record);

/// One comparison table per training step, the step's measured peaks as notes, and the
/// chart of the measured peaks per step, eager vs traced.
void add_driver_steps(report::Report& report, const oracles::DriverReport& driver);

/// "all 3 steps bitwise equal (29 values each)" or where the first difference is.
std::string driver_verdict(const oracles::DriverReport& driver);

/// Live bytes per node of each graph from the static estimate (check::estimate_memory).
report::MemoryTimeline estimate_timeline(const std::string& title,
                                         const std::vector<std::pair<std::string, check::MemoryEstimate>>& graphs);

/// Proves `claims` with Z3 and adds the table (an empty table says none were recorded).
void add_proved_claims(report::Report& report, const std::vector<sym::Claim>& claims,
                       const std::vector<sym::Symbol>& symbols);

/// equiv's graph sections: B's facts, the diff A -> B (when `diff_a_b`: B was a file,
/// not A after a pipeline), the memory timelines of A and B, and B's claims proved.
/// `b_module` replaces `b_graph` when B is a module (its parts in order).
void add_equiv_sections(report::Report& report, const ir::Graph& a, const ir::Graph* b_graph, const ir::Module* b_module,
                        const std::string& b_name, bool diff_a_b);

/// equiv's comparison table (every output, the inputs after the run) and verdict line.
void add_equiv_comparison(report::Report& report, const graph_files::EquivReport& equiv);

/// fuzz's section: the campaign's counts and each failure with its repro file and the
/// command that replays it; `summary_line` (the "fuzz summary: ..." line) is the verdict.
void add_campaign_report(report::Report& report, const campaign::CampaignReport& campaign, const std::string& summary_line);

}  // namespace passcheck::cli
