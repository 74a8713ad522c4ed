// The --report plumbing of check, chunk, fuzz and equiv (see report_commands.h).
#include "tools/passcheck/report_commands.h"

#include "framework/io/files.h"
#include "framework/ir/graph.h"
#include "framework/ir/module.h"
#include "framework/sym/prover.h"

#include <algorithm>
#include <fstream>
#include <iterator>

namespace passcheck::cli {

namespace {

// Single-quoted for a POSIX shell unless every character is plain.
std::string shell_quote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=,:@%+") ==
                          std::string::npos)
    return arg;
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string mib_text(int64_t bytes) { return report::short_bytes(bytes); }

}  // namespace

std::string current_command_line() {
  // The kernel keeps the arguments the process was started with, NUL-separated.
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string line;
  size_t start = 0;
  bool first = true;
  while (start < raw.size()) {
    size_t end = raw.find('\0', start);
    if (end == std::string::npos) end = raw.size();
    std::string arg = raw.substr(start, end - start);
    if (first) arg = arg.substr(arg.find_last_of('/') == std::string::npos ? 0 : arg.find_last_of('/') + 1);
    line += (first ? "" : " ") + shell_quote(arg);
    first = false;
    start = end + 1;
  }
  return line.empty() ? "passcheck" : line;
}

int run_reported(const std::string& path, report::Report& report, const std::function<int()>& body) {
  if (path.empty()) return body();
  io::check_writable(path, "--report file");
  auto write = [&](int code, const std::string& message) {
    report.set_verdict(code, message);
    report::write_html(path, report);
  };
  int code = 0;
  try {
    code = body();
  } catch (const check::PassFailure& failure) {
    write(1, failure.what());
    throw;
  } catch (const std::exception& e) {
    write(2, e.what());
    throw;
  }
  write(code, report.summary());  // the verdict line body set, if any
  return code;
}

PassDiffRecorder::Dump PassDiffRecorder::dump(Dump next) {
  return [this, next](const std::string& when, const std::string& pass, const ir::Graph& graph) {
    observe(when, pass, graph);
    if (next) next(when, pass, graph);
  };
}

void PassDiffRecorder::observe(const std::string& when, const std::string& pass, const ir::Graph& graph) {
  if (when == "before") {
    if (!first_estimate_) first_estimate_ = check::estimate_memory(graph);
    before_ = graph.clone();
    before_pass_ = pass;
    return;
  }
  claims_ = graph.claims();
  symbols_ = graph.symbols();
  last_estimate_ = check::estimate_memory(graph);
  // A module pass dumps only its after graphs (one per part): no before to diff with.
  if (!before_ || before_pass_ != pass) return;
  entries_.push_back(Entry{pass, report::diff_graphs(*before_, graph)});
  before_.reset();
}

report::PassSection pass_section(const check::PassRecord& record) {
  report::PassSection section;
  section.pass = record.pass;
  section.nodes_before = record.nodes_before;
  section.nodes_after = record.nodes_after;
  section.changed = record.changed;
  section.seconds = record.seconds;
  for (const auto& [name, value] : record.stats) section.details.push_back(name + "=" + std::to_string(value));
  for (const auto& [name, value] : record.rules_fired) section.details.push_back("rule " + name + " fired " + std::to_string(value));
  for (const auto& [name, value] : record.guards_refused)
    section.details.push_back("guard " + name + " refused " + std::to_string(value));
  for (const std::string& note : record.notes) section.details.push_back("refused: " + note);
  return section;
}

void PassDiffRecorder::add_to(report::Report& report, const std::vector<check::PassRecord>& records) const {
  size_t next_entry = 0;
  for (const check::PassRecord& record : records) {
    report::PassSection section = pass_section(record);
    if (next_entry < entries_.size() && entries_[next_entry].pass == record.pass) section.diff = entries_[next_entry++].diff;
    report.add_pass(std::move(section));
  }
  // Passes that ran without a record: the one that failed the gate (its after graph was
  // dumped before the checks threw).
  for (; next_entry < entries_.size(); ++next_entry) {
    const Entry& entry = entries_[next_entry];
    report::PassSection section;
    section.pass = entry.pass + " (failed the gate)";
    section.nodes_before = entry.diff.nodes_before;
    section.nodes_after = entry.diff.nodes_after;
    section.changed = !entry.diff.unchanged();
    section.diff = entry.diff;
    report.add_pass(std::move(section));
  }
}

void add_driver_steps(report::Report& report, const oracles::DriverReport& driver) {
  if (!driver.steps.empty()) {
    // Measured, not estimated: the allocator's peak during each step on both sides.
    report::MemoryTimeline measured;
    measured.title = "measured peak bytes per step, eager vs traced";
    measured.x_label = "step (from 1)";
    measured.points_name = "steps";
    measured.y_label = "peak bytes";
    measured.series = {{"eager", {}}, {"traced", {}}};
    for (const oracles::StepReport& step : driver.steps) {
      measured.series[0].values.push_back(step.eager_peak_bytes);
      measured.series[1].values.push_back(step.traced_peak_bytes);
    }
    report.add_memory_timeline(std::move(measured));
  }
  for (const oracles::StepReport& step : driver.steps) {
    report::StepTable table;
    table.title = "step " + std::to_string(step.step);
    table.rows = step.comparisons;
    table.problems = step.problems;
    table.notes.push_back("measured peak: eager " + mib_text(step.eager_peak_bytes) + ", traced " +
                          mib_text(step.traced_peak_bytes) + " (executor live beyond inputs " +
                          mib_text(step.traced_peak_live_bytes) + ")");
    report.add_step_table(std::move(table));
  }
}

std::string driver_verdict(const oracles::DriverReport& driver) {
  for (const oracles::StepReport& step : driver.steps) {
    if (step.equal()) continue;
    std::string what = !step.problems.empty() ? step.problems.front() : "";
    for (const auto& c : step.comparisons)
      if (what.empty() && !c.equal) what = c.describe();
    return "first difference at step " + std::to_string(step.step) + " of " + std::to_string(driver.steps.size()) + ": " + what;
  }
  const size_t values = driver.steps.empty() ? 0 : driver.steps.front().comparisons.size();
  return "all " + std::to_string(driver.steps.size()) + " steps bitwise equal (" + std::to_string(values) +
         " values compared per step)";
}

report::MemoryTimeline estimate_timeline(const std::string& title,
                                         const std::vector<std::pair<std::string, check::MemoryEstimate>>& graphs) {
  report::MemoryTimeline timeline;
  timeline.title = title;
  for (const auto& [label, estimate] : graphs) {
    timeline.series.push_back(report::ChartSeries{label, estimate.live_bytes_per_node});
    timeline.notes.push_back(label + ": estimated peak " + mib_text(estimate.peak_bytes) + ", held from forward into backward " +
                             mib_text(estimate.live_at_backward_start));
  }
  return timeline;
}

void add_check_sections(report::Report& report, const CheckArgs& args, const CheckRun& run) {
  report.add_fact("model", args.model);
  report.add_fact("steps", std::to_string(args.steps));
  report.add_fact("optimizer", args.optimizer);
  report.add_fact("device", args.device);
  report.add_fact("pipeline", run.pipeline.empty() ? "(none)" : run.pipeline);
  report.add_fact("eager oracle checkpointing", run.eager_checkpointing);
  report.add_fact("traced graph nodes", std::to_string(run.traced_nodes));
  if (!run.records.empty()) report.add_fact("nodes after the pipeline", std::to_string(run.records.back().nodes_after));
  run.diffs.add_to(report, run.records);
  std::vector<std::pair<std::string, check::MemoryEstimate>> series;
  if (!run.estimates.empty()) series.emplace_back("traced graph", run.estimates.front());
  if (run.estimates.size() > 1) series.emplace_back("after the pipeline", run.estimates.back());
  if (!series.empty()) {
    report::MemoryTimeline timeline =
        estimate_timeline("live bytes per node, traced graph before vs after the pipeline (static estimate)", series);
    if (run.driver && !run.driver->steps.empty()) {
      const oracles::StepReport& last = run.driver->steps.back();
      timeline.notes.push_back("measured at step " + std::to_string(last.step) + ": eager peak " +
                               mib_text(last.eager_peak_bytes) + ", traced peak " + mib_text(last.traced_peak_bytes));
    }
    report.add_memory_timeline(std::move(timeline));
  }
  if (!run.pipeline.empty()) add_proved_claims(report, run.diffs.last_claims(), run.diffs.last_symbols());
  if (run.driver) add_driver_steps(report, *run.driver);
}

void add_proved_claims(report::Report& report, const std::vector<sym::Claim>& claims,
                       const std::vector<sym::Symbol>& symbols) {
  report.add_claims(sym::prove_all(claims, symbols));
}

void add_equiv_sections(report::Report& report, const ir::Graph& a, const ir::Graph* b_graph, const ir::Module* b_module,
                        const std::string& b_name, bool diff_a_b) {
  report.add_fact("graph B", b_name);
  std::vector<std::pair<std::string, check::MemoryEstimate>> series = {{"A", check::estimate_memory(a)}};
  std::vector<sym::Claim> claims;
  std::vector<sym::Symbol> symbols;
  if (b_graph) {
    report.add_fact("graph B nodes", std::to_string(b_graph->num_nodes()));
    if (diff_a_b) {
      report::PassSection section;
      section.pass = "A -> B";
      section.nodes_before = a.num_nodes();
      section.nodes_after = b_graph->num_nodes();
      report.add_pass_with_graphs(std::move(section), a, *b_graph);
    }
    series.emplace_back("B", check::estimate_memory(*b_graph));
    claims = b_graph->claims();
    symbols = b_graph->symbols();
  } else if (b_module) {
    // The parts run one after another: their timelines end to end.
    check::MemoryEstimate joined;
    for (const ir::ModulePart& part : b_module->parts) {
      check::MemoryEstimate e = check::estimate_memory(*part.graph);
      joined.peak_bytes = std::max(joined.peak_bytes, e.peak_bytes);
      joined.live_bytes_per_node.insert(joined.live_bytes_per_node.end(), e.live_bytes_per_node.begin(),
                                        e.live_bytes_per_node.end());
      claims.insert(claims.end(), part.graph->claims().begin(), part.graph->claims().end());
      for (const sym::Symbol& s : part.graph->symbols()) symbols.push_back(s);
    }
    report.add_fact("graph B nodes", std::to_string(b_module->num_nodes()) + " in " +
                                         std::to_string(b_module->parts.size()) + " parts");
    series.emplace_back("B (module parts in order)", joined);
  }
  report.add_memory_timeline(estimate_timeline("live bytes per node, A vs B (static estimate)", series));
  add_proved_claims(report, claims, symbols);
}

void add_equiv_comparison(report::Report& report, const graph_files::EquivReport& equiv) {
  report::StepTable table;
  table.title = "outputs of A and B";
  table.problems = equiv.structural_problems;
  for (const graph_files::EquivRow& row : equiv.rows) {
    check::TensorComparison c = row.comparison;
    if (!row.tensor) {
      c = check::TensorComparison{};
      c.equal = row.equal();
      c.dtype = "scalar";
      if (!c.equal) c.problem = "A " + row.a_text + " vs B " + row.b_text;
    }
    c.name = row.label;
    table.rows.push_back(std::move(c));
  }
  report.add_step_table(std::move(table));
  // The command's own verdict line is the report's summary.
  const std::string text = equiv.format();
  const size_t at = text.rfind("verdict: ");
  report.set_verdict(equiv.equal() ? 0 : 1, at == std::string::npos ? "" : text.substr(at, text.find('\n', at) - at));
}

void add_campaign_report(report::Report& report, const campaign::CampaignReport& campaign, const std::string& summary_line) {
  report::FuzzSummary fuzz;
  fuzz.pipeline = campaign.pipeline;
  fuzz.cases_run = campaign.cases_run;
  fuzz.violations = campaign.violations;
  fuzz.crashes = campaign.crashes;
  fuzz.timeouts = campaign.timeouts;
  fuzz.repro_files = campaign.repro_files;
  fuzz.seconds = campaign.seconds;
  for (const campaign::CaseFailure& f : campaign.failures) {
    report::FuzzFailure failure;
    failure.index = f.index;
    failure.seed = f.seed;
    failure.kind = f.kind;
    failure.detail = f.detail;
    failure.repro = f.repro;
    failure.replay_command = f.repro.empty() ? "(no repro: the case failed before writing its graph)" : "passcheck repro " + f.repro;
    if (f.nodes_before > 0) failure.minimized = std::to_string(f.nodes_before) + " -> " + std::to_string(f.nodes_after) + " nodes";
    if (!f.minimizer_note.empty()) failure.minimized += (failure.minimized.empty() ? "" : " ") + f.minimizer_note;
    fuzz.failures.push_back(std::move(failure));
  }
  report.add_fact("pipeline", campaign.pipeline);
  report.add_fact("cases run", std::to_string(campaign.cases_run));
  report.add_fact("failures", std::to_string(campaign.failure_count()));
  report.set_fuzz(std::move(fuzz));
  std::string line = summary_line;
  while (!line.empty() && line.back() == '\n') line.pop_back();
  report.set_verdict(campaign.failure_count() > 0 ? 1 : 0, line);
}

}  // namespace passcheck::cli
