// The processes cases run in (see case_processes.h).
//
// Fork-server protocol, over one SOCK_STREAM socketpair per worker: the campaign sends a
// case as length-prefixed fields (serialize_spec); the worker forks a grandchild that runs
// run_case() and _exit()s with its CaseExit, waits for it under the time limit (SIGKILL
// past it) and answers with three int32s: the outcome kind, the exit code, the signal.
// Only the answer tells the campaign the worker is free again; end of file on the socket
// means the worker itself died. Grandchildren die with their worker (PR_SET_PDEATHSIG),
// and workers with the campaign process.
#include "workflows/campaign/case_processes.h"

#include "framework/check/coverage.h"
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/ir/graph.h"
#include "generators/program_case.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <thread>

namespace passcheck::campaign {

namespace {

using Clock = std::chrono::steady_clock;

// A persistent worker is replaced after this many cases, so what cases leave behind
// (leaks, a fragmented heap) stays bounded.
constexpr int64_t kCasesPerPersistentWorker = 500;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// ---------------------------------------------------------------- per-case children

class PerCaseProcesses : public CaseProcesses {
 public:
  PerCaseProcesses(const CampaignOptions& options, const check::PassRegistry& registry)
      : options_(options), registry_(registry) {}

  bool can_start() const override { return static_cast<int>(running_.size()) < options_.jobs; }
  size_t running() const override { return running_.size(); }

  void start(const CaseSpec& spec) override {
    Child c{-1, spec, Clock::now()};
    c.pid = check::spawn_child([&]() -> int { return run_case(c.spec, options_, registry_); });
    if (c.pid < 0) throw std::runtime_error("cannot start a case process (fork failed)");
    running_.push_back(c);
  }

  std::vector<EndedCase> wait(int wait_ms) override {
    // The original loop: poll every child, then sleep a millisecond.
    Clock::time_point begin = Clock::now();
    std::vector<EndedCase> ended;
    while (true) {
      for (size_t i = 0; i < running_.size();) {
        check::ChildOutcome o;
        bool done = check::poll_child(running_[i].pid, o);
        if (!done && ms_since(running_[i].start) > static_cast<double>(options_.timeout_ms)) {
          check::kill_child(running_[i].pid);
          o.kind = check::ChildOutcome::Kind::TimedOut;
          done = true;
        }
        if (!done) {
          ++i;
          continue;
        }
        ended.push_back({running_[i].spec, o});
        running_.erase(running_.begin() + static_cast<long>(i));
      }
      if (!ended.empty() || running_.empty() || ms_since(begin) >= wait_ms) return ended;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  std::vector<CaseSpec> kill_all() override {
    std::vector<CaseSpec> specs;
    for (const Child& c : running_) {
      check::kill_child(c.pid);
      specs.push_back(c.spec);
    }
    running_.clear();
    return specs;
  }

 private:
  struct Child {
    pid_t pid;
    CaseSpec spec;
    Clock::time_point start;
  };
  const CampaignOptions& options_;
  const check::PassRegistry& registry_;
  std::vector<Child> running_;
};

// ---------------------------------------------------------------- the wire format

void put_string(std::string& out, const std::string& s) {
  uint32_t n = static_cast<uint32_t>(s.size());
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out += s;
}

std::string serialize_spec(const CaseSpec& spec) {
  std::string body;
  put_string(body, std::to_string(spec.index));
  put_string(body, std::to_string(spec.seed));
  put_string(body, std::to_string(static_cast<int>(spec.kind)));
  put_string(body, spec.pipeline);
  put_string(body, spec.baseline);
  put_string(body, spec.repro_path);
  put_string(body, spec.coverage_path);
  std::string message;
  put_string(message, body);
  return message;
}

// Reads exactly n bytes; false on end of file or an error.
bool read_exactly(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool write_exactly(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// A length-prefixed string (put_string); false on end of file or an error.
bool read_string(int fd, std::string& s) {
  uint32_t n = 0;
  if (!read_exactly(fd, &n, sizeof n)) return false;
  s.assign(n, '\0');
  return n == 0 || read_exactly(fd, s.data(), n);
}

bool read_spec(int fd, CaseSpec& spec) {
  uint32_t n = 0;
  if (!read_exactly(fd, &n, sizeof n)) return false;
  std::string body(n, '\0');
  if (!read_exactly(fd, body.data(), n)) return false;
  size_t at = 0;
  auto next = [&]() {
    uint32_t len = 0;
    std::memcpy(&len, body.data() + at, sizeof len);
    at += sizeof len;
    std::string s = body.substr(at, len);
    at += len;
    return s;
  };
  spec.index = std::stoll(next());
  spec.seed = std::stoull(next());
  spec.kind = static_cast<CaseKind>(std::stoi(next()));
  spec.pipeline = next();
  spec.baseline = next();
  spec.repro_path = next();
  spec.coverage_path = next();
  return true;
}

// A worker's answer for one case.
struct Answer {
  int32_t kind = 0;
  int32_t exit_code = 0;
  int32_t signal = 0;
};

// ---------------------------------------------------------------- the worker

// A random op of the warm-up program (or of an earlier case, persistent) may have drawn
// from the default generator: put it back where a fresh process has it, so a case sees
// the state it sees in a process of its own.
void reset_default_generator() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // shares the default's state
  generator.set_current_seed(c10::default_rng_seed_val);
}

// LibTorch's and the generator's first-use costs, paid once per worker instead of once
// per case: a generated program run eagerly (no pass runs here, so the pass under test
// cannot crash the worker). Whatever fails here only leaves the worker colder.
void warm_up(const CampaignOptions& options) {
  try {
    gen::GeneratedCase c = gen::generate_case(options.seed);
    std::vector<c10::IValue> inputs = exec::make_inputs(*c.graph, {c.input_seed, c.int_high});
    exec::Executor(*c.graph).run(inputs);
  } catch (const std::exception&) {
  }
  reset_default_generator();
}

// run_case, with an exception reported as spawn_child does (exit 3: a crash).
int run_case_body(const CaseSpec& spec, const CampaignOptions& options, const check::PassRegistry& registry,
                  const check::CountingRegistry& counting, check::Coverage* coverage) {
  try {
    return run_case(spec, options, registry, counting, coverage);
  } catch (const std::exception& e) {
    std::cerr << "passcheck: case process: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "passcheck: case process: unknown exception\n";
  }
  return 3;
}

int wait_for_pid(pid_t pid, int64_t timeout_ms, Answer& answer) {
  // pidfd: wake up the moment the grandchild ends, not at the next poll tick.
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  Clock::time_point start = Clock::now();
  int status = 0;
  while (true) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      answer.kind = static_cast<int32_t>(check::ChildOutcome::Kind::ForkFailed);
      if (pidfd >= 0) ::close(pidfd);
      return 0;
    }
    double left = static_cast<double>(timeout_ms) - ms_since(start);
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      answer.kind = static_cast<int32_t>(check::ChildOutcome::Kind::TimedOut);
      if (pidfd >= 0) ::close(pidfd);
      return 0;
    }
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min(left, 1000.0)) + 1);
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  if (WIFSIGNALED(status)) {
    answer.kind = static_cast<int32_t>(check::ChildOutcome::Kind::Signaled);
    answer.signal = WTERMSIG(status);
  } else {
    answer.kind = static_cast<int32_t>(check::ChildOutcome::Kind::Exited);
    answer.exit_code = WEXITSTATUS(status);
  }
  return 0;
}

[[noreturn]] void worker_main(int fd, pid_t campaign_pid, const CampaignOptions& options,
                              const check::PassRegistry& registry) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != campaign_pid) _exit(0);
  at::set_num_threads(1);
  warm_up(options);
  // Built once for every case of this worker (and inherited by its grandchildren).
  const check::CountingRegistry counting(registry);
  const bool persistent = options.isolation == Isolation::Persistent;
  CaseSpec spec;
  while (read_spec(fd, spec)) {
    if (persistent) {
      // The case runs here; a crash or hang takes this worker with it, and the campaign
      // reports the case and starts a new worker. Its decision counts come back with the
      // answer (no coverage file).
      reset_default_generator();
      Answer answer;
      check::Coverage coverage;
      answer.exit_code = run_case_body(spec, options, registry, counting, &coverage);
      std::cout.flush();
      std::cerr.flush();
      std::fflush(nullptr);
      std::string message(reinterpret_cast<const char*>(&answer), sizeof answer);
      put_string(message, coverage.empty() && coverage.refusals() == 0 ? std::string() : coverage.serialize());
      if (!write_exactly(fd, message.data(), message.size())) break;
      continue;
    }
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    Answer answer;
    pid_t worker = ::getpid();
    pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != worker) _exit(3);
      ::close(fd);
      check::Coverage coverage;  // unused: the case has its coverage file
      int code = run_case_body(spec, options, registry, counting, &coverage);
      std::cout.flush();
      std::cerr.flush();
      std::fflush(nullptr);
      _exit(code);  // no static destructors in a forked child
    }
    if (pid < 0) answer.kind = static_cast<int32_t>(check::ChildOutcome::Kind::ForkFailed);
    else wait_for_pid(pid, options.timeout_ms, answer);
    if (!write_exactly(fd, &answer, sizeof answer)) break;
  }
  _exit(0);
}

// ---------------------------------------------------------------- the server

class ForkServer : public CaseProcesses {
 public:
  ForkServer(const CampaignOptions& options, const check::PassRegistry& registry)
      : options_(options), registry_(registry) {
    workers_.resize(static_cast<size_t>(options.jobs));
    try {
      for (Worker& w : workers_) spawn(w);
    } catch (...) {
      shut_down();
      throw;
    }
  }
  ~ForkServer() override { shut_down(); }

  bool can_start() const override {
    return std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return !w.busy; });
  }

  size_t running() const override {
    return static_cast<size_t>(std::count_if(workers_.begin(), workers_.end(), [](const Worker& w) { return w.busy; }));
  }

  void start(const CaseSpec& spec) override {
    for (Worker& w : workers_) {
      if (w.busy) continue;
      if (w.pid < 0) spawn(w);
      w.spec = spec;
      w.start = Clock::now();
      w.busy = true;
      std::string message = serialize_spec(spec);
      if (!write_exactly(w.fd, message.data(), message.size())) {
        // Dead before it took the case: a new worker takes it instead.
        replace(w);
        w.spec = spec;
        w.start = Clock::now();
        w.busy = true;
        if (!write_exactly(w.fd, message.data(), message.size()))
          throw std::runtime_error("cannot hand a case to a fork-server worker");
      }
      return;
    }
    throw std::logic_error("fork server: start() without a free worker");
  }

  std::vector<EndedCase> wait(int wait_ms) override {
    std::vector<EndedCase> ended;
    std::vector<pollfd> fds;
    std::vector<Worker*> polled;
    // A worker kills its case's process at the time limit; one past the limit plus this
    // grace has stopped answering and is killed. A persistent worker runs the case
    // itself: it is killed at the limit.
    const double grace_ms = options_.isolation == Isolation::Persistent ? 0 : 5000;
    double wait = wait_ms;
    for (Worker& w : workers_) {
      if (!w.busy) continue;
      fds.push_back({w.fd, POLLIN, 0});
      polled.push_back(&w);
      wait = std::min(wait, static_cast<double>(options_.timeout_ms) + grace_ms - ms_since(w.start));
    }
    if (fds.empty()) return ended;
    int n = ::poll(fds.data(), fds.size(), std::max(0, static_cast<int>(wait) + 1));
    if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("fork server: poll failed: ") + std::strerror(errno));
    for (size_t i = 0; i < fds.size(); ++i) {
      Worker& w = *polled[i];
      check::ChildOutcome o;
      std::string coverage;
      if (fds[i].revents != 0) {
        Answer a;
        if (read_exactly(w.fd, &a, sizeof a) &&
            (options_.isolation != Isolation::Persistent || read_string(w.fd, coverage))) {
          o.kind = static_cast<check::ChildOutcome::Kind>(a.kind);
          o.exit_code = a.exit_code;
          o.signal = a.signal;
          w.busy = false;
          if (++w.cases >= kCasesPerPersistentWorker && options_.isolation == Isolation::Persistent)
            reap(w, /*kill_first=*/true);  // a fresh one takes the next case
        } else {
          // The worker itself died with the case: a crash of that case, and a new worker.
          int status = reap(w);
          o.kind = check::ChildOutcome::Kind::Signaled;
          o.signal = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
          if (!WIFSIGNALED(status)) {
            o.kind = check::ChildOutcome::Kind::Exited;
            o.exit_code = WEXITSTATUS(status) == 0 ? 3 : WEXITSTATUS(status);
          }
        }
      } else if (ms_since(w.start) > static_cast<double>(options_.timeout_ms) + grace_ms) {
        reap(w, /*kill_first=*/true);
        o.kind = check::ChildOutcome::Kind::TimedOut;
      } else {
        continue;
      }
      o.seconds = ms_since(w.start) / 1000.0;
      ended.push_back({w.spec, o, std::move(coverage)});
      w.busy = false;
    }
    return ended;
  }

  std::vector<CaseSpec> kill_all() override {
    std::vector<CaseSpec> specs;
    for (Worker& w : workers_)
      if (w.busy) specs.push_back(w.spec);
    shut_down();
    return specs;
  }

 private:
  struct Worker {
    pid_t pid = -1;
    int fd = -1;  ///< the campaign's end of the socketpair
    bool busy = false;
    int64_t cases = 0;  ///< cases answered
    CaseSpec spec;
    Clock::time_point start;
  };

  void spawn(Worker& w) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      throw std::runtime_error(std::string("cannot start a fork-server worker: socketpair: ") + std::strerror(errno));
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    pid_t campaign_pid = ::getpid();
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(sv[0]);
      for (const Worker& other : workers_)
        if (other.fd >= 0) ::close(other.fd);
      worker_main(sv[1], campaign_pid, options_, registry_);
    }
    ::close(sv[1]);
    if (pid < 0) {
      ::close(sv[0]);
      throw std::runtime_error("cannot start a fork-server worker (fork failed)");
    }
    w.pid = pid;
    w.fd = sv[0];
    w.busy = false;
    w.cases = 0;
  }

  // Closes the worker's socket and reaps it; returns its wait status.
  int reap(Worker& w, bool kill_first = false) {
    if (kill_first) ::kill(w.pid, SIGKILL);
    if (w.fd >= 0) ::close(w.fd);
    int status = 0;
    if (w.pid > 0) ::waitpid(w.pid, &status, 0);
    w.pid = -1;
    w.fd = -1;
    w.busy = false;
    return status;
  }

  void replace(Worker& w) {
    reap(w, /*kill_first=*/true);
    spawn(w);
  }

  void shut_down() {
    for (Worker& w : workers_)
      if (w.pid > 0) reap(w, /*kill_first=*/true);
  }

  const CampaignOptions& options_;
  const check::PassRegistry& registry_;
  std::vector<Worker> workers_;
};

}  // namespace

std::unique_ptr<CaseProcesses> per_case_processes(const CampaignOptions& options, const check::PassRegistry& registry) {
  return std::make_unique<PerCaseProcesses>(options, registry);
}

std::unique_ptr<CaseProcesses> fork_server_processes(const CampaignOptions& options, const check::PassRegistry& registry) {
  return std::make_unique<ForkServer>(options, registry);
}

}  // namespace passcheck::campaign
