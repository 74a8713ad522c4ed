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
#include "workflows/graph_files/graph_tools.h"
#include "workflows/graph_files/text_cases.h"
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

using graph_files::TextCase;

std::vector<std::string> case_files() { return graph_files::case_files(testing::source_path("suites/passes_text")); }

struct Catalogue {
  std::vector<TextCase> cases;
  std::vector<std::string> errors;
};

const Catalogue& catalogue() {
  static const Catalogue all = [] {
    Catalogue c;
    for (const std::string& file : case_files())
      for (TextCase& t : graph_files::parse_case_file(file, c.errors)) c.cases.push_back(std::move(t));
    return c;
  }();
  return all;
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
  SCOPED_TRACE(c.where());
  const graph_files::TextCaseOutcome outcome = graph_files::run_text_case(c, check::PassRegistry::global());
  const bool update = std::getenv("PASSCHECK_UPDATE_TEXT_TESTS") != nullptr;
  if (outcome.output_differs && update && !c.expect_unchanged) {
    graph_files::update_expected(c.file, c.name, outcome.actual);
    std::cerr << "updated the expected text of " << c.where() << ": read the diff before committing\n";
  }
  for (const std::string& problem : outcome.problems) ADD_FAILURE() << problem;
}

// The runner the gate shares can fail: a remat mutant put in place of the real pass
// breaks the cases written for that pass.
TEST(PassesTextRunner, FailsACaseWhenAMutantReplacesItsPass) {
  int failed = 0, run = 0;
  for (const TextCase& c : catalogue().cases) {
    const auto passes = graph_files::case_passes(c, mutants::registry_with_mutants());
    if (std::find(passes.begin(), passes.end(), "remat") == passes.end()) continue;
    ++run;
    if (!graph_files::run_text_case(c, mutants::registry_with_mutants(), {{"remat", "mutant-remat-fresh-rng"}}).problems.empty())
      ++failed;
  }
  EXPECT_GT(run, 0);
  EXPECT_GT(failed, 0) << "no remat case failed with mutant-remat-fresh-rng in place of remat";
}

// A case written from the torchtitan comparison passes with the real pass and fails with
// the mutant that restores the bug it was written for.
void expect_case_tells_mutant(const std::string& case_name, const std::string& pass, const std::string& mutant) {
  for (const TextCase& c : catalogue().cases) {
    if (c.name != case_name) continue;
    EXPECT_TRUE(graph_files::run_text_case(c, mutants::registry_with_mutants()).problems.empty());
    EXPECT_FALSE(graph_files::run_text_case(c, mutants::registry_with_mutants(), {{pass, mutant}}).problems.empty())
        << "case " << case_name << " passes with " << mutant << " in place of " << pass;
    return;
  }
  ADD_FAILURE() << "no text case " << case_name;
}

TEST(PassesTextRunner, FailsTheMinCutCaseWhenCpuAttentionIsRecomputed) {
  expect_case_tells_mutant("min-cut-saves-cpu-flash-attention", "partition-min-cut",
                           "mutant-partition-min-cut-recomputes-cpu-attention");
}

TEST(PassesTextRunner, FailsTheGroupedMmCaseWhenItIsCaptured) {
  expect_case_tells_mutant("cudagraph-leaves-float32-grouped-mm-eager", "cudagraph",
                           "mutant-cudagraph-captures-grouped-mm-fallback");
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
  EXPECT_TRUE(graph_files::compare_graphs(*input, *real).equal());
  graph_files::EquivReport report = graph_files::compare_graphs(*input, *mutant);
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
