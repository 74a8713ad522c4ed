// Rendering of the HTML report (see report.h). The document's sections carry stable ids
// (verdict, passes, memory, claims, steps, fuzz) that tests and readers can link to.
#include "framework/report/report.h"

#include "framework/io/files.h"

#include <cstdio>
#include <map>

namespace passcheck::report {

namespace {

// The whole style sheet: the report must render the same offline.
constexpr const char* kStyle = R"css(
body { font-family: sans-serif; margin: 1.5em; color: #1b1b1b; max-width: 1200px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; border-bottom: 1px solid #ccc; margin-top: 1.6em; }
code, pre, .mono { font-family: monospace; font-size: 0.92em; }
.verdict { padding: 0.6em 1em; border-radius: 4px; font-weight: bold; }
.verdict.pass { background: #dff3df; border: 1px solid #4a9a4a; }
.verdict.fail { background: #f8dcdc; border: 1px solid #b43c3c; }
.verdict.error { background: #f6ecd2; border: 1px solid #a88a2a; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #d0d0d0; padding: 2px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
tr.added td { background: #e2f5e2; } tr.removed td { background: #f9e0e0; } tr.rewired td { background: #fdf3d0; } tr.retagged td { background: #e6eefa; }
td.equal { color: #2f7a2f; } td.differs { color: #b43c3c; font-weight: bold; }
details { margin: 0.2em 0 0.2em 1em; } summary { cursor: pointer; }
.counts span { margin-right: 1em; }
.chart .axis { stroke: #555; stroke-width: 1; } .chart .tick, .chart .legend { font-size: 11px; fill: #333; }
.chart polyline { stroke-width: 1.5; }
.series-0 { stroke: #1f5fa8; } .series-0-key { fill: #1f5fa8; }
.series-1 { stroke: #d2691e; } .series-1-key { fill: #d2691e; }
.series-2 { stroke: #2f8a2f; } .series-2-key { fill: #2f8a2f; }
.series-3 { stroke: #8a2f8a; } .series-3-key { fill: #8a2f8a; }
.none { color: #666; font-style: italic; }
)css";

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 1 ? "%.1f ms" : "%.2f s", s < 1 ? s * 1000 : s);
  return buf;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::string operands_text(const std::vector<std::string>& names) {
  std::vector<std::string> marked;
  for (const std::string& n : names) marked.push_back("%" + n);
  return "(" + join(marked, ", ") + ")";
}

std::string render_comparison_row(const check::TensorComparison& c) {
  std::string where;
  if (c.equal) {
    where = "";
  } else if (c.values_differ()) {
    std::string index;
    for (size_t i = 0; i < c.first_mismatch_index.size(); ++i) index += (i ? ", " : "") + std::to_string(c.first_mismatch_index[i]);
    char values[96];
    std::snprintf(values, sizeof values, "%.9g vs %.9g", c.expected_value, c.actual_value);
    where = "[" + index + "]: " + values + " (" + std::to_string(c.mismatches) + " of " + std::to_string(c.numel) + " differ)";
  } else {
    where = c.problem;
  }
  return "<tr><td class=\"mono\">" + escape(c.name) + "</td><td>" + escape(c.dtype) + "</td><td class=\"mono\">" +
         escape(check::format_sizes(c.sizes)) + "</td><td class=\"" + (c.equal ? "equal\">equal" : "differs\">DIFFERS") +
         "</td><td>" + std::to_string(c.max_ulp) + "</td><td class=\"mono\">" + escape(where) + "</td></tr>";
}

std::string render_verdict(const std::optional<int>& exit_code, const std::string& summary) {
  const int code = exit_code.value_or(2);
  const char* cls = code == 0 ? "pass" : code == 1 ? "fail" : "error";
  const char* word = code == 0 ? "PASSED" : code == 1 ? "FAILED" : "ERROR";
  std::string html = "<div class=\"verdict " + std::string(cls) + "\" id=\"verdict-line\">" + word + " (exit code " +
                     std::to_string(code) + ": " + escape(exit_code_meaning(code)) + ")</div>";
  if (!summary.empty()) html += "<p id=\"verdict-summary\">" + escape(summary) + "</p>";
  return html;
}

}  // namespace

std::string exit_code_meaning(int exit_code) {
  switch (exit_code) {
    case 0: return "verified, nothing differs";
    case 1: return "a verification failed: a difference, a broken property or a refuted claim";
    default: return "bad input or an error before the verdict; the run did not complete";
  }
}

bool StepTable::equal() const {
  if (!problems.empty()) return false;
  for (const auto& row : rows)
    if (!row.equal) return false;
  return true;
}

Report::Report(std::string command, std::string command_line)
    : command_(std::move(command)), command_line_(std::move(command_line)) {}

void Report::set_verdict(int exit_code, std::string summary) {
  exit_code_ = exit_code;
  summary_ = std::move(summary);
}

void Report::add_fact(const std::string& label, const std::string& value) { facts_.emplace_back(label, value); }

void Report::add_pass(PassSection pass) { passes_.push_back(std::move(pass)); }

void Report::add_pass_with_graphs(PassSection pass, const ir::Graph& before, const ir::Graph& after) {
  pass.diff = diff_graphs(before, after);
  passes_.push_back(std::move(pass));
}

void Report::add_memory_timeline(MemoryTimeline timeline) { timelines_.push_back(std::move(timeline)); }

void Report::add_claims(const std::vector<ClaimRow>& rows) {
  claims_checked_ = true;
  claims_.insert(claims_.end(), rows.begin(), rows.end());
}

void Report::add_claims(const sym::ProofReport& proofs) {
  std::vector<ClaimRow> rows;
  for (const sym::ClaimResult& r : proofs.results) {
    ClaimRow row;
    row.kind = r.claim.kind;
    row.pass = r.claim.pass;
    row.subject = r.claim.subject;
    row.condition = (r.claim.indices.empty() ? "" : r.claim.quantifier_text() + " ") + r.claim.condition.to_string();
    row.verdict = sym::to_string(r.verdict);
    row.seconds = r.seconds;
    std::string detail;
    for (const auto& [name, value] : r.counterexample) detail += (detail.empty() ? "counterexample " : ", ") + name + "=" + std::to_string(value);
    if (!r.reason.empty()) detail += (detail.empty() ? "" : "; ") + r.reason;
    row.detail = detail;
    rows.push_back(std::move(row));
  }
  add_claims(rows);
}

void Report::add_step_table(StepTable table) { steps_.push_back(std::move(table)); }

void Report::set_fuzz(FuzzSummary fuzz) { fuzz_ = std::move(fuzz); }

void Report::add_table(Table table) { tables_.push_back(std::move(table)); }

std::string render_diff(const GraphDiff& diff) {
  std::string html = "<p class=\"counts\"><span>nodes " + std::to_string(diff.nodes_before) + " &rarr; " +
                     std::to_string(diff.nodes_after) + "</span><span class=\"added\">added " +
                     std::to_string(diff.count(Change::Added)) + "</span><span class=\"removed\">removed " +
                     std::to_string(diff.count(Change::Removed)) + "</span><span class=\"rewired\">rewired " +
                     std::to_string(diff.count(Change::Rewired)) + "</span><span class=\"retagged\">retagged " +
                     std::to_string(diff.count(Change::Retagged)) + "</span><span>kept " +
                     std::to_string(diff.count(Change::Kept)) + "</span></p>";
  for (const std::string& change : diff.interface_changes) html += "<div class=\"mono\">" + escape(change) + "</div>";
  // Regions in first-seen order: module FQN, then phase.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const NodeChange*>> by_region;
  for (const NodeChange& node : diff.nodes) {
    const std::string region = (node.region.empty() ? "(top level)" : node.region) + " · " + node.phase;
    if (!by_region.count(region)) order.push_back(region);
    by_region[region].push_back(&node);
  }
  for (const std::string& region : order) {
    const auto& nodes = by_region[region];
    size_t counts[5] = {0, 0, 0, 0, 0};
    for (const NodeChange* n : nodes) ++counts[static_cast<int>(n->change)];
    const bool changed = counts[1] + counts[2] + counts[3] + counts[4] > 0;
    html += std::string("<details class=\"region\"") + (changed ? " open" : "") + "><summary class=\"mono\">" +
            escape(region) + ": " + std::to_string(nodes.size()) + " nodes";
    if (changed)
      html += " (+" + std::to_string(counts[1]) + " -" + std::to_string(counts[2]) + " ~" + std::to_string(counts[3]) +
              (counts[4] ? " retagged " + std::to_string(counts[4]) : "") + ")";
    html += "</summary>";
    if (!changed) {
      html += "<p class=\"none\">unchanged</p></details>";
      continue;
    }
    html += "<table><tr><th>change</th><th>node</th><th>op</th><th>operands before</th><th>operands after</th></tr>";
    for (const NodeChange* n : nodes) {
      if (n->change == Change::Kept) continue;
      html += "<tr class=\"" + std::string(to_string(n->change)) + "\"><td>" + to_string(n->change) +
              "</td><td class=\"mono\">" + escape(n->name.empty() ? n->key : "%" + n->name) + "</td><td class=\"mono\">" +
              escape(n->op) + "</td><td class=\"mono\">" +
              (n->change == Change::Added ? "" : escape(operands_text(n->operands_before))) + "</td><td class=\"mono\">" +
              (n->change == Change::Removed ? "" : escape(operands_text(n->operands_after))) + "</td></tr>";
    }
    html += "</table></details>";
  }
  return html;
}

std::string Report::html() const {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>passcheck " + escape(command_) +
                  " report</title><style>" + kStyle + "</style></head><body>\n";
  h += "<h1>passcheck " + escape(command_) + "</h1>\n";

  h += "<section id=\"verdict\"><h2>Verdict</h2>" + render_verdict(exit_code_, summary_);
  h += "<p>command line: <code id=\"command-line\">" + escape(command_line_) + "</code></p>";
  if (!facts_.empty()) {
    h += "<table id=\"facts\">";
    for (const auto& [label, value] : facts_)
      h += "<tr><th>" + escape(label) + "</th><td class=\"mono\">" + escape(value) + "</td></tr>";
    h += "</table>";
  }
  h += "</section>\n";

  if (!tables_.empty()) {
    h += "<section id=\"results\"><h2>Results</h2>";
    for (const Table& t : tables_) {
      h += "<h3>" + escape(t.title) + "</h3><table><tr>";
      for (const std::string& cell : t.header) h += "<th>" + escape(cell) + "</th>";
      h += "</tr>";
      for (const auto& row : t.rows) {
        h += "<tr>";
        for (const std::string& cell : row) h += "<td>" + escape(cell) + "</td>";
        h += "</tr>";
      }
      h += "</table>";
    }
    h += "</section>\n";
  }

  if (fuzz_) {
    const FuzzSummary& f = *fuzz_;
    h += "<section id=\"fuzz\"><h2>Fuzz campaign</h2><p>pipeline <code>" + escape(f.pipeline) + "</code></p>";
    h += "<table><tr><th>cases run</th><th>failures</th><th>violations</th><th>crashes</th><th>timeouts</th>"
         "<th>repro files</th><th>time</th></tr><tr><td>" +
         std::to_string(f.cases_run) + "</td><td>" + std::to_string(f.violations + f.crashes + f.timeouts) + "</td><td>" +
         std::to_string(f.violations) + "</td><td>" + std::to_string(f.crashes) + "</td><td>" + std::to_string(f.timeouts) +
         "</td><td>" + std::to_string(f.repro_files) + "</td><td>" + seconds_text(f.seconds) + "</td></tr></table>";
    if (f.failures.empty()) {
      h += "<p class=\"none\">no failures</p>";
    } else {
      h += "<table id=\"fuzz-failures\"><tr><th>case</th><th>seed</th><th>kind</th><th>detail</th><th>repro file</th>"
           "<th>replay</th><th>minimized</th></tr>";
      for (const FuzzFailure& x : f.failures)
        h += "<tr><td>" + std::to_string(x.index) + "</td><td>" + std::to_string(x.seed) + "</td><td>" + escape(x.kind) +
             "</td><td>" + escape(x.detail) + "</td><td class=\"mono\">" + escape(x.repro.empty() ? "(none)" : x.repro) +
             "</td><td><code>" + escape(x.replay_command) + "</code></td><td>" + escape(x.minimized) + "</td></tr>";
      h += "</table>";
    }
    h += "</section>\n";
  }

  h += "<section id=\"passes\"><h2>Passes and graph diffs</h2>";
  if (passes_.empty()) h += "<p class=\"none\">no pass ran in this run</p>";
  for (size_t i = 0; i < passes_.size(); ++i) {
    const PassSection& p = passes_[i];
    h += "<details class=\"pass\"" + std::string(p.changed ? " open" : "") + "><summary><code>" + escape(p.pass) +
         "</code>: " + (p.changed ? "changed" : "unchanged") + ", nodes " + std::to_string(p.nodes_before) + " &rarr; " +
         std::to_string(p.nodes_after) + ", " + seconds_text(p.seconds) + "</summary>";
    if (!p.details.empty()) h += "<p class=\"mono\">" + escape(join(p.details, ", ")) + "</p>";
    h += p.diff ? render_diff(*p.diff) : "<p class=\"none\">graphs not kept: node counts only</p>";
    h += "</details>";
  }
  h += "</section>\n";

  h += "<section id=\"memory\"><h2>Memory timeline</h2>";
  if (timelines_.empty()) h += "<p class=\"none\">no memory timeline for this run</p>";
  for (const MemoryTimeline& t : timelines_) {
    ChartOptions chart;
    chart.x_label = t.x_label;
    chart.points_name = t.points_name;
    chart.y_label = t.y_label;
    h += "<h3>" + escape(t.title) + "</h3>" + svg_line_chart(t.series, chart);
    for (const std::string& note : t.notes) h += "<p>" + escape(note) + "</p>";
  }
  h += "</section>\n";

  h += "<section id=\"claims\"><h2>Z3 claims</h2>";
  if (claims_.empty()) {
    h += std::string("<p class=\"none\">") + (claims_checked_ ? "the graphs record no claims" : "no claims were checked in this run") + "</p>";
  } else {
    size_t proved = 0;
    double total = 0;
    for (const ClaimRow& c : claims_) {
      proved += c.verdict == "proved";
      total += c.seconds;
    }
    h += "<p id=\"claims-summary\">" + std::to_string(claims_.size()) + " claims: " + std::to_string(proved) + " proved, " +
         std::to_string(claims_.size() - proved) + " not proved, " + seconds_text(total) + "</p>";
    h += "<table><tr><th>kind</th><th>pass</th><th>subject</th><th>claim</th><th>verdict</th><th>time</th><th>detail</th></tr>";
    for (const ClaimRow& c : claims_)
      h += "<tr><td>" + escape(c.kind) + "</td><td>" + escape(c.pass) + "</td><td class=\"mono\">" + escape(c.subject) +
           "</td><td class=\"mono\">" + escape(c.condition) + "</td><td class=\"" +
           (c.verdict == "proved" ? "equal" : "differs") + "\">" + escape(c.verdict) + "</td><td>" +
           seconds_text(c.seconds) + "</td><td class=\"mono\">" + escape(c.detail) + "</td></tr>";
    h += "</table>";
  }
  h += "</section>\n";

  h += "<section id=\"steps\"><h2>Comparisons</h2>";
  if (steps_.empty()) h += "<p class=\"none\">nothing was compared in this run</p>";
  for (const StepTable& s : steps_) {
    size_t equal = 0;
    for (const auto& row : s.rows) equal += row.equal;
    h += "<details class=\"step\"" + std::string(s.equal() ? "" : " open") + "><summary>" + escape(s.title) + ": " +
         std::to_string(equal) + " of " + std::to_string(s.rows.size()) + " values bitwise equal" +
         (s.problems.empty() ? "" : ", " + std::to_string(s.problems.size()) + " problems") + "</summary>";
    for (const std::string& note : s.notes) h += "<p>" + escape(note) + "</p>";
    for (const std::string& problem : s.problems) h += "<p class=\"differs\">" + escape(problem) + "</p>";
    h += "<table><tr><th>value</th><th>dtype</th><th>shape</th><th>verdict</th><th>max ULP</th><th>first difference</th></tr>";
    for (const auto& row : s.rows) h += render_comparison_row(row);
    h += "</table></details>";
  }
  h += "</section>\n</body></html>\n";
  return h;
}

void write_html(const std::string& path, const Report& report) {
  io::write_file_atomically(path, report.html(), "report file");
}

}  // namespace passcheck::report
