// passcheck fuzz / repro / minimize end to end: the summary line, crash and timeout
// isolation (a crashing or hanging test pass costs one case, not the campaign), repro
// exit codes, and the whole workflow with a mutant standing in for a bug.
#include "framework/check/repro.h"
#include "suites/support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>

namespace passcheck {
namespace {

using testing::run_command;
namespace fs = std::filesystem;

std::string cli(const std::string& args) { return testing::passcheck_binary() + " " + args; }

std::vector<std::string> repros_in(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".repro") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
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

}  // namespace
}  // namespace passcheck
