// The fuzzer's fork server and mixed campaigns (workflows/campaign/case_processes.h):
// the fork server finds the same failures in the same cases as one process per case; a
// crashing, hanging or killed case process (or a worker killed under a case) costs only
// that case, with a repro written before the case ran; a mixed campaign runs programs,
// sim-mesh and chunk cases, catches a mutant of each kind, and every repro replays.
#include "workflows/campaign/campaign.h"
#include "framework/check/repro.h"
#include "suites/mutants/mutants.h"
#include "suites/mutants/test_passes.h"
#include "suites/support/test_support.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>
#include <unistd.h>

namespace passcheck {
namespace {

using testing::run_command;
namespace fs = std::filesystem;

using testing::cli;

check::PassRegistry registry_with(bool mutants, bool test_passes) {
  check::PassRegistry registry;
  check::register_builtin_passes(registry);
  if (mutants) mutants::register_all_mutants(registry);
  if (test_passes) mutants::register_test_passes(registry);
  return registry;
}

using FailureKey = std::tuple<int64_t, uint64_t, std::string>;

std::set<FailureKey> failures_of(const campaign::CampaignReport& report) {
  std::set<FailureKey> keys;
  for (const campaign::CaseFailure& f : report.failures) keys.insert({f.index, f.seed, f.kind});
  return keys;
}

campaign::CampaignReport run_in(campaign::Isolation isolation, campaign::CampaignOptions options,
                                const check::PassRegistry& registry) {
  options.isolation = isolation;
  options.out = testing::make_temp_dir();
  return campaign::run_campaign(options, registry);
}

// The same seed gives the same failing cases (index, seed and kind) in every mode: the
// fork server and the persistent workers change where a case runs, not what it runs.
TEST(ForkServer, FindsTheSameFailuresInTheSameCasesAsPerCaseProcesses) {
  check::PassRegistry registry = registry_with(true, true);
  campaign::CampaignOptions options;
  options.pass = "mutant-remat-ignores-prefer-recompute";
  options.baseline_pass = "remat";
  options.registries = {"mutants", "test"};
  options.cases = 24;
  options.seed = 11;
  options.jobs = 2;
  options.minimize = false;
  campaign::CampaignReport per_case = run_in(campaign::Isolation::PerCase, options, registry);
  campaign::CampaignReport server = run_in(campaign::Isolation::ForkServer, options, registry);
  campaign::CampaignReport persistent = run_in(campaign::Isolation::Persistent, options, registry);
  EXPECT_EQ(server.cases_run, 24);
  EXPECT_EQ(persistent.cases_run, 24);
  EXPECT_GT(per_case.violations, 0) << "the mutant must fail some case for the comparison to mean anything";
  EXPECT_EQ(failures_of(server), failures_of(per_case));
  EXPECT_EQ(failures_of(persistent), failures_of(per_case));
  EXPECT_EQ(server.baseline_failures, per_case.baseline_failures);
  EXPECT_EQ(persistent.baseline_failures, per_case.baseline_failures);

  // Crashes too: crash-on-odd fails the cases whose graph has an odd node count.
  options.pass = "crash-on-odd";
  options.baseline_pass.clear();
  per_case = run_in(campaign::Isolation::PerCase, options, registry);
  server = run_in(campaign::Isolation::ForkServer, options, registry);
  persistent = run_in(campaign::Isolation::Persistent, options, registry);  // a new worker after each crash
  EXPECT_GT(per_case.crashes, 0);
  EXPECT_LT(per_case.crashes, 24);
  EXPECT_EQ(failures_of(server), failures_of(per_case));
  EXPECT_EQ(failures_of(persistent), failures_of(per_case));
}

// A hanging case is killed at the time limit; its repro was written before the pass ran,
// so it holds the graph and replays as the same timeout.
class ForkServerModes : public ::testing::TestWithParam<std::string> {};

TEST_P(ForkServerModes, HangIsATimeoutWithAReproWrittenBeforeTheRun) {
  std::string dir = testing::make_temp_dir();
  auto r = run_command(cli("fuzz --pass hang --cases 3 --jobs 2 --timeout-ms 800 --test-passes --isolation " + GetParam() +
                           " --out " + dir));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("3 cases run, 3 failures (0 violations, 0 crashes, 3 timeouts), 3 repro files"), std::string::npos)
      << r.output;
  int replayed = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".repro") continue;
    check::Repro repro = check::read_repro(e.path().string());
    EXPECT_EQ(repro.status, "timeout");
    EXPECT_EQ(repro.timeout_ms, 800);
    EXPECT_FALSE(repro.original.empty());
    if (replayed++ > 0) continue;  // one replay is enough: each waits for the limit
    auto replay = run_command(cli("repro " + e.path().string()));
    EXPECT_EQ(replay.exit_code, 1) << replay.output;
    EXPECT_NE(replay.output.find("timeout after 800 ms"), std::string::npos) << replay.output;
  }
  EXPECT_EQ(replayed, 3);
}

// The processes whose parent is this one (the fork server's workers).
std::vector<pid_t> children_of_this_process() {
  std::vector<pid_t> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
    std::istringstream rest(line.substr(line.rfind(')') + 1));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == ::getpid()) pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

// A worker killed while its case runs: that case is a crash with its repro, a new worker
// takes the next case, and the campaign finishes.
TEST_P(ForkServerModes, AWorkerKilledUnderACaseCostsThatCaseOnly) {
  check::PassRegistry registry = registry_with(false, true);
  campaign::CampaignOptions options;
  options.isolation = GetParam() == "persistent" ? campaign::Isolation::Persistent : campaign::Isolation::ForkServer;
  options.pass = "hang";
  options.registries = {"test"};
  options.cases = 2;
  options.jobs = 1;
  options.timeout_ms = 4000;
  options.minimize = false;
  options.out = testing::make_temp_dir();
  bool killed = false;
  campaign::CampaignCallbacks callbacks;
  callbacks.on_progress = [&](const campaign::CampaignProgress& p) {
    if (killed || p.done > 0) return;
    // Case 0 hangs; once its pending repro holds the graph, the worker is killed under it.
    bool pending_written = false;
    for (const auto& e : fs::directory_iterator(options.out)) {
      std::error_code gone;  // the atomic write's temporary file may vanish under us
      if (e.path().extension() == ".repro" && fs::file_size(e.path(), gone) > 0 && !gone) pending_written = true;
    }
    if (!pending_written) return;
    std::vector<pid_t> workers = children_of_this_process();
    ASSERT_EQ(workers.size(), 1u);
    ::kill(workers[0], SIGKILL);
    killed = true;
  };
  campaign::CampaignReport report = campaign::run_campaign(options, registry, callbacks);
  ASSERT_TRUE(killed);
  EXPECT_EQ(report.cases_run, 2);
  ASSERT_EQ(report.failures.size(), 2u);
  EXPECT_EQ(report.failures[0].index, 0);
  EXPECT_EQ(report.failures[0].kind, "crash");
  EXPECT_NE(report.failures[0].detail.find("signal 9"), std::string::npos) << report.failures[0].detail;
  EXPECT_EQ(check::read_repro(report.failures[0].repro).status, "crash");
  EXPECT_EQ(report.failures[1].kind, "timeout");  // the new worker ran case 1 to its limit
  EXPECT_TRUE(children_of_this_process().empty()) << "the workers end with the campaign";
}

INSTANTIATE_TEST_SUITE_P(Isolation, ForkServerModes, ::testing::Values("fork-server", "persistent"),
                         [](const auto& info) { return info.param == "persistent" ? "Persistent" : "ForkServer"; });

// A mix of the three kinds with the real passes: every kind runs and nothing fails.
TEST(MixedCampaign, RunsEveryKindOfCase) {
  auto r = run_command(cli("fuzz --mix programs,sim-mesh,chunk --pipeline dce,cse --cases 6 --seed 5 --out " +
                           testing::make_temp_dir()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("programs cases: 2, pipeline dce,cse"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("sim-mesh cases: 2, pipeline fuse-chained-allgathers"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("chunk cases: 2, pipeline chunk,concretize"), std::string::npos) << r.output;
}

// One mutant per kind in one mixed campaign: each is caught by its kind's cases, each
// repro fails on replay, and passes with the real pass in the mutant's place.
TEST(MixedCampaign, CatchesAMutantOfEachKindAndTheReprosReplay) {
  std::string dir = testing::make_temp_dir();
  auto r = run_command(cli(
      "fuzz --mix programs,sim-mesh,chunk --mutants --pass mutant-remat-ignores-prefer-recompute --baseline-pass remat "
      "--sim-mesh-pass mutant-fuse-chained-allgathers-swapped-groups --chunk-pass mutant-chunk-adds-chunk-dim "
      "--cases 45 --seed 11 --no-minimize --out " + dir));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::map<std::string, std::string> mutant_of = {{"programs", "mutant-remat-ignores-prefer-recompute"},
                                                  {"sim-mesh", "mutant-fuse-chained-allgathers-swapped-groups"},
                                                  {"chunk", "mutant-chunk-adds-chunk-dim"}};
  std::map<std::string, std::string> real_of = {{"programs", "remat"}, {"sim-mesh", "fuse-chained-allgathers"}, {"chunk", "chunk"}};
  for (const auto& [kind, mutant] : mutant_of) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.output, m, std::regex("case \\d+ \\(seed \\d+, " + kind + "\\): violation[^:]*: (\\S+)")))
        << kind << " mutant not caught:\n" << r.output;
    std::string file = m[1];
    check::Repro repro = check::read_repro(file);
    EXPECT_NE(repro.pipeline.find(mutant), std::string::npos) << repro.pipeline;
    EXPECT_EQ(repro.is_sim_mesh_case(), kind == "sim-mesh");
    EXPECT_EQ(repro.is_chunk_case(), kind == "chunk");
    auto buggy = run_command(cli("repro " + file));
    EXPECT_EQ(buggy.exit_code, 1) << buggy.output;
    EXPECT_NE(buggy.output.find("verdict: FAILS"), std::string::npos) << buggy.output;
    std::string fixed_pipeline = std::regex_replace(repro.pipeline, std::regex(mutant), real_of[kind]);
    auto fixed = run_command(cli("repro " + file + " --pipeline '" + fixed_pipeline + "'"));
    EXPECT_EQ(fixed.exit_code, 0) << fixed.output;
  }
}

TEST(MixedCampaign, BadMixOptionsAreExit2) {
  std::string out = " --cases 1 --out " + testing::make_temp_dir();
  for (const char* args : {"--mix programs,meshes", "--mix programs,chunk --chunk batch",
                           "--mix sim-mesh --sim-mesh-pass dce", "--sim-mesh-pass fuse-chained-allgathers-x",
                           "--isolation threads"}) {
    auto r = run_command(cli(std::string("fuzz --pipeline dce ") + args + out));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace passcheck
