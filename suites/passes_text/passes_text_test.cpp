// The text pass-test driver (docs/text-pass-tests.md): every `*.graph` case file in
// suites/passes_text holds cases of graph text in, pipeline, graph text out. Each case
// becomes one test: the pipeline runs behind the gate (verifier after every pass, the
// changed claim checked against the hash), the printed result must equal the case's
// expected text exactly (or its input, for a must-not-change case, where every pass must
// also report no change), an idempotent pipeline must change nothing on a second run, and
// when every pass preserves numerics the input and output graphs are run through the
// `passcheck equiv` check (same inputs and generator state, every output and every input
// after the run compared bit for bit). PASSCHECK_UPDATE_TEXT_TESTS=1 rewrites the
// expected sections that differ with what the passes print now (never a must-not-change
// case), for a reviewer to read in the diff.
#include "framework/check/pipeline.h"
#include "framework/cli/graph_tools.h"
#include "framework/ir/text.h"
#include "suites/mutants/mutants.h"
#include "suites/support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace passcheck {
namespace {

namespace fs = std::filesystem;

const char* const kSeparator = "# -----";

struct TextCase {
  std::string file;      // path of the case file
  std::string name;      // "# CASE: name"
  int line = 0;          // line of "# CASE:"
  std::string pipeline;  // "# RUN: pipeline"
  std::vector<std::string> intent;
  std::string input;     // padded with blank lines so parse errors name file lines
  bool expect_unchanged = false;
  std::string expect_failure;  // "# EXPECT: fails <text>": the gate must fail with it
  std::string expected;  // exact printed text
  int expected_line = 0;           // first line of the expected text
  int expected_end = 0;            // one past its last line
  std::map<std::string, int64_t> stats;  // "# STATS: k=v ..."
  std::string no_run_reason;       // "# NORUN: reason": no equiv check
};

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

// Splits one case file into cases; a malformed case is reported through `errors`.
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

std::vector<std::string> case_files() {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(testing::source_path("suites/passes_text")))
    if (entry.path().extension() == ".graph") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

struct Catalogue {
  std::vector<TextCase> cases;
  std::vector<std::string> errors;
};

const Catalogue& catalogue() {
  static const Catalogue all = [] {
    Catalogue c;
    for (const std::string& file : case_files())
      for (TextCase& t : parse_case_file(file, c.errors)) c.cases.push_back(std::move(t));
    return c;
  }();
  return all;
}

// A line diff (longest common subsequence) in unified style: ' ' both, '-' expected
// only, '+' actual only; runs of more than three common lines are elided.
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

// Replaces the expected section of case `name` in `file` with `actual`.
void update_expected(const std::string& file, const std::string& name, const std::string& actual) {
  std::vector<std::string> errors;
  for (const TextCase& c : parse_case_file(file, errors)) {
    if (c.name != name) continue;
    std::vector<std::string> lines = split_lines(read_text(file));
    std::vector<std::string> replaced(lines.begin(), lines.begin() + (c.expected_line - 1));
    for (const std::string& l : split_lines(actual)) replaced.push_back(l);
    replaced.insert(replaced.end(), lines.begin() + std::min<size_t>(lines.size(), c.expected_end - 1), lines.end());
    std::ofstream out(file, std::ios::binary);
    for (const std::string& l : replaced) out << l << "\n";
    return;
  }
}

bool pipeline_preserves_numerics_and_is_idempotent(const std::string& pipeline, bool& idempotent) {
  bool preserves = true;
  idempotent = true;
  const check::Pipeline parsed = check::Pipeline::parse(pipeline);
  for (const check::PassInvocation& p : parsed.passes()) {
    const check::PassInfo& info = check::PassRegistry::global().get(p.name).info;
    preserves &= info.numerics != check::NumericsEffect::Changes;
    idempotent &= info.idempotent;
  }
  return preserves;
}

class TextCaseTest : public ::testing::TestWithParam<size_t> {};

TEST(PassesTextFiles, EveryCaseFileIsWellFormed) {
  const Catalogue& all = catalogue();
  for (const std::string& e : all.errors) ADD_FAILURE() << e;
  EXPECT_FALSE(all.cases.empty()) << "no cases found under suites/passes_text";
  std::map<std::string, std::string> seen;
  for (const TextCase& c : all.cases) {
    auto [it, fresh] = seen.emplace(c.name, c.file + ":" + std::to_string(c.line));
    EXPECT_TRUE(fresh) << c.file << ":" << c.line << ": case name '" << c.name << "' already used at " << it->second;
  }
}

TEST_P(TextCaseTest, PipelinePrintsTheExpectedGraph) {
  const TextCase& c = catalogue().cases.at(GetParam());
  const std::string where = c.file + ":" + std::to_string(c.line) + ": case '" + c.name + "' (" + c.pipeline + ")";
  SCOPED_TRACE(where);
  std::unique_ptr<ir::Graph> input = ir::parse_graph(c.input, c.file);
  const std::string input_text = input->print();
  std::unique_ptr<ir::Graph> graph = input->clone();
  // A pipeline with a partitioner turns the graph into a module and prints module text.
  const check::Pipeline pipeline = check::Pipeline::parse(c.pipeline);
  std::optional<ir::Module> module;
  if (pipeline.has_module_pass()) module = ir::Module::of_graph(input->clone());
  auto run_pipeline = [&] { return module ? pipeline.run(*module) : pipeline.run(*graph); };
  auto print_subject = [&] { return module ? module->print() : graph->print(); };

  std::vector<check::PassRecord> records;
  try {
    records = run_pipeline();
  } catch (const check::PassFailure& failure) {
    if (c.expect_failure.empty()) FAIL() << where << ": " << failure.what();
    EXPECT_NE(std::string(failure.what()).find(c.expect_failure), std::string::npos)
        << where << ": expected a failure containing '" << c.expect_failure << "', got: " << failure.what();
    return;
  }
  if (!c.expect_failure.empty()) FAIL() << where << ": expected the pipeline to fail with '" << c.expect_failure << "'";
  const std::string actual = print_subject();
  const std::string& expected = c.expect_unchanged ? input_text : c.expected;
  if (actual != expected) {
    const bool update = std::getenv("PASSCHECK_UPDATE_TEXT_TESTS") != nullptr;
    if (update && !c.expect_unchanged) {
      update_expected(c.file, c.name, actual);
      std::cerr << "updated the expected text of " << where << ": read the diff before committing\n";
    }
    ADD_FAILURE() << where << ": the output differs from the "
                  << (c.expect_unchanged ? "input (a must-not-change case)" : "expected text at " + c.file + ":" +
                                                                                   std::to_string(c.expected_line))
                  << (update && !c.expect_unchanged ? " (updated)" : "") << "\n"
                  << unified_diff(expected, actual);
  }

  if (c.expect_unchanged) {
    for (const check::PassRecord& r : records) EXPECT_FALSE(r.changed) << where << ": " << r.pass << " reported a change";
  } else {
    bool any = false;
    for (const check::PassRecord& r : records) any |= r.changed;
    EXPECT_TRUE(any) << where << ": no pass reported a change (a rewrite case whose output equals its input "
                     << "should say '# EXPECT: unchanged')";
    EXPECT_NE(actual, input_text) << where << ": the expected text is the input; say '# EXPECT: unchanged'";
  }
  for (const auto& [stat, value] : c.stats) {
    auto it = records.back().stats.find(stat);
    if (it == records.back().stats.end())
      ADD_FAILURE() << where << ": " << records.back().pass << " reports no stat '" << stat << "'";
    else
      EXPECT_EQ(it->second, value) << where << ": stat " << stat << " of " << records.back().pass;
  }

  bool idempotent = true;
  const bool preserves = pipeline_preserves_numerics_and_is_idempotent(c.pipeline, idempotent);
  if (idempotent) {
    std::vector<check::PassRecord> again = run_pipeline();
    for (const check::PassRecord& r : again)
      EXPECT_FALSE(r.changed) << where << ": " << r.pass << " changed its own output (not idempotent)";
    EXPECT_EQ(print_subject(), actual) << where << ": a second run changed the graph";
  }
  if (preserves && c.no_run_reason.empty()) {
    // Translation validation: the output computes exactly what the input does.
    cli::EquivReport report =
        module ? cli::compare_graph_with_module(*input, ir::parse_module(actual, c.file + " (output)"))
               : cli::compare_graphs(*input, *ir::parse_graph(actual, c.file + " (output)"));
    EXPECT_TRUE(report.equal()) << where << ": input and output are not equivalent bit for bit\n" << report.format();
  }
}

const TextCase& case_named(const std::string& name) {
  for (const TextCase& c : catalogue().cases)
    if (c.name == name) return c;
  throw std::invalid_argument("no text case named '" + name + "'");
}

// The equivalence check the cases rely on can fail: a remat that recomputes the dropout
// with fresh random numbers (a known-buggy variant) passes the gate, and only comparing
// what the graphs compute tells it apart from the real pass.
TEST(PassesTextEquiv, TellsARematMutantThatRedrawsTheDropoutMaskFromTheRealPass) {
  const TextCase& c = case_named("remat-replays-the-generator-state-for-a-recomputed-dropout");
  std::unique_ptr<ir::Graph> input = ir::parse_graph(c.input, c.file);
  std::unique_ptr<ir::Graph> real = input->clone(), mutant = input->clone();
  check::Pipeline::parse("remat{rng=replay}").run(*real);
  check::Pipeline::parse("mutant-remat-fresh-rng{rng=replay}", mutants::registry_with_mutants()).run(*mutant);
  EXPECT_TRUE(cli::compare_graphs(*input, *real).equal());
  cli::EquivReport report = cli::compare_graphs(*input, *mutant);
  EXPECT_FALSE(report.equal()) << report.format();
  EXPECT_NE(report.format().find("output 1 (%g / %g): DIFFER"), std::string::npos) << report.format();
}

std::string case_test_name(const ::testing::TestParamInfo<size_t>& info) {
  const TextCase& c = catalogue().cases.at(info.param);
  std::string name = fs::path(c.file).stem().string() + "_" + c.name;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

std::vector<size_t> case_indices() {
  std::vector<size_t> indices(catalogue().cases.size());
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  return indices;
}

INSTANTIATE_TEST_SUITE_P(Cases, TextCaseTest, ::testing::ValuesIn(case_indices()), case_test_name);

}  // namespace
}  // namespace passcheck
