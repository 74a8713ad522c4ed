// Crash isolation for the fuzzer: runs a function in a fork()ed child process with a
// wall-clock limit, so a pass that segfaults, aborts or hangs costs one case, not the
// campaign. The child shares nothing back but its exit status (and the files it
// writes). Forking is safe because the parent keeps LibTorch single-threaded: call
// prepare_for_fork() before any tensor work, so no intra-op pool threads exist whose
// locks a child could inherit.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

namespace passcheck::check {

/// How a child ended.
struct ChildOutcome {
  enum class Kind { Exited, Signaled, TimedOut, ForkFailed };
  Kind kind = Kind::Exited;
  int exit_code = 0;  ///< Exited
  int signal = 0;     ///< Signaled
  double seconds = 0;
  /// "exit 0", "killed by signal 11 (SIGSEGV)", "timed out after 500 ms".
  std::string describe(int64_t timeout_ms = 0) const;
};

/// Sets LibTorch to one intra-op thread (call once, before the first fork).
void prepare_for_fork();

/// Forks; the child runs `body` and _exit()s with its return value (3 when it throws,
/// after printing the exception to stderr). Returns the child's pid, or -1.
pid_t spawn_child(const std::function<int()>& body);

/// Non-blocking: true when `pid` has ended, filling `outcome` (seconds not set).
bool poll_child(pid_t pid, ChildOutcome& outcome);

/// Kills `pid` (SIGKILL) and reaps it.
void kill_child(pid_t pid);

/// spawn_child + wait, killing the child after `timeout_ms` (0: no limit).
ChildOutcome run_in_child(const std::function<int()>& body, int64_t timeout_ms);

}  // namespace passcheck::check
