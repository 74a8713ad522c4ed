// passcheck fuzz / repro / minimize end to end: the summary line, crash and timeout
// isolation (a crashing or hanging test pass costs one case, not the campaign), repro
// exit codes, the whole workflow with a mutant standing in for a bug; campaigns run
// through the library (workflows/campaign) with their progress reports; repro files
// of an earlier campaign surviving a later one; option checks and defaults.
#include "workflows/campaign/campaign.h"
#include "workflows/campaign/cases.h"
#include "generators/program_case.h"
#include "framework/ir/text.h"
#include "framework/check/repro.h"
#include "suites/mutants/test_passes.h"
#include "suites/support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace passcheck {
namespace {

using testing::run_command;
namespace fs = std::filesystem;

using testing::cli;

std::vector<std::string> repros_in(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".repro") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// Every repro file in `dir` with its content.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& f : repros_in(dir)) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    files[f] = ss.str();
  }
  return files;
}

long long summary_count(const std::string& output, const std::string& what) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex("(\\d+) " + what))) return -1;
  return std::stoll(m[1]);
}

TEST(Fuzz, PassingPipelinePrintsTheSummaryAndLeavesNoRepros) {
  std::string dir = testing::make_temp_dir();
  auto r = run_command(cli("fuzz --pipeline dce,cse --cases 3 --seed 5 --out " + dir));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("fuzz summary: 3 cases run, 0 failures (0 violations, 0 crashes, 0 timeouts), 0 repro files"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(repros_in(dir).empty());
}

TEST(Fuzz, CrashingPassIsIsolatedAndEveryCaseRuns) {
  std::string dir = testing::make_temp_dir();
  auto r = run_command(cli("fuzz --pass crash-on-odd --cases 6 --test-passes --no-minimize --out " + dir));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(summary_count(r.output, "cases run"), 6) << r.output;
  long long crashes = summary_count(r.output, "crashes");
  EXPECT_GE(crashes, 1) << r.output;
  auto files = repros_in(dir);
  ASSERT_EQ(static_cast<long long>(files.size()), crashes) << r.output;
  for (const auto& f : files) {
    check::Repro repro = check::read_repro(f);
    EXPECT_EQ(repro.status, "crash");
    EXPECT_NE(repro.messages.at(0).find("killed by signal"), std::string::npos) << repro.messages.at(0);
    // The replay crashes too, in its own process: reported as a failure, exit 1.
    auto replay = run_command(cli("repro " + f));
    EXPECT_EQ(replay.exit_code, 1) << replay.output;
    EXPECT_NE(replay.output.find("killed by signal"), std::string::npos) << replay.output;
  }
}

TEST(Fuzz, CrashReproIsMinimizedToAGraphThatStillCrashes) {
  std::string dir = testing::make_temp_dir();
  auto r = run_command(cli("fuzz --pass crash-on-odd --cases 2 --max-failures 1 --test-passes --models --seed 3 "
                           "--minimize-seconds 30 --out " + dir));
  ASSERT_EQ(r.exit_code, 1) << r.output;
  auto files = repros_in(dir);
  ASSERT_EQ(files.size(), 1u) << r.output;
  check::Repro repro = check::read_repro(files[0]);
  ASSERT_FALSE(repro.minimized.empty()) << r.output;
  EXPECT_LT(repro.minimized.size(), repro.original.size());
  EXPECT_EQ(run_command(cli("repro " + files[0])).exit_code, 1);
}

TEST(Fuzz, HangingPassIsKilledAsATimeout) {
  std::string dir = testing::make_temp_dir();
  auto r = run_command(cli("fuzz --pass hang --cases 2 --timeout-ms 1500 --test-passes --out " + dir));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("2 cases run, 2 failures (0 violations, 0 crashes, 2 timeouts), 2 repro files"),
            std::string::npos)
      << r.output;
  for (const auto& f : repros_in(dir)) EXPECT_EQ(check::read_repro(f).status, "timeout");
}

TEST(Fuzz, UnknownPassIsABadInput) {
  auto r = run_command(cli("fuzz --pass no-such-pass --cases 1 --out " + testing::make_temp_dir()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no-such-pass"), std::string::npos) << r.output;
}

// --situations draws the cleanup situations; the campaign's coverage table shows the
// cleanup guards those cases exist for, and a mutant with one guard removed is found.
TEST(Fuzz, SituationsReachTheCleanupGuardsAndFindAGuardMutant) {
  std::string dir = testing::make_temp_dir();
  auto r = run_command(cli("fuzz --situations --pipeline dce,cse --cases 12 --seed 3 --out " + dir));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("guard random +(\\d+)"))) << r.output;
  EXPECT_GT(std::stoll(m[1]), 0) << r.output;
  auto mutant = run_command(cli("fuzz --situations --mutants --pass mutant-cse-no-random --baseline-pass cse --cases 40 "
                                "--seed 3 --max-failures 1 --no-minimize --out " + testing::make_temp_dir()));
  EXPECT_NE(mutant.output.find("first failure at case"), std::string::npos) << mutant.output;
  auto both = run_command(cli("fuzz --situations --models --pipeline dce --cases 1 --out " + dir));
  EXPECT_EQ(both.exit_code, 2) << both.output;
}

TEST(Repro, ExitCodes) {
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/bad.repro", "#! passcheck-repro 1\n#! pipeline: dce\n#! seed: x\n");
  auto bad = run_command(cli("repro " + dir + "/bad.repro"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("bad.repro:3: seed must be an integer"), std::string::npos) << bad.output;
  auto fixed = run_command(cli("repro " + testing::source_path("suites/regressions/rng-state-retagged-by-second-sac-tag.repro")));
  EXPECT_EQ(fixed.exit_code, 0) << fixed.output;
  EXPECT_NE(fixed.output.find("verdict: PASSES"), std::string::npos) << fixed.output;
}

// The workflow of docs/reproducing-a-failure.md with a mutant standing in for the bug:
// the fuzzer finds it, the repro fails against the mutant and passes with the real pass.
TEST(FuzzWorkflow, MutantIsFoundReplayedAndFixed) {
  std::string dir = testing::make_temp_dir();
  auto r = run_command(cli("fuzz --mutants --pass mutant-remat-ignores-prefer-recompute --baseline-pass remat --cases 30 --max-failures 1 "
                           "--seed 11 --minimize-seconds 30 --out " + dir));
  ASSERT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("first failure at case"), std::string::npos) << r.output;
  auto files = repros_in(dir);
  ASSERT_EQ(files.size(), 1u) << r.output;
  check::Repro repro = check::read_repro(files[0]);
  EXPECT_EQ(repro.status, "failed");
  auto buggy = run_command(cli("repro " + files[0]));
  EXPECT_EQ(buggy.exit_code, 1) << buggy.output;
  EXPECT_NE(buggy.output.find("verdict: FAILS"), std::string::npos) << buggy.output;
  std::string fixed_pipeline = std::regex_replace(repro.pipeline, std::regex("mutant-remat-ignores-prefer-recompute"), "remat");
  auto fixed = run_command(cli("repro " + files[0] + " --pipeline '" + fixed_pipeline + "'"));
  EXPECT_EQ(fixed.exit_code, 0) << fixed.output;
  // minimize keeps it failing and never grows it.
  auto min = run_command(cli("minimize " + files[0] + " --seconds 20 --out " + dir + "/min.repro"));
  ASSERT_EQ(min.exit_code, 0) << min.output;
  EXPECT_EQ(run_command(cli("repro " + dir + "/min.repro")).exit_code, 1);
}

// The campaign as a library: a small campaign with a crashing test pass, its report,
// the repro of every failure, and progress reports whose counts only grow.
TEST(Campaign, RunsThroughTheLibraryWithProgressAndFailureReports) {
  check::PassRegistry registry;
  check::register_builtin_passes(registry);
  mutants::register_test_passes(registry);
  campaign::CampaignOptions options;
  options.pass = "crash-on-odd";
  options.cases = 6;
  options.seed = 4;
  options.minimize = false;
  options.out = testing::make_temp_dir();
  options.registries = {"test"};
  std::vector<campaign::CampaignProgress> progress;
  std::vector<campaign::CaseFailure> failures;
  campaign::CampaignCallbacks callbacks;
  callbacks.on_progress = [&](const campaign::CampaignProgress& p) { progress.push_back(p); };
  callbacks.on_failure = [&](const campaign::CaseFailure& f) { failures.push_back(f); };
  campaign::CampaignReport report = campaign::run_campaign(options, registry, callbacks);

  EXPECT_EQ(report.cases_run, 6);
  EXPECT_GE(report.crashes, 1);
  EXPECT_EQ(report.violations + report.timeouts, 0);
  EXPECT_EQ(report.repro_files, report.crashes);
  ASSERT_EQ(static_cast<int64_t>(failures.size()), report.crashes);
  ASSERT_EQ(report.failures.size(), failures.size());
  for (const auto& f : failures) {
    EXPECT_EQ(f.kind, "crash");
    ASSERT_FALSE(f.repro.empty());
    EXPECT_EQ(check::read_repro(f.repro).status, "crash");
  }
  EXPECT_EQ(repros_in(options.out).size(), failures.size());

  ASSERT_FALSE(progress.empty());
  for (size_t i = 1; i < progress.size(); ++i) {
    EXPECT_GE(progress[i].done, progress[i - 1].done);
    EXPECT_GE(progress[i].failures, progress[i - 1].failures);
    EXPECT_GE(progress[i].elapsed_s, progress[i - 1].elapsed_s);
  }
  EXPECT_EQ(progress.back().done, 6);
  EXPECT_EQ(progress.back().total, 6);
  EXPECT_EQ(progress.back().failures, report.crashes);
  // One report per finished case at least: every count from 1 to 6 shows up.
  for (int64_t n = 1; n <= 6; ++n)
    EXPECT_TRUE(std::any_of(progress.begin(), progress.end(), [&](const auto& p) { return p.done == n; })) << n;
}

TEST(Campaign, BadOptionsAreRejectedBeforeAnyCaseRuns) {
  check::PassRegistry registry;
  check::register_builtin_passes(registry);
  campaign::CampaignOptions options;
  options.pass = "dce";
  options.out = testing::make_temp_dir() + "/never-created";
  auto rejects = [&](campaign::CampaignOptions o, const std::string& needle) {
    try {
      campaign::run_campaign(o, registry);
      ADD_FAILURE() << "accepted; expected " << needle;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  campaign::CampaignOptions o = options;
  o.baseline_pass = "no-such-pass";
  rejects(o, "--baseline-pass no-such-pass");
  o = options;
  o.jobs = campaign::kMaxJobs + 1;
  rejects(o, "--jobs");
  o = options;
  o.timeout_ms = 0;
  rejects(o, "--timeout-ms");
  o = options;
  o.cases = -1;
  rejects(o, "--cases");
  EXPECT_FALSE(fs::exists(options.out));
}

// A second campaign into the same --out never deletes or replaces what the first left:
// neither the same failing campaign again (same seed, so the same case names) nor a
// passing one whose cases would have removed files of those names.
TEST(Fuzz, ALaterCampaignKeepsTheReprosOfAnEarlierOne) {
  std::string dir = testing::make_temp_dir();
  const std::string failing = "fuzz --pass crash-on-odd --cases 6 --seed 9 --test-passes --no-minimize --out " + dir;
  auto first = run_command(cli(failing));
  ASSERT_EQ(first.exit_code, 1) << first.output;
  std::map<std::string, std::string> before = snapshot(dir);
  ASSERT_FALSE(before.empty()) << first.output;

  auto again = run_command(cli(failing));
  ASSERT_EQ(again.exit_code, 1) << again.output;
  auto passing = run_command(cli("fuzz --pipeline dce --cases 6 --seed 9 --out " + dir));
  ASSERT_EQ(passing.exit_code, 0) << passing.output;

  std::map<std::string, std::string> after = snapshot(dir);
  for (const auto& [path, content] : before) {
    ASSERT_TRUE(after.count(path)) << path << " was deleted\n" << again.output << passing.output;
    EXPECT_EQ(after.at(path), content) << path << " was changed";
  }
  // The second failing run kept its own repros too, under new names.
  EXPECT_EQ(after.size(), 2 * before.size()) << again.output;
  EXPECT_EQ(summary_count(again.output, "repro files written"), static_cast<long long>(before.size())) << again.output;
  // No claimed file is left behind (coverage files, empty claims of passing cases).
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_EQ(e.path().extension(), ".repro") << e.path();
}

// Numeric options out of range are refused by the parser with the option named; the
// parser's errors become exit 2 in main (any code but 0 and 1 is accepted here).
TEST(Fuzz, OutOfRangeNumericOptionsAreRejectedNamingTheOption) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"fuzz --pipeline dce --cases 0", "--cases"},
      {"fuzz --pipeline dce --cases -3", "--cases"},
      {"fuzz --pipeline dce --seconds 0", "--seconds"},
      {"fuzz --pipeline dce --seconds -1", "--seconds"},
      {"fuzz --pipeline dce --timeout-ms 0", "--timeout-ms"},
      {"fuzz --pipeline dce --timeout-ms -5", "--timeout-ms"},
      {"fuzz --pipeline dce --minimize-seconds -1", "--minimize-seconds"},
      {"fuzz --pipeline dce --jobs 0", "--jobs"},
      {"fuzz --pipeline dce --jobs 100000", "--jobs"},
      {"fuzz --pipeline dce --max-failures -1", "--max-failures"},
      {"repro x.repro --timeout-ms -1", "--timeout-ms"},
      {"minimize x.repro --seconds 0", "--seconds"},
      {"minimize x.repro --timeout-ms 0", "--timeout-ms"},
      {"fuzz --pipeline dce --seed 1e23", "--seed"},
      {"fuzz --pipeline dce --cases 1e20", "--cases"},
      {"fuzz --python-pass \"\"", "--python-pass"},
  };
  std::string dir = testing::make_temp_dir();
  for (const auto& [args, option] : bad) {
    auto r = run_command("cd " + dir + " && " + cli(args));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("error: " + option + ": "), std::string::npos) << args << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(dir + "/repros"));
  auto baseline = run_command(cli("fuzz --pass dce --baseline-pass no-such-pass --cases 1 --out " + dir + "/o"));
  EXPECT_EQ(baseline.exit_code, 2) << baseline.output;
  EXPECT_NE(baseline.output.find("--baseline-pass no-such-pass: no such pass"), std::string::npos) << baseline.output;
  EXPECT_FALSE(fs::exists(dir + "/o"));
}

TEST(Fuzz, WithoutPassOrPipelineTheDefaultPipelineIsFuzzed) {
  auto r = run_command(cli("fuzz --cases 2 --out " + testing::make_temp_dir()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("fuzzing the default pipeline"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("pipeline: dce,canonicalize,ac-regions,sac-tag,remat{rng=replay}"), std::string::npos)
      << r.output;
}

TEST(Fuzz, AnOutThatCannotBeCreatedIsExit2WithTheReason) {
  auto missing = run_command(cli("fuzz --pipeline dce --cases 1 --out /proc/self/passcheck-no-such-dir"));
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("No such file or directory"), std::string::npos) << missing.output;
  std::string file = testing::make_temp_dir() + "/a-file";
  testing::write_text(file, "x");
  auto not_dir = run_command(cli("fuzz --pipeline dce --cases 1 --out " + file));
  EXPECT_EQ(not_dir.exit_code, 2) << not_dir.output;
  EXPECT_NE(not_dir.output.find("is not a directory"), std::string::npos) << not_dir.output;
}

// Captured output is not a terminal: no progress lines, only the results.
TEST(Fuzz, NoProgressLinesWhenStderrIsNotATerminal) {
  auto r = run_command(cli("fuzz --pipeline dce --cases 3 --out " + testing::make_temp_dir()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("fuzz: "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\r'), std::string::npos) << r.output;
}

// On a terminal (a pseudo-terminal from script(1)), fuzz draws one progress line that
// rewrites itself with cases done out of planned.
TEST(Fuzz, ProgressLineOnATerminal) {
  if (run_command("command -v script").exit_code != 0) GTEST_SKIP() << "script(1) is not installed";
  auto r = run_command("script -qec \"" + cli("fuzz --pipeline dce --cases 3 --out " + testing::make_temp_dir()) +
                       "\" /dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\rfuzz: 3/3 cases, 0 failures"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fuzz summary: 3 cases run"), std::string::npos) << r.output;
}

// A case failing under several passes is blamed on the first after which it fails, and
// replayed alone on the graph the passes before it made.
TEST(Campaign, BisectBlamesTheFirstPassAfterWhichTheCaseFails) {
  check::PassRegistry registry;
  check::register_builtin_passes(registry);
  // Wrong on purpose: the first scalar division or multiplication gets another constant.
  registry.add(check::PassInfo("bump-first-constant", "test pass", {}), [](ir::Graph& g, const check::PassOptions&) {
    check::PassResult r;
    for (ir::Node* n : g.node_list()) {
      if ((n->op() == "aten::div.Scalar" || n->op() == "aten::mul.Scalar") && n->num_args() > 1 &&
          (n->arg(1).kind == ir::Arg::Kind::Int || n->arg(1).kind == ir::Arg::Kind::Float)) {
        n->set_arg(1, ir::Arg::real(n->arg(1).kind == ir::Arg::Kind::Int ? n->arg(1).i + 1.5 : n->arg(1).f + 1.5));
        r.changed = true;
        break;
      }
    }
    return r;
  });
  int checked = 0;
  for (uint64_t seed = 1; seed < 40 && checked < 3; ++seed) {
    gen::GeneratedCase c = gen::generate_case(seed);
    if (check::check_case(*c.graph, "bump-first-constant", c.input_seed, c.int_high, registry).violations.empty())
      continue;
    ++checked;
    EXPECT_FALSE(campaign::bisect_failure(*c.graph, "bump-first-constant", c.input_seed, c.int_high, registry));
    auto late = campaign::bisect_failure(*c.graph, "canonicalize,dce,bump-first-constant,cse", c.input_seed,
                                         c.int_high, registry);
    ASSERT_TRUE(late);
    EXPECT_EQ(late->pass_index, 2u);
    EXPECT_EQ(late->passes, 4u);
    EXPECT_EQ(late->pass, "bump-first-constant");
    ASSERT_FALSE(late->graph.empty());
    EXPECT_FALSE(late->violations.empty());
    // The graph handed on is what canonicalize and dce made of the case.
    std::unique_ptr<ir::Graph> made = c.graph->clone();
    check::Pipeline::parse("canonicalize,dce", registry).run(*made);
    EXPECT_EQ(late->graph, made->print());
    auto early = campaign::bisect_failure(*c.graph, "bump-first-constant,dce", c.input_seed, c.int_high, registry);
    ASSERT_TRUE(early);
    EXPECT_EQ(early->pass_index, 0u);
    EXPECT_EQ(early->graph, c.graph->print());
  }
  EXPECT_EQ(checked, 3) << "too few generated cases hold a scalar division or multiplication";
}

}  // namespace
}  // namespace passcheck
