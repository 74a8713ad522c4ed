// The faults the gloo backend and the local launcher must report instead of hanging: a
// rank killed between two collectives, a rank that hangs, a rank that throws, all_to_all
// split sizes that disagree; torchrun's variables (missing, invalid, and a launched
// program that meets through them, this test binary re-executed as each rank).
#include "framework/dist/collectives.h"
#include "framework/dist/launcher.h"
#include "framework/dist/process_group.h"
#include "suites/dist/dist_test_support.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <unistd.h>

namespace passcheck::testing {
namespace {

using dist::DeviceMesh;

dist::LaunchOptions short_timeouts(int timeout_ms) {
  dist::LaunchOptions options;
  options.timeout = std::chrono::milliseconds(timeout_ms);
  options.grace = std::chrono::milliseconds(500);
  options.echo_output = false;
  return options;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(GlooFaults, AKilledRankIsNamedByEveryOther) {
  auto outcomes = dist::run_forked(DeviceMesh::parse("dp=4"), [](int64_t rank) {
    dist::wait_tensor(dist::all_reduce(at::ones({2}), "sum", "dp"));
    if (rank == 2) ::raise(SIGKILL);
    dist::wait_tensor(dist::all_reduce(at::ones({2}), "sum", "dp"));
  }, short_timeouts(20000));
  ASSERT_EQ(outcomes.size(), 4u);
  EXPECT_FALSE(outcomes[2].ok);
  EXPECT_EQ(outcomes[2].error, "died (killed by signal 9)");
  for (int64_t r : {0, 1, 3}) {
    EXPECT_FALSE(outcomes[r].ok);
    EXPECT_TRUE(contains(outcomes[r].error, "rank " + std::to_string(r) + ": waiting for all_reduce(Float[2], sum, "
                                            "group dp) #1 of group [0, 1, 2, 3]: rank 2 died (killed by signal 9) "
                                            "without issuing it"))
        << outcomes[r].error;
  }
}

TEST(GlooFaults, AHangingRankTimesOutWithItsLastCollective) {
  auto outcomes = dist::run_forked(DeviceMesh::parse("dp=2"), [](int64_t rank) {
    dist::wait_tensor(dist::all_reduce(at::ones({2}), "sum", "dp"));
    if (rank == 1)
      for (;;) ::pause();
    dist::wait_tensor(dist::all_gather_into_tensor(at::ones({2}), 2, "dp"));
  }, short_timeouts(1500));  // long enough for the first collective on a loaded machine
  ASSERT_FALSE(outcomes[0].ok);
  EXPECT_TRUE(contains(outcomes[0].error, "timed out after 1500 ms waiting for all_gather_into_tensor(Float[2], group dp)"))
      << outcomes[0].error;
  EXPECT_TRUE(contains(outcomes[0].error,
                       "not issued by rank 1 (last issued: all_reduce(Float[2], sum, group dp) #0 of group [0, 1])"))
      << outcomes[0].error;
  ASSERT_FALSE(outcomes[1].ok);
  EXPECT_EQ(outcomes[1].error, "killed by the launcher: still running 2000 ms after rank 0 exited with code 1");
}

TEST(GlooFaults, AFailingRankIsNamedOnTheOthers) {
  std::string errors = run_ranks("gloo", DeviceMesh::parse("dp=3"), [&](int64_t rank) {
    if (rank == 2) throw std::runtime_error("injected failure");
    dist::wait_tensor(dist::all_reduce(at::ones({2}), "sum", "dp"));
  });
  EXPECT_TRUE(contains(errors, "rank 0: rank 0: waiting for all_reduce")) << errors;
  EXPECT_TRUE(contains(errors, "rank 2 failed (injected failure) without issuing it")) << errors;
  EXPECT_TRUE(contains(errors, "rank 2: injected failure")) << errors;
}

TEST(GlooFaults, AllToAllSplitsThatDisagreeAreReported) {
  std::string errors = run_ranks("gloo", DeviceMesh::parse("ep=2"), [&](int64_t rank) {
    // Rank 0 sends 2 rows to rank 1, which expects 1.
    std::vector<int64_t> in = rank == 0 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1, 1};
    dist::wait_tensor(dist::all_to_all_single(at::ones({in[0] + in[1], 2}), {1, 1}, in, "ep"));
  });
  EXPECT_TRUE(contains(errors, "rank 0 sends 2 rows to rank 1, which expects 1")) << errors;
}

// Saves and restores the variables a test changes.
class ScopedEnvironment {
 public:
  void set(const std::string& name, const char* value) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) ::setenv(name.c_str(), value, 1);
    else ::unsetenv(name.c_str());
  }
  ~ScopedEnvironment() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
      if (it->second) ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else ::unsetenv(it->first.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

std::string rendezvous_error() {
  try {
    dist::rendezvous_from_environment();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(TorchrunVariables, MissingOrInvalidVariablesAreNamed) {
  ScopedEnvironment env;
  env.set("WORLD_SIZE", "4");
  env.set("RANK", nullptr);
  env.set("LOCAL_RANK", "0");
  env.set("MASTER_ADDR", "127.0.0.1");
  env.set("MASTER_PORT", "29500");
  EXPECT_EQ(rendezvous_error(), "environment variable RANK is not set");
  env.set("RANK", "4");
  EXPECT_EQ(rendezvous_error(), "environment variable RANK='4' is not an integer in [0, 3]");
  env.set("RANK", "1");
  env.set("MASTER_PORT", "29x");
  EXPECT_EQ(rendezvous_error(), "environment variable MASTER_PORT='29x' is not an integer in [1, 65535]");
  env.set("MASTER_PORT", "29500");
  env.set("TORCHELASTIC_USE_AGENT_STORE", "True");
  env.set("PASSCHECK_DIST_TIMEOUT_MS", "1500");
  dist::RendezvousInfo info = dist::rendezvous_from_environment();
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.world_size, 4);
  EXPECT_TRUE(info.agent_store);
  EXPECT_EQ(info.timeout.count(), 1500);
}

TEST(LocalLauncher, SetsTheVariablesAndRecordsEachExit) {
  auto outcomes = dist::launch_local(
      {"/bin/sh", "-c",
       "echo \"rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK addr=$MASTER_ADDR agent=$TORCHELASTIC_USE_AGENT_STORE "
       "timeout=$PASSCHECK_DIST_TIMEOUT_MS\"; test -n \"$MASTER_PORT\" || exit 4; test $RANK != 1 || exit 3"},
      2, short_timeouts(800));
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_TRUE(outcomes[0].ok);
  EXPECT_EQ(outcomes[0].output, "rank=0 world=2 local=0 addr=127.0.0.1 agent=True timeout=800\n");
  EXPECT_FALSE(outcomes[1].ok);
  EXPECT_EQ(outcomes[1].exit_code, 3);
  EXPECT_EQ(outcomes[1].how_ended, "exited with code 3");
}

TEST(LocalLauncher, KillsStragglersAfterTimeoutAndGrace) {
  // `exec` so the shell itself is the straggler and nothing outlives the kill.
  auto outcomes =
      dist::launch_local({"/bin/sh", "-c", "test $RANK = 0 && kill -9 $$; exec sleep 600"}, 2, short_timeouts(300));
  EXPECT_EQ(outcomes[0].how_ended, "killed by signal 9");
  EXPECT_EQ(outcomes[0].signal, 9);
  EXPECT_EQ(outcomes[1].how_ended, "killed by the launcher: still running 800 ms after rank 0 killed by signal 9");
}

// The body of a launched rank: runs only when this binary is started by the launcher
// test below (PASSCHECK_TEST_LAUNCHED_RANK is set), as every rank of a dp mesh.
TEST(LaunchedRank, GathersThroughTorchrunVariables) {
  const char* mode = std::getenv("PASSCHECK_TEST_LAUNCHED_RANK");
  if (!mode) GTEST_SKIP() << "runs only as a launched rank";
  auto communicator = dist::init_from_environment("gloo");
  auto mesh = std::make_shared<const DeviceMesh>(DeviceMesh::one_dim("dp", communicator->world_size()));
  int64_t rank = communicator->rank();
  try {
    dist::RankScope scope(dist::RankContext{mesh, rank, communicator.get()});
    at::Tensor got = dist::wait_tensor(dist::all_gather_into_tensor(at::full({2}, double(rank)), mesh->world_size(), "dp"));
    expect_bitwise("gather", at::arange(mesh->world_size(), at::kFloat).repeat_interleave(2), got);
    if (std::string(mode) == "kill-rank-1" && rank == 1) ::raise(SIGKILL);
    dist::wait_tensor(dist::all_reduce(at::ones({2}), "sum", "dp"));
    communicator->mark_stopped("finished its run");
    std::cout << "rank " << rank << " done" << std::endl;
  } catch (const std::exception& e) {
    communicator->mark_stopped("failed (" + std::string(e.what()) + ")");
    std::cout << "error: " << e.what() << std::endl;
    std::_Exit(1);
  }
}

std::vector<dist::LaunchOutcome> launch_this_binary_as_ranks(const char* mode, int64_t world_size) {
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw std::runtime_error("cannot find this test binary");
  self[n] = '\0';
  ScopedEnvironment env;
  env.set("PASSCHECK_TEST_LAUNCHED_RANK", mode);
  return dist::launch_local({self, "--gtest_filter=LaunchedRank.GathersThroughTorchrunVariables"}, world_size,
                            short_timeouts(20000));
}

TEST(LocalLauncher, RunsRanksThatMeetThroughTheVariables) {
  auto outcomes = launch_this_binary_as_ranks("run", 3);
  for (const auto& o : outcomes) {
    EXPECT_TRUE(o.ok) << o.how_ended << "\n" << o.output;
    EXPECT_TRUE(contains(o.output, "rank " + std::to_string(o.rank) + " done")) << o.output;
  }
}

TEST(LocalLauncher, ALaunchedRankThatDiesIsNamedByTheOthers) {
  auto outcomes = launch_this_binary_as_ranks("kill-rank-1", 3);
  EXPECT_EQ(outcomes[1].how_ended, "killed by signal 9");
  for (int64_t r : {0, 2}) {
    EXPECT_EQ(outcomes[r].how_ended, "exited with code 1");
    EXPECT_TRUE(contains(outcomes[r].output, "rank 1 died (killed by signal 9) without issuing it")) << outcomes[r].output;
  }
}

}  // namespace
}  // namespace passcheck::testing
