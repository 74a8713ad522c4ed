// Repro files and the minimizer: the format round-trips, malformed files are rejected
// with the line at fault, replay reruns the recorded checks, and the minimizer shrinks a
// mutant's failure on a traced model to a small graph that still fails the same way.
// Through the binary: a timeout repro replays under its recorded limit, a broken graph
// is bad input (exit 2, file and line), capture and minimize refuse a directory as
// --out, capture's default --out never replaces a file, and minimize reports progress.
#include "workflows/campaign/campaign.h"
#include "workflows/campaign/repro_tools.h"
#include "framework/check/minimize.h"
#include "framework/check/repro.h"
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/ir/text.h"
#include "oracles/training_driver.h"
#include "suites/mutants/mutants.h"
#include "suites/mutants/test_passes.h"
#include "suites/support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace passcheck {
namespace {

using mutants::registry_with_mutants;

std::string traced(const std::string& model, models::SubjectOptions options = {}) {
  auto subject = models::make_subject(model, options);
  return oracles::trace_subject(*subject, subject->batch(0), false).graph().print();
}

check::Repro sample_repro() {
  check::Repro r;
  r.status = "failed";
  r.pipeline = "ac-regions,sac-tag{policy=default},mutant-remat-ignores-prefer-recompute{rng=replay}";
  r.registries = {"mutants"};
  r.seed = 42;
  r.int_high = 3;
  r.case_description = "debug model two_matmul";
  r.property = "remat-properties";
  r.messages = {"remat property: backward node `x` reads forward value %mm", "second message"};
  r.original = traced("two_matmul");
  return r;
}

const std::string kBadSeed =
    "#! passcheck-repro 1\n#! version: 0.1.0\n#! pipeline: dce\n#! seed: twelve\n# original\n";

TEST(ReproFile, RoundTripsEveryField) {
  check::Repro r = sample_repro();
  r.minimized = r.original;
  r.timeout_ms = 1500;
  r.sim_mesh = "dp=2,tp=2";
  std::string text = check::format_repro(r, "case.repro");
  EXPECT_NE(text.find("#! replay: passcheck repro case.repro"), std::string::npos) << text;
  check::Repro back = check::parse_repro(text, "case.repro");
  EXPECT_EQ(back.status, r.status);
  EXPECT_EQ(back.pipeline, r.pipeline);
  EXPECT_EQ(back.registries, r.registries);
  EXPECT_EQ(back.seed, r.seed);
  EXPECT_EQ(back.int_high, r.int_high);
  EXPECT_EQ(back.case_description, r.case_description);
  EXPECT_EQ(back.property, r.property);
  EXPECT_EQ(back.messages, r.messages);
  EXPECT_EQ(back.timeout_ms, r.timeout_ms);
  EXPECT_EQ(back.sim_mesh, r.sim_mesh);
  EXPECT_TRUE(back.is_sim_mesh_case());
  EXPECT_EQ(back.original, r.original);
  EXPECT_EQ(back.minimized, r.minimized);
  EXPECT_EQ(check::format_repro(back, "case.repro"), text);
}

TEST(ReproFile, WriteThenReadFromDisk) {
  std::string path = testing::make_temp_dir() + "/r.repro";
  check::write_repro(path, sample_repro());
  check::Repro back = check::read_repro(path);
  EXPECT_EQ(back.original, sample_repro().original);
  EXPECT_TRUE(back.minimized.empty());
}

void expect_error(const std::string& text, int line, const std::string& needle) {
  try {
    check::parse_repro(text, "bad.repro");
    ADD_FAILURE() << "accepted:\n" << text;
  } catch (const check::ReproError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("bad.repro:" + std::to_string(line) + ":", 0), 0u) << e.what();
  }
}

TEST(ReproFile, MalformedFilesNameTheLine) {
  expect_error("graph(arg %x : f32[2]):\n  return (%x)\n", 1, "not a passcheck repro file");
  expect_error(kBadSeed, 4, "seed must be an integer");
  expect_error("#! passcheck-repro 1\n#! pipeline: dce\n#! colour: blue\n", 3, "unknown key 'colour'");
  expect_error("#! passcheck-repro 1\n#! pipeline: dce\n#! seed: 1\n", 3, "missing the '# original' graph section");
  expect_error("#! passcheck-repro 1\n#! seed: 1\n# original\ngraph(arg %x : f32[2]):\n  return (%x)\n", 5,
               "missing '#! pipeline");
  expect_error("#! passcheck-repro 1\n#! status: weird\n", 2, "status must be");
  // A graph error is reported at its line in the file, not in the section.
  expect_error("#! passcheck-repro 1\n#! pipeline: dce\n#! seed: 1\n# original\ngraph(arg %x : f32[2]):\n"
               "  %y : f32[2] = aten::neg(%z)\n  return (%y)\n",
               6, "in the graph section");
}

TEST(ReproFile, ReadingAMissingFileIsAReproError) {
  EXPECT_THROW(check::read_repro("/nonexistent/x.repro"), check::ReproError);
}

TEST(ReproReplay, FailsWithTheMutantAndPassesWithTheRealPass) {
  check::Repro r = sample_repro();
  auto report = check::replay(r, registry_with_mutants());
  ASSERT_FALSE(report.violations.empty());
  // The generic memory-only property and the remat property both catch this mutant.
  bool remat_property = false;
  for (const auto& v : report.violations) remat_property |= check::property_of(v) == "remat-properties";
  EXPECT_TRUE(remat_property) << report.violations.front();
  r.pipeline = "ac-regions,sac-tag{policy=default},remat{rng=replay}";
  report = check::replay(r, registry_with_mutants());
  EXPECT_TRUE(report.violations.empty()) << report.violations.front();
}

TEST(Minimizer, SignatureIgnoresNamesNumbersAndQuotedNodes) {
  EXPECT_EQ(check::violation_signature("remat property: backward node `%a = aten::mm(%b)` reads"), "remat property");
  EXPECT_EQ(check::violation_signature("%mm_3 is recomputed more than once (second copy `x`)"),
            check::violation_signature("%t is recomputed more than once (second copy `y`)"));
  EXPECT_NE(check::violation_signature("failed after remat: x"), check::violation_signature("failed after dce: x"));
}

// Minimizes the mutant failure on `graph_text`; returns the result after checking it.
check::MinimizeResult shrink_mutant_failure(const std::string& graph_text) {
  const std::string pipeline = "ac-regions,sac-tag{policy=default},mutant-remat-ignores-prefer-recompute{rng=replay}";
  auto graph = ir::parse_graph(graph_text);
  auto original = check::check_case(*graph, pipeline, 0, 2, registry_with_mutants());
  EXPECT_FALSE(original.violations.empty());
  std::set<std::string> wanted;
  for (const auto& v : original.violations) wanted.insert(check::violation_signature(v));
  auto fails = [&](const ir::Graph& g) {
    try {
      exec::Executor(g).run(exec::make_inputs(g));
      for (const auto& v : check::check_case(g, pipeline, 0, 2, registry_with_mutants()).violations)
        if (wanted.count(check::violation_signature(v))) return true;
    } catch (const std::exception&) {
    }
    return false;
  };
  check::MinimizeResult m = check::minimize_graph(*graph, fails);
  EXPECT_TRUE(fails(*m.graph)) << m.graph->print();
  EXPECT_EQ(ir::parse_graph(m.graph->print())->print(), m.graph->print());
  EXPECT_EQ(m.nodes_before, graph->num_nodes());
  EXPECT_EQ(m.nodes_after, m.graph->num_nodes());
  return m;
}

TEST(Minimizer, ShrinksAMutantFailureOnTwoMatmul) {
  check::MinimizeResult m = shrink_mutant_failure(traced("two_matmul"));
  EXPECT_LT(m.nodes_after, m.nodes_before);
  EXPECT_LE(m.nodes_after, 6u) << m.graph->print();
}

TEST(Minimizer, ShrinksAMutantFailureOnLlama3) {
  check::MinimizeResult m = shrink_mutant_failure(traced("llama3", {0, c10::Device(c10::DeviceType::CPU), 1, 16}));
  EXPECT_LE(m.nodes_after * 10, m.nodes_before) << m.nodes_before << " -> " << m.nodes_after << "\n" << m.graph->print();
}

TEST(Minimizer, LeavesAGraphThatDoesNotFailUnchanged) {
  auto graph = ir::parse_graph(traced("two_matmul"));
  check::MinimizeResult m = check::minimize_graph(*graph, [](const ir::Graph&) { return false; });
  EXPECT_EQ(m.graph->print(), graph->print());
  EXPECT_EQ(m.candidates_accepted, 0);
}

using testing::run_command;
namespace fs = std::filesystem;

using testing::cli;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The only repro file a one-failure campaign left in `dir`.
std::string only_repro(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".repro") files.push_back(e.path().string());
  EXPECT_EQ(files.size(), 1u) << dir;
  return files.empty() ? "" : files.front();
}

// A crash repro of the crash-on-odd test pass on a small debug model.
std::string crash_repro() {
  std::string dir = testing::make_temp_dir();
  auto r = run_command(cli("fuzz --pass crash-on-odd --test-passes --models --cases 2 --max-failures 1 --seed 3 "
                           "--no-minimize --out " + dir));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  return only_repro(dir);
}

TEST(ReproCli, ATimeoutReproEndsUnderItsRecordedLimit) {
  std::string dir = testing::make_temp_dir();
  auto fuzz = run_command(cli("fuzz --pass hang --test-passes --cases 1 --timeout-ms 700 --out " + dir));
  ASSERT_EQ(fuzz.exit_code, 1) << fuzz.output;
  std::string file = only_repro(dir);
  check::Repro repro = check::read_repro(file);
  EXPECT_EQ(repro.status, "timeout");
  EXPECT_EQ(repro.timeout_ms, 700);
  auto replay = run_command(cli("repro " + file));
  EXPECT_EQ(replay.exit_code, 1) << replay.output;
  EXPECT_NE(replay.output.find("the failure is still there (timeout after 700 ms)"), std::string::npos) << replay.output;
  // A limit on the command line wins.
  auto given = run_command(cli("repro " + file + " --timeout-ms 300"));
  EXPECT_EQ(given.exit_code, 1) << given.output;
  EXPECT_NE(given.output.find("timeout after 300 ms"), std::string::npos) << given.output;
}

TEST(ReproCli, ReplayTimeoutFollowsTheFileUnlessGiven) {
  check::Repro r;
  r.status = "timeout";
  r.timeout_ms = 900;
  EXPECT_EQ(campaign::replay_timeout_ms(r, -1), 900);
  EXPECT_EQ(campaign::replay_timeout_ms(r, 0), 0);
  EXPECT_EQ(campaign::replay_timeout_ms(r, 50), 50);
  r.timeout_ms = 0;
  EXPECT_EQ(campaign::replay_timeout_ms(r, -1), campaign::kDefaultTimeoutMs);
  r.status = "crash";
  EXPECT_EQ(campaign::replay_timeout_ms(r, -1), 0);
}

// `edit` turns a line of the repro's graph into a broken one; repro and minimize both
// call that bad input (exit 2) naming the file and the line, never "still fails".
void expect_broken_graph_is_bad_input(const std::string& what, const std::string& pattern,
                                      const std::string& replacement, const std::string& needle) {
  SCOPED_TRACE(what);
  std::string source = crash_repro();
  ASSERT_FALSE(source.empty());
  std::string text = read_text(source);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(pattern))) << text;
  int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + m.position(0), '\n'));
  std::string edited = text.substr(0, static_cast<size_t>(m.position(0))) + m.format(replacement) +
                       text.substr(static_cast<size_t>(m.position(0) + m.length(0)));
  std::string dir = testing::make_temp_dir();
  std::string file = dir + "/edited.repro";
  testing::write_text(file, edited);
  std::string where = file + ":" + std::to_string(line) + ":";
  auto replay = run_command(cli("repro " + file));
  EXPECT_EQ(replay.exit_code, 2) << replay.output;
  EXPECT_NE(replay.output.find(where), std::string::npos) << where << "\n" << replay.output;
  EXPECT_NE(replay.output.find(needle), std::string::npos) << replay.output;
  auto min = run_command(cli("minimize " + file + " --seconds 5 --out " + dir + "/min.repro"));
  EXPECT_EQ(min.exit_code, 2) << min.output;
  EXPECT_NE(min.output.find(where), std::string::npos) << where << "\n" << min.output;
  EXPECT_FALSE(fs::exists(dir + "/min.repro"));
}

TEST(ReproCli, AHandEditedBrokenGraphIsBadInputNamingFileAndLine) {
  // An unknown operator.
  expect_broken_graph_is_bad_input("unknown operator", R"(aten::mm\()", "aten::no_such_op(", "unknown operator");
  // A declared shape the node does not produce.
  expect_broken_graph_is_bad_input("wrong shape", R"(%mm : f32\[4)", "%mm : f32[5", "the graph says");
  // A graph the verifier rejects: a forward node after the first backward node.
  expect_broken_graph_is_bad_input("verifier", R"(#\{phase=backward, (fqn="loss"))", "#{$1", "verifier");
}

TEST(ReproCli, CaptureAndMinimizeRefuseADirectoryAsOutAndLeaveNothingBehind) {
  std::string source = crash_repro();
  std::string dir = testing::make_temp_dir();
  std::string target = dir + "/out";
  fs::create_directory(target);
  auto capture = run_command(cli("capture --model mlp --pipeline dce --out " + target));
  EXPECT_EQ(capture.exit_code, 2) << capture.output;
  EXPECT_NE(capture.output.find("is a directory"), std::string::npos) << capture.output;
  auto min = run_command(cli("minimize " + source + " --seconds 5 --out " + target));
  EXPECT_EQ(min.exit_code, 2) << min.output;
  EXPECT_NE(min.output.find("is a directory"), std::string::npos) << min.output;
  // Neither a temporary file beside it nor anything inside it.
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"out"});
  EXPECT_TRUE(fs::is_empty(target));
}

TEST(ReproCli, CaptureWritesADefaultOutButNeverReplacesAFile) {
  std::string dir = testing::make_temp_dir();
  auto first = run_command("cd " + dir + " && " + cli("capture --model mlp --pipeline 'dce,cse'"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  std::string file = dir + "/mlp-dce-cse.repro";
  ASSERT_TRUE(fs::exists(file)) << first.output;
  EXPECT_EQ(check::read_repro(file).pipeline, "dce,cse");
  testing::write_text(file, "someone's notes\n");
  auto second = run_command("cd " + dir + " && " + cli("capture --model mlp --pipeline 'dce,cse'"));
  EXPECT_EQ(second.exit_code, 2) << second.output;
  EXPECT_NE(second.output.find("pass --out or remove it"), std::string::npos) << second.output;
  EXPECT_EQ(read_text(file), "someone's notes\n");
}

// minimize through the library: progress reports count every candidate and the size
// never grows; the final report matches the result.
TEST(ReproMinimize, ReportsProgressWithGrowingCandidateCounts) {
  std::string source = crash_repro();
  check::PassRegistry registry;
  check::register_builtin_passes(registry);
  mutants::register_test_passes(registry);
  std::vector<campaign::MinimizeProgress> progress;
  std::string out = testing::make_temp_dir() + "/min.repro";
  campaign::MinimizeOutcome outcome = campaign::minimize_repro(
      source, out, registry, 60, 20000, [&](const campaign::MinimizeProgress& p) { progress.push_back(p); });
  ASSERT_FALSE(progress.empty());
  for (size_t i = 1; i < progress.size(); ++i) {
    EXPECT_GE(progress[i].candidates_tried, progress[i - 1].candidates_tried);
    EXPECT_LE(progress[i].nodes, progress[i - 1].nodes);
  }
  EXPECT_EQ(progress.back().candidates_tried, outcome.candidates_tried);
  EXPECT_EQ(progress.back().nodes, outcome.after);
  EXPECT_LT(outcome.after, outcome.before);
  EXPECT_EQ(check::read_repro(out).status, "crash");
}

}  // namespace
}  // namespace passcheck
