// Crash isolation (see isolation.h).
#include "framework/check/isolation.h"

#include <ATen/Parallel.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <thread>

namespace passcheck::check {

std::string ChildOutcome::describe(int64_t timeout_ms) const {
  switch (kind) {
    case Kind::Exited:
      return "exit " + std::to_string(exit_code);
    case Kind::Signaled: {
      const char* name = strsignal(signal);
      return "killed by signal " + std::to_string(signal) + " (" + (name ? name : "?") + ")";
    }
    case Kind::TimedOut:
      return "timed out after " + std::to_string(timeout_ms) + " ms";
    case Kind::ForkFailed:
      return "fork failed";
  }
  return "?";
}

void prepare_for_fork() { at::set_num_threads(1); }

pid_t spawn_child(const std::function<int()>& body) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid != 0) return pid;  // parent, or -1
  int code = 3;
  try {
    at::set_num_threads(1);
    code = body();
  } catch (const std::exception& e) {
    std::cerr << "passcheck: case process: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "passcheck: case process: unknown exception\n";
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  // _exit: LibTorch's static destructors have no business running in a forked child.
  _exit(code);
}

bool poll_child(pid_t pid, ChildOutcome& outcome) {
  int status = 0;
  pid_t r = waitpid(pid, &status, WNOHANG);
  if (r == 0) return false;
  if (r < 0) {
    outcome.kind = ChildOutcome::Kind::ForkFailed;
    return true;
  }
  if (WIFSIGNALED(status)) {
    outcome.kind = ChildOutcome::Kind::Signaled;
    outcome.signal = WTERMSIG(status);
  } else {
    outcome.kind = ChildOutcome::Kind::Exited;
    outcome.exit_code = WEXITSTATUS(status);
  }
  return true;
}

void kill_child(pid_t pid) {
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
}

ChildOutcome run_in_child(const std::function<int()>& body, int64_t timeout_ms) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  ChildOutcome outcome;
  pid_t pid = spawn_child(body);
  if (pid < 0) {
    outcome.kind = ChildOutcome::Kind::ForkFailed;
    return outcome;
  }
  auto elapsed_ms = [&] { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); };
  int sleep_us = 200;
  while (!poll_child(pid, outcome)) {
    if (timeout_ms > 0 && elapsed_ms() > static_cast<double>(timeout_ms)) {
      kill_child(pid);
      outcome.kind = ChildOutcome::Kind::TimedOut;
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    sleep_us = std::min(sleep_us * 2, 5000);
  }
  outcome.seconds = elapsed_ms() / 1000.0;
  return outcome;
}

}  // namespace passcheck::check
