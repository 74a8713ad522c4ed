// The "python" pass (python_pass.h). Each run is one worker: the graph goes out as a
// Python file, the result comes back as graph text, and the worker's exit status says
// whose fault a failure is (worker_failure). The worker is a fork of the campaign's
// server (PythonServer, over a Unix socket) when there is one, else a process of its
// own; either dies with its case (the fork on the socket's hang-up, the process by
// PR_SET_PDEATHSIG), so a fuzz case that times out leaves no Python behind. Nor does
// anything the pass starts: workers run in a session of their own, the process starting
// them is a child subreaper, and a worker's end kills its group and every stray
// descendant (reap_descendants).
#include "workflows/python_bridge/python_pass.h"

#include "framework/check/isolation.h"
#include "framework/check/pipeline.h"
#include "workflows/python_bridge/python_writer.h"
#include "framework/io/files.h"
#include "framework/ir/text.h"
#include "passes/partition/save_all.h"

#include <dirent.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>


namespace passcheck::python_bridge {

namespace {

namespace fs = std::filesystem;

// Where case processes find the campaign's fork server (PythonServer).
constexpr const char* kServerEnv = "PASSCHECK_PYTHON_SERVER";

// The workers and servers this process runs now: reap_descendants spares them (and what
// they started) when another worker of this process ends meanwhile (a thread's).
std::mutex& live_workers_mutex() {
  static std::mutex m;
  return m;
}
std::set<pid_t>& live_workers() {
  static std::set<pid_t> pids;
  return pids;
}
void set_live(pid_t pid, bool live) {
  std::lock_guard<std::mutex> lock(live_workers_mutex());
  if (live) live_workers().insert(pid);
  else live_workers().erase(pid);
}

// The worker's exit statuses (python/passcheck_fx/pass_worker.py); kWorkerVanished: a
// server's fork that hung up without an answer (it crashed).
enum WorkerExit : int {
  kWorkerOk = 0,
  kWorkerBadSpec = 2,
  kWorkerPassRaised = 3,
  kWorkerBadResult = 4,
  kWorkerBadGraph = 5,
  kWorkerCannotServe = 6,
  kWorkerNotHandedOver = 7,
  kWorkerVanished = 1000
};

// The interpreter that runs Python passes: PASSCHECK_PYTHON in the environment, else
// `python3` on PATH (an activated virtual environment's). Its torch must be the release
// this binary's LibTorch is, for graphs to mean the same operators.
std::string python_interpreter() {
  const char* v = std::getenv("PASSCHECK_PYTHON");
  return v && *v ? v : "python3";
}

// The directory holding passcheck_fx: PASSCHECK_PYTHON_DIR in the environment, else
// share/passcheck/python next to the binary's bin/ (where `cmake --install` puts it, and
// where the build tree links the source's python/), so an installed passcheck needs no
// checkout.
std::string passcheck_python_dir() {
  if (const char* v = std::getenv("PASSCHECK_PYTHON_DIR"); v && *v) return v;
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  const fs::path dir = exe.parent_path().parent_path() / "share" / "passcheck" / "python";
  if (!error && fs::is_regular_file(dir / "passcheck_fx" / "__init__.py", error)) return dir.string();
  throw std::invalid_argument("the Python package passcheck_fx is not in " + dir.string() +
                              " (installed beside this binary by `cmake --install`); set PASSCHECK_PYTHON_DIR to "
                              "the directory that holds it");
}

struct WorkerRun {
  check::ChildOutcome outcome;
  std::string log;  ///< the worker's stdout and stderr
};

// A scratch directory removed when it goes out of scope.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "passcheck-python-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw io::FileError("cannot create a scratch directory under " + pattern);
    path = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// Starts `python -m passcheck_fx.pass_worker ARGS` with its output in `log_path`;
// returns its pid (-1 when fork fails). The worker dies with this process, and leads a
// session (so a process group) of its own: what it starts can be killed as a group and
// can never join this process's group, whose members reap_descendants spares.
pid_t spawn_worker(std::vector<std::string> args, const std::string& python_path, const fs::path& log_path) {
  std::string pythonpath = passcheck_python_dir();
  if (!python_path.empty()) pythonpath = python_path + ":" + pythonpath;
  if (const char* inherited = std::getenv("PYTHONPATH"); inherited && *inherited) pythonpath += std::string(":") + inherited;
  args.insert(args.begin(), {python_interpreter(), "-m", "passcheck_fx.pass_worker"});
  const pid_t parent = ::getpid();
  return check::spawn_child([&]() -> int {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) return 127;
    ::setsid();
    FILE* log = std::fopen(log_path.c_str(), "w");
    if (!log) return 127;
    ::dup2(fileno(log), 1);
    ::dup2(fileno(log), 2);
    ::setenv("PYTHONPATH", pythonpath.c_str(), 1);
    ::setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());  // "python3" is looked up on PATH
    std::fprintf(stderr, "cannot run %s: %s\n", argv[0], std::strerror(errno));
    return 127;
  });
}

std::string read_log(const fs::path& log_path) {
  try {
    return io::read_file(log_path.string(), "Python worker log");
  } catch (const std::exception&) {
    return "";
  }
}

// Whether the child `pid` has ended, without reaping it (its pid, so its process group's
// id, stays ours until poll_child reaps it).
bool child_ended(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == pid;
}

// Ends a worker: its process group killed (what it started and left in it), the worker
// reaped into `outcome` (unless `timed_out`: then killed first), then every stray
// descendant of this process killed (daemons that left the group), the server spared.
void end_worker(pid_t pid, check::ChildOutcome& outcome, bool timed_out) {
  ::kill(-pid, SIGKILL);
  if (timed_out) {
    check::kill_child(pid);
    outcome.kind = check::ChildOutcome::Kind::TimedOut;
  } else {
    check::poll_child(pid, outcome);
  }
  set_live(pid, false);
  reap_descendants();
}

WorkerRun run_worker(std::vector<std::string> args, const std::string& python_path, const fs::path& log_path,
                     int64_t timeout_ms) {
  become_subreaper();  // what the pass abandons is reparented here, where end_worker finds it
  pid_t pid = spawn_worker(std::move(args), python_path, log_path);
  WorkerRun run;
  if (pid < 0) {
    run.outcome.kind = check::ChildOutcome::Kind::ForkFailed;
    return run;
  }
  set_live(pid, true);
  auto start = std::chrono::steady_clock::now();
  bool timed_out = false;
  while (!child_ended(pid)) {
    auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    if (timeout_ms > 0 && elapsed.count() > timeout_ms) {
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  end_worker(pid, run.outcome, timed_out);
  run.log = read_log(log_path);
  return run;
}

// One request to the campaign's fork server (PythonServer); nullopt when it cannot be
// reached (the caller then starts a worker of its own).
std::optional<WorkerRun> run_via_server(const std::string& socket_path, const nlohmann::json& request,
                                        const fs::path& log_path, int64_t timeout_ms) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) return std::nullopt;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  const std::string line = request.dump() + "\n";
  for (size_t sent = 0; sent < line.size();) {
    ssize_t n = ::send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      ::close(fd);
      return std::nullopt;
    }
    sent += static_cast<size_t>(n);
  }
  WorkerRun run;
  std::string reply;
  auto start = std::chrono::steady_clock::now();
  bool timed_out = false;
  while (reply.find('\n') == std::string::npos) {
    int64_t left = 200;
    if (timeout_ms > 0) {
      auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      left = timeout_ms - elapsed.count();
      if (left <= 0) {
        timed_out = true;
        break;
      }
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 200))) <= 0) continue;
    char buf[64];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;  // the server's child died without answering
    reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);  // a child still running sees the hang-up and exits
  if (timed_out) {
    run.outcome.kind = check::ChildOutcome::Kind::TimedOut;
  } else if (reply.find('\n') == std::string::npos) {
    run.outcome.exit_code = kWorkerVanished;
  } else {
    run.outcome.exit_code = std::atoi(reply.c_str());
  }
  run.log = read_log(log_path);
  return run;
}

// The last lines of the worker's output, indented, for a failure message.
std::string log_tail(const std::string& log) {
  size_t start = log.size(), lines = 0;
  while (start > 0 && lines < 12) {
    start = log.rfind('\n', start - 1);
    if (start == std::string::npos) {
      start = 0;
      break;
    }
    ++lines;
  }
  std::string tail = log.substr(start);
  while (!tail.empty() && (tail.front() == '\n')) tail.erase(0, 1);
  while (!tail.empty() && (tail.back() == '\n')) tail.pop_back();
  if (tail.empty()) return "";
  std::string out;
  size_t pos = 0;
  while (pos <= tail.size()) {
    size_t end = tail.find('\n', pos);
    if (end == std::string::npos) end = tail.size();
    out += "\n    " + tail.substr(pos, end - pos);
    pos = end + 1;
  }
  return out;
}

std::string worker_failure(const std::string& spec, const WorkerRun& run, int64_t timeout_ms) {
  const check::ChildOutcome& o = run.outcome;
  std::string what;
  if (o.kind != check::ChildOutcome::Kind::Exited) {
    what = "the Python worker " + o.describe(timeout_ms);
  } else {
    switch (o.exit_code) {
      case kWorkerBadSpec: what = "cannot import the Python pass"; break;
      case kWorkerPassRaised: what = "the Python pass raised an exception"; break;
      case kWorkerBadResult: what = "the Python pass's result cannot be exported back to passcheck"; break;
      case kWorkerBadGraph: what = "the Python worker could not rebuild the graph"; break;
      case 127: what = "cannot start the Python worker (" + python_interpreter() + ")"; break;
      case kWorkerVanished: what = "the Python worker died without an answer"; break;
      default: what = "the Python worker ended with " + o.describe(timeout_ms);
    }
  }
  return "python pass " + spec + ": " + what + log_tail(run.log);
}

// Replaces `graph`'s nodes and outputs with those of `result`, whose inputs must be
// `graph`'s in kind and type, position by position (a pass rewrites the computation,
// never the signature).
void adopt_result(ir::Graph& graph, const ir::Graph& result, const std::string& spec) {
  if (result.inputs().size() != graph.inputs().size())
    throw std::runtime_error("python pass " + spec + " returned a graph with " + std::to_string(result.inputs().size()) +
                             " inputs; the graph has " + std::to_string(graph.inputs().size()));
  std::map<const ir::Value*, ir::Value*> map;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const ir::Value* got = result.inputs()[i];
    ir::Value* want = graph.inputs()[i];
    // Names may differ (an exporter may spell "fc1.weight" as fx's "fc1_weight"): inputs
    // match by position, and the graph keeps its own names.
    if (got->role() != want->role() || ir::print_type(*got) != ir::print_type(*want))
      throw std::runtime_error("python pass " + spec + " changed input " + std::to_string(i) + ": " +
                               ir::to_string(want->role()) + " %" + want->name() + " : " + ir::print_type(*want) +
                               " came back as " + ir::to_string(got->role()) + " %" + got->name() + " : " +
                               ir::print_type(*got));
    map[got] = want;
  }
  std::vector<ir::Node*> old_nodes = graph.node_list();
  std::vector<std::pair<ir::Value*, std::string>> names;
  for (const ir::Node* node : result.nodes()) {
    ir::Node* copy = graph.clone_node(*node, [&](ir::Value* v) { return map.at(v); });
    for (size_t i = 0; i < node->num_outputs(); ++i) {
      map[node->output(i)] = copy->output(i);
      names.emplace_back(copy->output(i), node->output(i)->name());
    }
  }
  const size_t old_outputs = graph.outputs().size();
  for (size_t i = 0; i < result.outputs().size(); ++i) {
    if (i < old_outputs) graph.set_output(i, map.at(result.outputs()[i]));
    else graph.add_output(map.at(result.outputs()[i]));
  }
  if (result.outputs().size() != old_outputs)
    throw std::runtime_error("python pass " + spec + " returned " + std::to_string(result.outputs().size()) +
                             " outputs; the graph has " + std::to_string(old_outputs));
  for (auto it = old_nodes.rbegin(); it != old_nodes.rend(); ++it) graph.erase(*it);
  for (auto& [value, name] : names)
    if (value->name() != name) graph.rename(value, name);
}

// Runs the Python pass of `options` on `graph` in a worker; returns the text it wrote
// (graph text, or module text for a partitioner), or nullopt when the graph has no Python
// form (then `skipped` says why: not the pass's fault, the graph is left alone).
std::optional<std::string> run_in_worker(const ir::Graph& graph, const check::PassOptions& options,
                                         check::PassResult& skipped) {
  const std::string spec = options.get("pass");
  const int64_t timeout_ms = options.get_int("timeout-ms");
  ScratchDir scratch;
  const fs::path case_py = scratch.path / "case.py", after = scratch.path / "after.graph",
                 log = scratch.path / "worker.log";
  std::string case_text;
  try {
    case_text = write_python_graph(graph, "the graph given to python pass " + spec);
  } catch (const PythonWriteError& e) {
    // A graph with no Python form (a collective, grouped_mm, a symbolic shape).
    skipped.stats["graphs_without_python_form"] = 1;
    skipped.notes.push_back(std::string("not run: ") + e.what());
    return std::nullopt;
  }
  io::write_file(case_py.string(), case_text, "Python case file");
  std::optional<WorkerRun> served;
  if (const char* server = std::getenv(kServerEnv); server && *server) {
    nlohmann::json request = {{"pass", spec},         {"path", options.get("path")}, {"graph", case_py.string()},
                              {"out", after.string()}, {"log", log.string()},        {"hand_over", options.get("hand-over")}};
    served = run_via_server(server, request, log, timeout_ms);
  }
  WorkerRun run = served ? *served
                         : run_worker({"--pass", spec, "--graph", case_py.string(), "--out", after.string(),
                                       "--hand-over", options.get("hand-over")},
                                      options.get("path"), log, timeout_ms);
  if (run.outcome.kind == check::ChildOutcome::Kind::Exited && run.outcome.exit_code == kWorkerNotHandedOver) {
    // Not a case the pass's caller would hand it (an inductor pass takes functional
    // graphs): left alone, and said so, rather than blamed on the pass.
    skipped.stats["graphs_not_handed_over"] = 1;
    const size_t at = run.log.find("not handed over");
    const std::string why = at == std::string::npos ? "not handed over: not a case its caller would hand it"
                                                    : run.log.substr(at, run.log.find('\n', at) - at);
    skipped.notes.push_back("not run: " + why);
    return std::nullopt;
  }
  if (run.outcome.kind != check::ChildOutcome::Kind::Exited || run.outcome.exit_code != kWorkerOk)
    throw std::runtime_error(worker_failure(spec, run, timeout_ms));
  if (!fs::exists(after))  // exit 0 without a result: the pass ended the process itself (os._exit)
    throw std::runtime_error("python pass " + spec + ": the Python worker ended (exit 0) without writing the "
                             "pass's result: the pass ended the process" + log_tail(run.log));
  return io::read_file(after.string(), "Python pass result");
}

check::PassResult run_python_pass(ir::Graph& graph, const check::PassOptions& options) {
  const std::string spec = options.get("pass");
  check::PassResult out;
  std::optional<std::string> text = run_in_worker(graph, options, out);
  if (!text) return out;
  std::unique_ptr<ir::Graph> result;
  try {
    result = ir::parse_graph(*text, "the graph python pass " + spec + " returned");
  } catch (const std::exception& e) {
    throw std::runtime_error("python pass " + spec + ": its exported result does not parse: " + e.what());
  }
  const uint64_t before = graph.hash();
  adopt_result(graph, *result, spec);
  out.changed = graph.hash() != before;
  out.stats["nodes_after"] = static_cast<int64_t>(graph.num_nodes());
  return out;
}

// The module a Python partitioner returned must take the joint's inputs (by position,
// kind and type: an exporter may respell names) and return as many results.
void check_partitioned_signature(const ir::Graph& joint, const ir::Module& module, const std::string& spec) {
  const std::string who = "python partitioner " + spec;
  if (module.input_names.size() != joint.inputs().size())
    throw std::runtime_error(who + " returned a module with " + std::to_string(module.input_names.size()) +
                             " inputs; the joint graph has " + std::to_string(joint.inputs().size()));
  if (module.outputs.size() != joint.outputs().size())
    throw std::runtime_error(who + " returned a module with " + std::to_string(module.outputs.size()) +
                             " results; the joint graph has " + std::to_string(joint.outputs().size()));
  for (const ir::ModulePart& part : module.parts) {
    for (size_t i = 0; i < part.graph->inputs().size(); ++i) {
      if (part.input_sources.at(i)) continue;  // linked to an earlier part: the verifier checks it
      const ir::Value* got = part.graph->inputs()[i];
      auto at = std::find(module.input_names.begin(), module.input_names.end(), got->name());
      if (at == module.input_names.end()) continue;  // parse_module already refuses this
      const ir::Value* want = joint.inputs()[static_cast<size_t>(at - module.input_names.begin())];
      if (got->role() != want->role() || ir::print_type(*got) != ir::print_type(*want))
        throw std::runtime_error(who + " changed input " + std::to_string(at - module.input_names.begin()) + ": " +
                                 ir::to_string(want->role()) + " %" + want->name() + " : " + ir::print_type(*want) +
                                 " came back as " + ir::to_string(got->role()) + " %" + got->name() + " : " +
                                 ir::print_type(*got) + " in part " + part.name);
    }
  }
}

check::PassResult run_python_partitioner(ir::Module& module, const check::PassOptions& options) {
  const std::string spec = options.get("pass");
  const ir::Graph& joint = passes::single_joint_part(module, "python-partitioner");
  check::PassResult out;
  std::optional<std::string> text = run_in_worker(joint, options, out);
  if (!text) return out;
  ir::Module result;
  try {
    result = ir::parse_module(*text, "the module python partitioner " + spec + " returned");
  } catch (const std::exception& e) {
    throw std::runtime_error("python partitioner " + spec + ": its exported result does not parse: " + e.what());
  }
  check_partitioned_signature(joint, result, spec);
  module = std::move(result);
  out.changed = true;
  out.stats["parts"] = static_cast<int64_t>(module.parts.size());
  if (module.parts.size() > 1) out.stats["saved_bytes"] = module.linked_bytes(0);
  return out;
}

void check_spec_syntax(const std::string& spec) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size() || spec.find(':', colon + 1) != std::string::npos)
    throw std::invalid_argument("python pass '" + spec + "': expected MODULE:FUNCTION (e.g. my_passes:dce)");
}

}  // namespace

void register_python_pass(check::PassRegistry& registry) {
  check::PassInfo info(
      "python",
      "A Python pass (MODULE:FUNCTION over a torch.fx GraphModule) run in a worker process; passcheck fuzz --python-pass",
      {
          {"pass", "MODULE:FUNCTION of the Python pass", "", {}, check_spec_syntax},
          {"path", "Directory added to the worker's import path (absolute)", "", {}, nullptr},
          {"timeout-ms", "Kill the worker after this long", "60000", {}, check::option_checks::integer_in(1, 3600000)},
          {"hand-over",
           "What the pass is handed: caller (what its real caller gives: meta[\"val\"] FakeTensors from one fake "
           "mode, stack traces, the caller's context) or bare (tensor_meta only, no context)",
           kHandOverCaller,
           {kHandOverCaller, kHandOverBare},
           nullptr},
          {"tolerance-ulp",
           "Declared tolerance: results may differ from the original by at most this many ULP, reported apart from "
           "bitwise (0: bit for bit, the default)",
           "0",
           {},
           check::option_checks::integer_in(0, 1000000000)},
      },
      check::NumericsEffect::Preserves, /*idempotent=*/false);
  registry.add(info, run_python_pass);
  // The same worker for a pass marked passcheck_fx.partitioner: it returns a module.
  check::PassInfo partitioner(kPythonPartitionerPass,
                              "A Python partitioner (MODULE:FUNCTION marked passcheck_fx.partitioner: the joint graph as "
                              "a torch.fx GraphModule in, a forward and a backward part out) run in a worker process",
                              info.options, check::NumericsEffect::Preserves, /*idempotent=*/false);
  registry.add_module_pass(std::move(partitioner), run_python_partitioner);
}

std::string python_pass_pipeline(const std::string& spec, const std::string& python_path, bool partitioner,
                                 const std::string& hand_over, int64_t tolerance_ulp) {
  check_spec_syntax(spec);
  std::string path;
  if (!python_path.empty()) {
    if (!fs::is_directory(python_path))
      throw std::invalid_argument("--python-path '" + python_path + "' is not a directory");
    path = fs::absolute(python_path).lexically_normal().string();
  }
  check::PassInvocation inv;
  inv.name = partitioner ? kPythonPartitionerPass : "python";
  inv.options["pass"] = spec;
  if (!path.empty()) inv.options["path"] = path;
  if (hand_over != kHandOverCaller) {
    if (hand_over != kHandOverBare)
      throw std::invalid_argument("--python-hand-over " + hand_over + ": expected caller or bare");
    inv.options["hand-over"] = hand_over;
  }
  if (tolerance_ulp < 0 || tolerance_ulp > 1000000000)
    throw std::invalid_argument("--python-tolerance-ulp " + std::to_string(tolerance_ulp) + ": expected 0 to 10^9");
  if (tolerance_ulp > 0) inv.options["tolerance-ulp"] = std::to_string(tolerance_ulp);
  return inv.str();
}

namespace {

int64_t import_limit(int64_t timeout_ms) { return timeout_ms > 0 ? timeout_ms : kDefaultImportTimeoutMs; }

// The worker's kind line (pass_worker.py's _say_kind), printed by `--check` and by a server
// before it listens.
bool says_partitioner(const std::string& log) {
  return log.find("passcheck-pass-kind: partitioner") != std::string::npos;
}

// Why importing the pass failed, naming the module and what happened; `run` is the
// worker's (or the server's) run, `log` what it printed.
std::string import_failure_message(const std::string& spec, const std::string& python_path, const WorkerRun& run,
                                   int64_t timeout_ms) {
  const std::string module = spec.substr(0, spec.find(':'));
  const std::string where = python_path.empty() ? "the default import path" : "'" + python_path + "'";
  const check::ChildOutcome& o = run.outcome;
  std::string what;
  if (o.kind == check::ChildOutcome::Kind::TimedOut) {
    what = "importing it did not finish within " + std::to_string(timeout_ms) +
           " ms (the --timeout-ms limit); an import that hangs cannot be fuzzed";
  } else if (o.kind == check::ChildOutcome::Kind::Exited && (o.exit_code == kWorkerBadSpec || o.exit_code == 127)) {
    return worker_failure(spec, run, timeout_ms);  // the worker's own words name the module and the exception
  } else if (o.kind == check::ChildOutcome::Kind::Exited) {
    what = "the worker importing it ended with exit " + std::to_string(o.exit_code) +
           " before it could say what the pass is (the module ends the process when imported: os._exit, "
           "a signal handler, ...)";
  } else {
    what = "the worker importing it " + o.describe(timeout_ms);
  }
  return "python pass " + spec + ": cannot import module '" + module + "' from " + where + ": " + what +
         log_tail(run.log);
}

}  // namespace

bool check_python_pass(const std::string& spec, const std::string& python_path, int64_t timeout_ms) {
  check_spec_syntax(spec);
  timeout_ms = import_limit(timeout_ms);
  ScratchDir scratch;
  WorkerRun run = run_worker({"--pass", spec, "--check"}, python_path, scratch.path / "worker.log", timeout_ms);
  // A worker that exits 0 without the kind line did not finish: the module's import ended
  // the process (sys.exit is caught and reported by the worker itself, os._exit is not).
  const bool answered = run.log.find("passcheck-pass-kind: ") != std::string::npos;
  if (run.outcome.kind == check::ChildOutcome::Kind::Exited && run.outcome.exit_code == kWorkerOk && answered)
    return says_partitioner(run.log);
  throw std::invalid_argument(import_failure_message(spec, python_path, run, timeout_ms));
}

PythonServer::PythonServer(const std::string& spec, const std::string& python_path, int64_t start_timeout_ms) {
  start_timeout_ms = import_limit(start_timeout_ms);
  // Under /tmp, not $TMPDIR: a Unix socket path must fit in 108 bytes.
  char pattern[] = "/tmp/passcheck-pyserver-XXXXXX";
  if (!::mkdtemp(pattern)) return;
  dir_ = pattern;
  const std::string socket_path = dir_ + "/s";
  const fs::path log_path = fs::path(dir_) / "server.log";
  become_subreaper();  // what a pass abandons in a fork of the server comes back here
  pid_ = spawn_worker({"--pass", spec, "--serve", socket_path}, python_path, log_path);
  if (pid_ < 0) return;
  set_live(pid_, true);
  // Ready when the socket appears. A server that exits first, or passes the time limit,
  // is not used: its import failed (import_failure_), or it could not serve (each case
  // then starts its own worker).
  auto start = std::chrono::steady_clock::now();
  WorkerRun ended;
  while (!fs::exists(socket_path)) {
    const bool exited = child_ended(pid_);
    const bool late = std::chrono::steady_clock::now() - start > std::chrono::milliseconds(start_timeout_ms);
    if (exited || late) {
      end_worker(pid_, ended.outcome, /*timed_out=*/!exited);
      pid_ = -1;
      ended.log = read_log(log_path);
      // A server that cannot listen on its socket says so (kWorkerCannotServe): cases then
      // start their own workers. Any other end before listening is the import's doing:
      // exit 2 with the worker's message, any other exit or signal, or the time limit.
      const bool cannot_serve =
          ended.outcome.kind == check::ChildOutcome::Kind::Exited && ended.outcome.exit_code == kWorkerCannotServe;
      if (!cannot_serve) import_failure_ = import_failure_message(spec, python_path, ended, start_timeout_ms);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // The server prints the pass's kind (and flushes it) before its socket appears.
  partitioner_ = says_partitioner(read_log(log_path));
  ::setenv(kServerEnv, socket_path.c_str(), 1);
}

PythonServer::~PythonServer() {
  if (pid_ > 0) {
    ::unsetenv(kServerEnv);
    ::kill(-pid_, SIGKILL);  // the server and the forks serving requests: one process group
    check::kill_child(pid_);
    set_live(pid_, false);
    reap_descendants();  // what their passes abandoned (reparented here: a subreaper)
  }
  std::error_code ignored;
  if (!dir_.empty()) fs::remove_all(dir_, ignored);
}

std::vector<PythonPassUse> python_passes_of(const std::string& pipeline, const check::PassRegistry& registry) {
  std::vector<PythonPassUse> uses;
  for (const check::PassInvocation& inv : check::parse_pipeline(pipeline, registry)) {
    if (inv.name != "python" && inv.name != kPythonPartitionerPass) continue;
    check::PassOptions options(registry.get(inv.name).info, inv.options);
    uses.push_back({inv.name, options.get("pass"), options.get("path"), inv.str()});
  }
  return uses;
}

std::unique_ptr<PythonServer> serve_python_pass_of(const std::string& pipeline, const check::PassRegistry& registry,
                                                   int64_t timeout_ms) {
  std::vector<PythonPassUse> uses = python_passes_of(pipeline, registry);
  if (uses.empty()) return nullptr;
  auto server = std::make_unique<PythonServer>(uses.front().spec, uses.front().path, timeout_ms);
  if (!server->running()) {
    if (!server->import_failure().empty()) throw std::invalid_argument(server->import_failure());
    check_python_pass(uses.front().spec, uses.front().path, timeout_ms);  // say why: exit 2
  }
  for (size_t i = 1; i < uses.size(); ++i) check_python_pass(uses[i].spec, uses[i].path, timeout_ms);
  return server;
}

// ---- Strays ----------------------------------------------------------------------------

void become_subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

namespace {

struct ProcessEntry {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgid = 0;
  char state = '?';
};

// Every process /proc shows: pid, parent, process group and state (fields 1, 4, 5, 3 of
// /proc/PID/stat; the command name, field 2, may hold spaces and parentheses, so the
// fields after it are found from its last ')').
std::vector<ProcessEntry> list_processes() {
  std::vector<ProcessEntry> out;
  DIR* proc = ::opendir("/proc");
  if (!proc) return out;
  while (dirent* entry = ::readdir(proc)) {
    const char* name = entry->d_name;
    if (*name < '0' || *name > '9') continue;
    const std::string path = std::string("/proc/") + name + "/stat";
    FILE* f = std::fopen(path.c_str(), "re");
    if (!f) continue;  // it ended meanwhile
    char buf[1024];
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const char* close = std::strrchr(buf, ')');
    ProcessEntry e;
    int ppid = 0, pgid = 0;
    if (!close || std::sscanf(close + 1, " %c %d %d", &e.state, &ppid, &pgid) != 3) continue;
    e.pid = static_cast<pid_t>(std::atoi(name));
    e.ppid = ppid;
    e.pgid = pgid;
    out.push_back(e);
  }
  ::closedir(proc);
  return out;
}

// Reaps the zombies among this process's children outside its own group (strays that
// died, or that reap_descendants killed); a child of its own group is its caller's to reap.
void reap_stray_zombies(const std::vector<ProcessEntry>& processes, pid_t self, pid_t group) {
  for (const ProcessEntry& e : processes) {
    if (e.ppid != self || e.pgid == group || e.state != 'Z') continue;
    int status = 0;
    ::waitpid(e.pid, &status, WNOHANG);
  }
}

}  // namespace

int reap_descendants(int spare) {
  const pid_t self = ::getpid(), group = ::getpgrp();
  std::set<pid_t> spared;
  {
    std::lock_guard<std::mutex> lock(live_workers_mutex());
    spared = live_workers();
  }
  if (spare > 0) spared.insert(spare);
  int killed = 0;
  std::set<pid_t> signalled;
  // Killing a process reparents its children here (a subreaper), and a stray may fork while
  // it is being killed: sweep until no live stray is left (a bounded number of times).
  for (int sweep = 0; sweep < 200; ++sweep) {
    std::vector<ProcessEntry> processes = list_processes();
    std::multimap<pid_t, const ProcessEntry*> children;
    for (const ProcessEntry& e : processes) children.emplace(e.ppid, &e);
    std::vector<const ProcessEntry*> strays, todo;
    auto [first, last] = children.equal_range(self);
    for (auto it = first; it != last; ++it) {
      const ProcessEntry* child = it->second;
      if (spared.count(child->pid) || child->pgid == group) continue;  // ours: a case process, a live worker
      todo.push_back(child);
    }
    while (!todo.empty()) {
      const ProcessEntry* e = todo.back();
      todo.pop_back();
      if (spared.count(e->pid)) continue;
      strays.push_back(e);
      auto [b, end] = children.equal_range(e->pid);
      for (auto it = b; it != end; ++it) todo.push_back(it->second);
    }
    bool alive = false;
    for (const ProcessEntry* e : strays) {
      if (e->state == 'Z' || e->state == 'X') continue;
      alive = true;
      if (::kill(e->pid, SIGKILL) == 0 && signalled.insert(e->pid).second) ++killed;
    }
    reap_stray_zombies(processes, self, group);
    if (!alive) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(sweep < 10 ? 1 : 10));
  }
  reap_stray_zombies(list_processes(), self, group);
  return killed;
}

}  // namespace passcheck::python_bridge
