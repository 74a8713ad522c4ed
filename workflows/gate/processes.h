// The gate's child processes: a command whose output the gate reads (git, ninja, ctest's
// test list), and a pool that runs CTest tests side by side while the gate's own checks
// run in its thread. Children are started with posix_spawn (no fork of a process whose
// other threads may hold locks) in their own process group, so a test stopped at the
// budget takes its children with it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace passcheck::gate {

struct CapturedOutput {
  int exit_code = -1;  ///< -1: killed by a signal or not started
  std::string output;  ///< stdout and stderr together
};

/// Runs `argv` in `cwd` ("" : here) and returns its exit code and output.
CapturedOutput run_captured(const std::vector<std::string>& argv, const std::string& cwd = "");

/// One CTest test the pool ran (or stopped).
struct TestRun {
  std::string name;
  enum class End { Passed, Failed, Skipped, Stopped } end = End::Failed;
  double started = 0, finished = 0;  ///< seconds since the pool started
  std::string output;                ///< ctest's output (the test's own on failure)
};

/// Runs CTest tests of one build, in the order queued, `slots()` at a time, each as
/// `ctest --test-dir BUILD -R ^NAME$ --output-on-failure`. stop() kills what runs.
class TestPool {
 public:
  TestPool(std::string build_dir, int slots);
  ~TestPool();
  TestPool(const TestPool&) = delete;
  TestPool& operator=(const TestPool&) = delete;

  void queue(const std::string& test);
  /// How many tests may run at once (the gate frees a slot when its own checks end).
  void set_slots(int slots);
  /// Kills the running tests (reported Stopped) and drops the queued ones.
  void stop();
  /// Finished tests not yet taken, in the order they finished.
  std::vector<TestRun> take_finished();
  /// Tests queued and not started, and running.
  size_t pending() const;
  /// Blocks until every queued test has finished, or `deadline` passes (then false).
  bool wait_all(std::chrono::steady_clock::time_point deadline);
  std::vector<std::string> not_started() const;

 private:
  struct Running {
    std::string name;
    int pid = -1;
    std::string log;
    double started = 0;
  };
  void loop();
  double now() const;

  std::string build_dir_;
  std::string log_dir_;
  std::vector<std::string> test_environment_;  ///< this process's, with OMP_NUM_THREADS=1 unless set
  std::vector<char*> test_envp_;
  int slots_;
  bool stopping_ = false;
  std::deque<std::string> queued_;
  std::vector<Running> running_;
  std::vector<TestRun> finished_;
  std::chrono::steady_clock::time_point start_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::thread thread_;
};

}  // namespace passcheck::gate
