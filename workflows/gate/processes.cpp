// Child processes of the gate (see processes.h).
#include "workflows/gate/processes.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace passcheck::gate {

namespace fs = std::filesystem;

namespace {

// posix_spawnp of `argv` with its output in `log` (created), stdin from /dev/null, in a
// process group of its own.
int spawn(const std::vector<std::string>& argv, const std::string& log, char* const* envp = environ) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int error = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (error != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(error));
  return pid;
}

int wait_for(int pid, bool block) {
  int status = 0;
  for (;;) {
    const int r = waitpid(pid, &status, block ? 0 : WNOHANG);
    if (r == pid) return status;
    if (r == 0) return -1;
    if (errno != EINTR) return 0;  // not our child any more: treat as a clean end
  }
}

std::string read_all(const std::string& path, size_t keep_last) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > keep_last) text = "[...]\n" + text.substr(text.size() - keep_last);
  return text;
}

std::string temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "passcheck-gate-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a directory under " + fs::temp_directory_path().string());
  return pattern;
}

// ctest -R takes a regular expression: the test's name with its special characters quoted.
std::string exact_name_pattern(const std::string& name) {
  std::string out = "^";
  for (char c : name) {
    if (std::strchr(".*+?[](){}^$|\\", c)) out += '\\';
    out += c;
  }
  return out + "$";
}

}  // namespace

CapturedOutput run_captured(const std::vector<std::string>& argv, const std::string& cwd) {
  const std::string dir = temp_dir();
  const std::string log = dir + "/out";
  std::vector<std::string> command = argv;
  if (!cwd.empty()) command = {"sh", "-c", "cd \"$0\" && exec \"$@\"", cwd};
  if (!cwd.empty()) command.insert(command.end(), argv.begin(), argv.end());
  CapturedOutput out;
  try {
    const int status = wait_for(spawn(command, log), true);
    out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    out.output = read_all(log, size_t(1) << 30);
  } catch (const std::runtime_error& e) {
    out.output = e.what();
  }
  fs::remove_all(dir);
  return out;
}

TestPool::TestPool(std::string build_dir, int slots)
    : build_dir_(std::move(build_dir)), log_dir_(temp_dir()), slots_(slots), start_(std::chrono::steady_clock::now()) {
  // Tests side by side get one intra-op thread each unless the caller chose (OpenMP
  // threads spinning on a core another test holds slow both down several times).
  for (char** e = environ; *e; ++e) test_environment_.emplace_back(*e);
  if (!std::getenv("OMP_NUM_THREADS")) test_environment_.emplace_back("OMP_NUM_THREADS=1");
  for (std::string& e : test_environment_) test_envp_.push_back(e.data());
  test_envp_.push_back(nullptr);
  thread_ = std::thread([this] { loop(); });
}

TestPool::~TestPool() {
  stop();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slots_ = -1;  // the loop's signal to end once nothing runs
  }
  changed_.notify_all();
  thread_.join();
  std::error_code ignored;
  fs::remove_all(log_dir_, ignored);
}

double TestPool::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void TestPool::queue(const std::string& test) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!stopping_) queued_.push_back(test);
  changed_.notify_all();
}

void TestPool::set_slots(int slots) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (slots_ >= 0) slots_ = slots;
  changed_.notify_all();
}

void TestPool::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopping_ = true;
  queued_.clear();
  for (const Running& r : running_) kill(-r.pid, SIGKILL);
  changed_.notify_all();
}

std::vector<TestRun> TestPool::take_finished() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<TestRun> out;
  out.swap(finished_);
  return out;
}

size_t TestPool::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_.size() + running_.size();
}

std::vector<std::string> TestPool::not_started() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {queued_.begin(), queued_.end()};
}

bool TestPool::wait_all(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_until(lock, deadline, [this] { return queued_.empty() && running_.empty(); });
}

void TestPool::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // Reap what ended.
    for (size_t i = 0; i < running_.size();) {
      const int status = wait_for(running_[i].pid, false);
      if (status == -1) {
        ++i;
        continue;
      }
      TestRun run;
      run.name = running_[i].name;
      run.started = running_[i].started;
      run.finished = now();
      run.output = read_all(running_[i].log, 16384);
      if (stopping_) run.end = TestRun::End::Stopped;
      else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) run.end = TestRun::End::Failed;
      else if (run.output.find("***Skipped") != std::string::npos || run.output.find("(Skipped)") != std::string::npos)
        run.end = TestRun::End::Skipped;
      else run.end = TestRun::End::Passed;
      finished_.push_back(std::move(run));
      running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
      changed_.notify_all();
    }
    if (slots_ < 0 && running_.empty()) return;
    // Start what fits.
    while (!stopping_ && static_cast<int>(running_.size()) < slots_ && !queued_.empty()) {
      Running r;
      r.name = queued_.front();
      queued_.pop_front();
      r.log = log_dir_ + "/" + std::to_string(finished_.size() + running_.size()) + "-" + std::to_string(now()) + ".log";
      r.started = now();
      try {
        r.pid = spawn({"ctest", "--test-dir", build_dir_, "-R", exact_name_pattern(r.name), "--output-on-failure",
                       "--no-tests=error"},
                      r.log, test_envp_.data());
        running_.push_back(std::move(r));
      } catch (const std::runtime_error& e) {
        finished_.push_back({r.name, TestRun::End::Failed, r.started, now(), e.what()});
      }
      changed_.notify_all();
    }
    changed_.wait_for(lock, std::chrono::milliseconds(50));
  }
}

}  // namespace passcheck::gate
