// Text pass cases (see text_cases.h): the case-file parser and the runner of one case.
#include "workflows/graph_files/text_cases.h"

#include "framework/io/files.h"

#include "framework/check/pipeline.h"
#include "workflows/graph_files/graph_tools.h"
#include "framework/ir/module.h"
#include "framework/ir/text.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace passcheck::graph_files {

namespace fs = std::filesystem;

namespace {

const char* const kSeparator = "# -----";


std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  size_t b = s.find_first_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b);
}

}  // namespace

std::vector<TextCase> parse_case_file(const std::string& path, std::vector<std::string>& errors) {
  std::vector<std::string> lines = split_lines(read_text(path));
  std::vector<TextCase> cases;
  size_t i = 0;
  while (i < lines.size()) {
    size_t end = i;
    while (end < lines.size() && trim(lines[end]) != kSeparator) ++end;
    // Lines [i, end) form one block: a case when it names one, a file header otherwise.
    TextCase c;
    c.file = path;
    enum { kHead, kInput, kExpected } section = kHead;
    std::string input, expected;
    bool has_graph_text = false;
    for (size_t k = i; k < end; ++k) {
      const std::string& raw = lines[k];
      const std::string line = trim(raw);
      const int lineno = static_cast<int>(k) + 1;
      auto where = path + ":" + std::to_string(lineno) + ": ";
      if (starts_with(line, "# CASE:")) {
        c.name = trim(line.substr(7));
        c.line = lineno;
      } else if (starts_with(line, "# RUN:")) {
        c.pipeline = trim(line.substr(6));
        section = kInput;
      } else if (starts_with(line, "# EXPECT:")) {
        const std::string rest = trim(line.substr(9));
        if (rest == "unchanged") {
          c.expect_unchanged = true;
        } else if (starts_with(rest, "fails ")) {
          c.expect_failure = trim(rest.substr(6));
        } else if (!rest.empty()) {
          errors.push_back(where + "'# EXPECT:' takes nothing, 'unchanged' or 'fails <message>', got '" + rest + "'");
        }
        section = kExpected;
        c.expected_line = lineno + 1;
        c.expected_end = lineno + 1;
      } else if (starts_with(line, "# STATS:")) {
        std::istringstream words(line.substr(8));
        for (std::string w; words >> w;) {
          size_t eq = w.find('=');
          if (eq == std::string::npos) {
            errors.push_back(where + "'# STATS:' expects name=value, got '" + w + "'");
            continue;
          }
          try {
            c.stats[w.substr(0, eq)] = std::stoll(w.substr(eq + 1));
          } catch (const std::exception&) {
            errors.push_back(where + "'# STATS:' value of '" + w.substr(0, eq) + "' is not an integer");
          }
        }
      } else if (starts_with(line, "# NORUN:")) {
        c.no_run_reason = trim(line.substr(8));
      } else if (section == kExpected) {
        if (starts_with(line, "#")) {
          errors.push_back(where + "comment inside the expected text (put it before '# EXPECT:')");
          continue;
        }
        expected += raw + "\n";
        if (!line.empty()) c.expected_end = lineno + 1;
      } else if (starts_with(line, "#")) {
        if (section == kInput && !line.empty() && !has_graph_text) c.intent.push_back(trim(line.substr(1)));
      } else {
        if (!line.empty()) has_graph_text = true;
        if (section == kHead && !line.empty()) errors.push_back(where + "graph text before '# RUN:'");
        // Pad so the parser's line numbers are the file's.
        if (input.empty()) input = std::string(k, '\n');
        input += raw + "\n";
      }
    }
    const bool is_case = !c.name.empty() || !c.pipeline.empty() || has_graph_text;
    if (is_case) {
      const std::string where = path + ":" + std::to_string(c.line ? c.line : static_cast<int>(i) + 1) + ": ";
      if (c.name.empty()) errors.push_back(where + "case without '# CASE: name'");
      if (c.pipeline.empty()) errors.push_back(where + "case '" + c.name + "' without '# RUN: pipeline'");
      if (c.intent.empty()) errors.push_back(where + "case '" + c.name + "' without an intent comment after '# RUN:'");
      if (!has_graph_text) errors.push_back(where + "case '" + c.name + "' without an input graph");
      if (c.expected_line == 0) errors.push_back(where + "case '" + c.name + "' without '# EXPECT:'");
      if (c.expect_unchanged && !trim(expected).empty())
        errors.push_back(where + "case '" + c.name + "' has both 'EXPECT: unchanged' and expected text");
      if (!c.expect_failure.empty() && !trim(expected).empty())
        errors.push_back(where + "case '" + c.name + "' expects a failure and an output");
      if (!c.expect_unchanged && c.expect_failure.empty() && trim(expected).empty() && c.expected_line)
        errors.push_back(where + "case '" + c.name + "' has an empty expected text (use '# EXPECT: unchanged')");
      // The expected text is compared exactly: without the blank lines that end it.
      while (expected.size() >= 2 && expected.compare(expected.size() - 2, 2, "\n\n") == 0) expected.pop_back();
      c.input = input;
      c.expected = expected;
      cases.push_back(std::move(c));
    }
    i = end + 1;
  }
  return cases;
}


std::string TextCase::where() const {
  return file + ":" + std::to_string(line) + ": case '" + name + "' (" + pipeline + ")";
}

std::vector<std::string> case_files(const std::string& directory) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(directory))
    if (entry.path().extension() == ".graph") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> case_passes(const TextCase& c, const check::PassRegistry& registry) {
  std::vector<std::string> names;
  try {
    const check::Pipeline pipeline = check::Pipeline::parse(c.pipeline, registry);
    for (const check::PassInvocation& p : pipeline.passes()) names.push_back(p.name);
  } catch (const std::exception&) {
    names.clear();
  }
  return names;
}

TextCaseOutcome run_text_case(const TextCase& c, const check::PassRegistry& registry,
                              const std::map<std::string, std::string>& replace) {
  TextCaseOutcome out;
  const std::string where = c.where();
  auto problem = [&](const std::string& text) { out.problems.push_back(where + ": " + text); };
  try {
    std::unique_ptr<ir::Graph> input = ir::parse_graph(c.input, c.file);
    const std::string input_text = input->print();
    std::unique_ptr<ir::Graph> graph = input->clone();
    std::vector<check::PassInvocation> invocations = check::Pipeline::parse(c.pipeline, registry).passes();
    for (check::PassInvocation& p : invocations) {
      auto it = replace.find(p.name);
      if (it != replace.end()) p.name = it->second;
    }
    // A pipeline with a partitioner turns the graph into a module and prints module text.
    const check::Pipeline pipeline(invocations, registry);
    std::optional<ir::Module> module;
    if (pipeline.has_module_pass()) module = ir::Module::of_graph(input->clone());
    auto run_pipeline = [&] { return module ? pipeline.run(*module) : pipeline.run(*graph); };
    auto print_subject = [&] { return module ? module->print() : graph->print(); };

    std::vector<check::PassRecord> records;
    try {
      records = run_pipeline();
    } catch (const check::PassFailure& failure) {
      if (c.expect_failure.empty())
        problem(failure.what());
      else if (std::string(failure.what()).find(c.expect_failure) == std::string::npos)
        problem("expected a failure containing '" + c.expect_failure + "', got: " + failure.what());
      return out;
    }
    if (!c.expect_failure.empty()) {
      problem("expected the pipeline to fail with '" + c.expect_failure + "'");
      return out;
    }
    out.actual = print_subject();
    const std::string& expected = c.expect_unchanged ? input_text : c.expected;
    if (out.actual != expected) {
      out.output_differs = true;
      problem("the output differs from the " +
              (c.expect_unchanged ? std::string("input (a must-not-change case)")
                                  : "expected text at " + c.file + ":" + std::to_string(c.expected_line)) +
              "\n" + unified_diff(expected, out.actual));
    }

    if (c.expect_unchanged) {
      for (const check::PassRecord& r : records)
        if (r.changed) problem(r.pass + " reported a change");
    } else {
      bool any = false;
      for (const check::PassRecord& r : records) any |= r.changed;
      if (!any)
        problem("no pass reported a change (a rewrite case whose output equals its input should say "
                "'# EXPECT: unchanged')");
      if (out.actual == input_text) problem("the expected text is the input; say '# EXPECT: unchanged'");
    }
    for (const auto& [stat, value] : c.stats) {
      auto it = records.back().stats.find(stat);
      if (it == records.back().stats.end())
        problem(records.back().pass + " reports no stat '" + stat + "'");
      else if (it->second != value)
        problem("stat " + stat + " of " + records.back().pass + " is " + std::to_string(it->second) + ", expected " +
                std::to_string(value));
    }

    bool preserves = true, idempotent = true;
    for (const check::PassInvocation& p : invocations) {
      const check::PassInfo& info = registry.get(p.name).info;
      preserves &= info.numerics != check::NumericsEffect::Changes;
      idempotent &= info.idempotent;
    }
    if (idempotent) {
      for (const check::PassRecord& r : run_pipeline())
        if (r.changed) problem(r.pass + " changed its own output (not idempotent)");
      if (print_subject() != out.actual) problem("a second run changed the graph");
    }
    if (preserves && c.no_run_reason.empty()) {
      // Translation validation: the output computes exactly what the input does.
      EquivReport report = module ? compare_graph_with_module(*input, ir::parse_module(out.actual, c.file + " (output)"))
                                  : compare_graphs(*input, *ir::parse_graph(out.actual, c.file + " (output)"));
      if (!report.equal()) problem("input and output are not equivalent bit for bit\n" + report.format());
    }
  } catch (const std::exception& e) {
    problem(std::string("failed: ") + e.what());
  }
  return out;
}

// ' ' both, '-' expected only, '+' actual only; runs of more than three common lines are elided.
std::string unified_diff(const std::string& expected, const std::string& actual) {
  std::vector<std::string> a = split_lines(expected), b = split_lines(actual);
  std::vector<std::vector<int>> lcs(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (size_t i = a.size(); i-- > 0;)
    for (size_t j = b.size(); j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::vector<std::string> out;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      out.push_back("  " + a[i++]);
      ++j;
    } else if (i < a.size() && (j == b.size() || lcs[i + 1][j] >= lcs[i][j + 1])) {
      out.push_back("- " + a[i++]);
    } else {
      out.push_back("+ " + b[j++]);
    }
  }
  std::vector<bool> keep(out.size(), false);
  for (size_t k = 0; k < out.size(); ++k)
    if (out[k][0] != ' ')
      for (size_t d = (k >= 3 ? k - 3 : 0); d < std::min(out.size(), k + 4); ++d) keep[d] = true;
  std::string text = "--- expected\n+++ actual\n";
  for (size_t k = 0; k < out.size(); ++k) {
    if (keep[k])
      text += out[k] + "\n";
    else if (k == 0 || keep[k - 1])
      text += "  ...\n";
  }
  return text;
}

void update_expected(const std::string& file, const std::string& name, const std::string& actual) {
  std::vector<std::string> errors;
  for (const TextCase& c : parse_case_file(file, errors)) {
    if (c.name != name) continue;
    std::vector<std::string> lines = split_lines(read_text(file));
    std::vector<std::string> replaced(lines.begin(), lines.begin() + (c.expected_line - 1));
    for (const std::string& l : split_lines(actual)) replaced.push_back(l);
    replaced.insert(replaced.end(), lines.begin() + std::min<size_t>(lines.size(), c.expected_end - 1), lines.end());
    std::string text;
    for (const std::string& l : replaced) text += l + "\n";
    io::write_file_atomically(file, text, "text case file");
    return;
  }
}

}  // namespace passcheck::graph_files
