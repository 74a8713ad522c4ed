// The local launcher (launcher.h): a store host, one child process per rank with its
// output on a pipe, and one supervision loop shared by launch_local and run_forked.
#include "framework/dist/launcher.h"

#include "framework/dist/process_group.h"

#include <ATen/Parallel.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace passcheck::dist {

namespace {

struct Child {
  int64_t rank = 0;
  pid_t pid = -1;
  int fd = -1;  // read end of the rank's pipe; -1 once at end of file
  std::string output;
  std::string partial_line;  // echoed output not yet ended by a newline
  bool exited = false;
  int status = 0;
  std::string killed_by_launcher;  // why the launcher killed it, if it did
};

std::string how_ended(const Child& c) {
  if (!c.killed_by_launcher.empty()) return c.killed_by_launcher;
  if (WIFSIGNALED(c.status)) return "killed by signal " + std::to_string(WTERMSIG(c.status));
  return "exited with code " + std::to_string(WEXITSTATUS(c.status));
}

bool ended_well(const Child& c) {
  return c.killed_by_launcher.empty() && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
}

// A free port of the loopback interface, for a store created after the ranks are forked.
int reserve_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("cannot open a socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("cannot reserve a loopback port: " + why);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A store the launcher hosts on the loopback interface: on `port`, or on a free port the
// kernel picks (port 0; getPort() reports it).
c10::intrusive_ptr<c10d::TCPStore> host_store(std::chrono::milliseconds timeout, int port = 0) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(port);
  options.isServer = true;
  options.numWorkers = c10::nullopt;
  options.waitWorkers = false;
  options.timeout = std::max(timeout, kMinimumStoreTimeout);
  return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
}

void echo_lines(Child& c, const char* data, size_t n) {
  c.partial_line.append(data, n);
  size_t start = 0, newline;
  while ((newline = c.partial_line.find('\n', start)) != std::string::npos) {
    std::cout << "[rank " << c.rank << "] " << c.partial_line.substr(start, newline - start) << "\n";
    start = newline + 1;
  }
  c.partial_line.erase(0, start);
  std::cout.flush();
}

// Reads the children's pipes and reaps them until every child has exited and every pipe
// is drained. The first rank to end badly is recorded in the store (as every other that
// dies) and starts the clock: who is still running timeout + grace later is killed.
void supervise(std::vector<Child>& children, c10d::Store& store, const LaunchOptions& options, bool echo) {
  std::optional<std::chrono::steady_clock::time_point> kill_at;
  std::string first_failure;
  auto all_done = [&] {
    for (const Child& c : children)
      if (!c.exited || c.fd >= 0) return false;
    return true;
  };
  while (!all_done()) {
    std::vector<pollfd> fds;
    for (const Child& c : children)
      if (c.fd >= 0) fds.push_back(pollfd{c.fd, POLLIN, 0});
    if (!fds.empty()) ::poll(fds.data(), fds.size(), 20);
    else ::usleep(20000);
    for (Child& c : children) {
      if (c.fd < 0) continue;
      pollfd p{c.fd, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) continue;
      char buffer[4096];
      ssize_t n = ::read(c.fd, buffer, sizeof buffer);
      if (n > 0) {
        c.output.append(buffer, static_cast<size_t>(n));
        if (echo) echo_lines(c, buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(c.fd);
        c.fd = -1;
        if (echo && !c.partial_line.empty()) echo_lines(c, "\n", 1);
      }
    }
    for (Child& c : children) {
      if (c.exited || ::waitpid(c.pid, &c.status, WNOHANG) != c.pid) continue;
      c.exited = true;
      if (ended_well(c)) continue;
      std::string reason = how_ended(c);
      try {
        store.set(dead_rank_key(c.rank), std::vector<uint8_t>(reason.begin(), reason.end()));
      } catch (const std::exception&) {
        // The store is our own; if it fails the ranks still time out and name the rank.
      }
      if (!kill_at) {
        kill_at = std::chrono::steady_clock::now() + options.timeout + options.grace;
        first_failure = "rank " + std::to_string(c.rank) + " " + reason;
      }
    }
    if (kill_at && std::chrono::steady_clock::now() >= *kill_at) {
      for (Child& c : children)
        if (!c.exited && c.killed_by_launcher.empty()) {
          c.killed_by_launcher = "killed by the launcher: still running " +
                                 std::to_string((options.timeout + options.grace).count()) + " ms after " +
                                 first_failure;
          ::kill(c.pid, SIGKILL);
        }
    }
  }
}

// Starts a child for `rank` whose stdout (and stderr when `with_stderr`) go to a pipe;
// in the child, runs `child_main` (which must not return).
Child spawn(int64_t rank, bool with_stderr, const std::function<void(int write_fd)>& child_main) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("launcher: pipe failed: " + std::string(std::strerror(errno)));
  std::fflush(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error("launcher: fork failed: " + std::string(std::strerror(errno)));
  }
  if (pid == 0) {
    // A rank must not outlive its launcher.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::close(fds[0]);
    if (with_stderr) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::dup2(fds[1], STDERR_FILENO);
      ::close(fds[1]);
      child_main(STDOUT_FILENO);
    } else {
      child_main(fds[1]);
    }
    ::_exit(1);
  }
  ::close(fds[1]);
  Child c;
  c.rank = rank;
  c.pid = pid;
  c.fd = fds[0];
  return c;
}

}  // namespace

std::vector<LaunchOutcome> launch_local(const std::vector<std::string>& argv, int64_t world_size,
                                        const LaunchOptions& options) {
  if (argv.empty()) throw std::invalid_argument("launch: no command to run");
  if (world_size < 1) throw std::invalid_argument("launch: world size " + std::to_string(world_size) + " is not >= 1");
  auto store = host_store(options.timeout);
  const std::string port = std::to_string(store->getPort());
  std::vector<Child> children;
  for (int64_t rank = 0; rank < world_size; ++rank) {
    // Built before the fork: the child only calls async-signal-safe functions.
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      std::string entry = *e;
      std::string name = entry.substr(0, entry.find('='));
      if (name != "RANK" && name != "WORLD_SIZE" && name != "LOCAL_RANK" && name != "MASTER_ADDR" &&
          name != "MASTER_PORT" && name != "TORCHELASTIC_USE_AGENT_STORE" && name != "PASSCHECK_DIST_TIMEOUT_MS")
        env.push_back(entry);
    }
    env.push_back("RANK=" + std::to_string(rank));
    env.push_back("WORLD_SIZE=" + std::to_string(world_size));
    env.push_back("LOCAL_RANK=" + std::to_string(rank));
    env.push_back("MASTER_ADDR=127.0.0.1");
    env.push_back("MASTER_PORT=" + port);
    env.push_back("TORCHELASTIC_USE_AGENT_STORE=True");
    env.push_back("PASSCHECK_DIST_TIMEOUT_MS=" + std::to_string(options.timeout.count()));
    std::vector<char*> envp, args;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (std::string& a : argv_copy) args.push_back(a.data());
    args.push_back(nullptr);
    std::string exec_failed = "launch: cannot run " + argv[0] + "\n";
    children.push_back(spawn(rank, true, [&](int) {
      // The store's sockets and any other inherited descriptor stay with the launcher.
      for (int fd = 3; fd < 1024; ++fd) ::close(fd);
      ::execvpe(args[0], args.data(), envp.data());
      ssize_t ignored = ::write(STDERR_FILENO, exec_failed.data(), exec_failed.size());
      (void)ignored;
      ::_exit(127);
    }));
  }
  supervise(children, *store, options, options.echo_output);
  std::vector<LaunchOutcome> outcomes;
  for (const Child& c : children) {
    LaunchOutcome o;
    o.rank = c.rank;
    o.ok = ended_well(c);
    o.exit_code = WIFEXITED(c.status) && c.killed_by_launcher.empty() ? WEXITSTATUS(c.status) : -1;
    o.signal = WIFSIGNALED(c.status) ? WTERMSIG(c.status) : 0;
    o.how_ended = how_ended(c);
    o.output = c.output;
    outcomes.push_back(std::move(o));
  }
  return outcomes;
}

namespace {

// A forked rank: reports "ok" or "error:<message>" on `report_fd` and ends the process
// without running destructors (the parent's threads and sockets are not ours).
[[noreturn]] void run_rank_in_child(const std::shared_ptr<const DeviceMesh>& mesh, int64_t rank,
                                    const std::function<void(int64_t)>& body, int port, const LaunchOptions& options,
                                    int report_fd) {
  // The parent's intra-op thread pool did not survive the fork.
  at::set_num_threads(1);
  std::string report;
  try {
    RendezvousInfo info;
    info.rank = rank;
    info.world_size = mesh->world_size();
    info.local_rank = rank;
    info.master_addr = "127.0.0.1";
    info.master_port = port;
    info.agent_store = true;
    info.timeout = options.timeout;
    // Never destroyed: the process ends with _exit below.
    auto* communicator = new ProcessGroupCommunicator(info, options.backend);
    try {
      RankScope scope(RankContext{mesh, rank, communicator});
      body(rank);
      communicator->wait_all();
      communicator->mark_stopped("finished its run");
      report = "ok";
    } catch (const std::exception& e) {
      communicator->mark_stopped("failed (" + exception_message(e) + ")");
      report = "error:" + exception_message(e);
    }
  } catch (const std::exception& e) {
    report = "error:" + exception_message(e);
  } catch (...) {
    report = "error:unknown exception";
  }
  for (size_t written = 0; written < report.size();) {
    ssize_t n = ::write(report_fd, report.data() + written, report.size() - written);
    if (n <= 0 && errno != EINTR) break;
    if (n > 0) written += static_cast<size_t>(n);
  }
  std::fflush(nullptr);
  ::_exit(report == "ok" ? 0 : 1);
}

}  // namespace

std::vector<RankOutcome> run_forked(const DeviceMesh& mesh, const std::function<void(int64_t rank)>& body,
                                    const LaunchOptions& options) {
  auto shared_mesh = std::make_shared<const DeviceMesh>(mesh);
  // The ranks are forked before the store exists: its server threads resolve addresses,
  // and a child forked while one of them holds the C library's resolver lock would block
  // forever at its first connect. The children retry until the store is up.
  const int port = reserve_loopback_port();
  std::vector<Child> children;
  for (int64_t rank = 0; rank < mesh.world_size(); ++rank)
    children.push_back(spawn(rank, false, [&](int report_fd) {
      run_rank_in_child(shared_mesh, rank, body, port, options, report_fd);
    }));
  auto store = host_store(options.timeout, port);
  supervise(children, *store, options, false);
  std::vector<RankOutcome> outcomes;
  for (const Child& c : children) {
    RankOutcome o;
    o.rank = c.rank;
    o.ok = ended_well(c) && c.output == "ok";
    if (c.output.rfind("error:", 0) == 0) o.error = c.output.substr(6);
    else if (!o.ok) o.error = c.killed_by_launcher.empty() ? "died (" + how_ended(c) + ")" : c.killed_by_launcher;
    outcomes.push_back(std::move(o));
  }
  return outcomes;
}

}  // namespace passcheck::dist
