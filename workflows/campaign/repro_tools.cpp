// Repro checks, replay limits and minimization (see repro_tools.h).
#include "workflows/campaign/repro_tools.h"

#include "workflows/campaign/campaign.h"
#include "framework/check/isolation.h"
#include "framework/check/minimize.h"
#include "framework/check/verifier.h"
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/io/files.h"
#include "framework/ir/text.h"

#include <chrono>
#include <memory>
#include <regex>
#include <set>
#include <stdexcept>

namespace passcheck::campaign {

namespace {

using Clock = std::chrono::steady_clock;

// The graph a replay runs, parsed so that node lines are the file's lines.
std::unique_ptr<ir::Graph> parse_in_file(const check::Repro& r, const std::string& path) {
  int first = r.graph_first_line();
  return ir::parse_graph(std::string(static_cast<size_t>(first > 1 ? first - 1 : 0), '\n') + r.graph_text(), path);
}

void run_graph(const ir::Graph& g, uint64_t seed, int64_t int_high) {
  exec::InputOptions o;
  o.seed = seed;
  o.int_high = int_high;
  exec::ExecutorOptions eo;
  eo.check_metadata = true;
  exec::Executor(g, eo).run(exec::make_inputs(g, o));
}

bool runs_cleanly(const ir::Graph& g, uint64_t seed, int64_t int_high) {
  try {
    run_graph(g, seed, int_high);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::set<std::string> signatures(const std::vector<std::string>& violations) {
  std::set<std::string> s;
  for (const auto& v : violations) s.insert(check::violation_signature(v));
  return s;
}

// The "still fails the same way" predicate of a repro: a crash still crashes (in a
// grandchild), a violation still shows a violation of the same kind.
check::StillFails failure_predicate(const check::Repro& r, const check::PassRegistry& registry, int64_t timeout_ms) {
  if (r.status == "crash") {
    return [&registry, r, timeout_ms](const ir::Graph& g) {
      if (!runs_cleanly(g, r.seed, r.int_high)) return false;
      check::ChildOutcome o = check::run_in_child(
          [&] {
            check::check_case(g, r.pipeline, r.seed, r.int_high, registry);
            return 0;
          },
          timeout_ms);
      return o.kind == check::ChildOutcome::Kind::Signaled;
    };
  }
  std::set<std::string> wanted = signatures(r.messages);
  return [&registry, r, wanted](const ir::Graph& g) {
    if (!runs_cleanly(g, r.seed, r.int_high)) return false;
    try {
      for (const auto& v : check::check_case(g, r.pipeline, r.seed, r.int_high, registry).violations)
        if (wanted.count(check::violation_signature(v))) return true;
    } catch (const std::exception&) {
    }
    return false;
  };
}

}  // namespace

void check_repro_graph(const check::Repro& repro, const std::string& path) {
  if (repro.is_chunk_case()) return;  // the replay runs the program, not this graph
  int first = repro.graph_first_line();
  std::unique_ptr<ir::Graph> g;
  try {
    g = parse_in_file(repro, path);
  } catch (const ir::ParseError& e) {
    throw check::ReproError(path, e.line(), "in the graph section: " + e.message());
  }
  std::vector<check::VerifierIssue> issues = check::verify_graph(*g);
  if (!issues.empty()) {
    // The issue quotes the node at fault; its line is the first quoted node's.
    const std::string& message = issues.front().message;
    int line = first;
    size_t earliest = std::string::npos;
    for (const ir::Node* n : g->nodes()) {
      size_t at = message.find("`" + ir::print_node(*n) + "`");
      if (at < earliest) {
        earliest = at;
        line = n->source_line;
      }
    }
    throw check::ReproError(path, line, "the graph is malformed (the verifier rejects it): " + message);
  }
  try {
    run_graph(*g, repro.seed, repro.int_high);
  } catch (const std::exception& e) {
    // Executor errors name the node and its line, which is the file's line here.
    std::string message = e.what();
    std::smatch m;
    int line = std::regex_search(message, m, std::regex("\\(line (\\d+)\\)")) ? std::stoi(m[1]) : first;
    throw check::ReproError(path, line, "the graph does not run on its inputs, so it cannot show a pass failure: " + message);
  }
}

int64_t replay_timeout_ms(const check::Repro& repro, int64_t given) {
  if (given >= 0) return given;
  if (repro.status != "timeout") return 0;
  return repro.timeout_ms > 0 ? repro.timeout_ms : kDefaultTimeoutMs;
}

MinimizeOutcome minimize_repro(const std::string& in, const std::string& out, const check::PassRegistry& registry,
                               double seconds, int64_t timeout_ms,
                               const std::function<void(const MinimizeProgress&)>& on_progress) {
  check::Repro r = check::read_repro(in);
  if (r.is_chunk_case())
    throw std::invalid_argument(in + ": a chunk case is a program, not a graph; it cannot be minimized");
  if (r.is_sim_mesh_case())
    throw std::invalid_argument(in + ": a sim-mesh case runs on every rank of its mesh; it cannot be minimized");
  if (r.status != "failed" && r.status != "crash")
    throw std::invalid_argument(in + ": status is '" + r.status + "'; only failed and crash repros can be minimized");
  if (io::kind_of(out) == io::PathKind::Directory)
    throw io::FileError("cannot write repro file '" + out + "': it is a directory");
  check_repro_graph(r, in);
  std::unique_ptr<ir::Graph> g = parse_in_file(r, in);
  check::StillFails fails = failure_predicate(r, registry, timeout_ms);
  MinimizeOutcome outcome;
  outcome.original_nodes = ir::parse_graph(r.original, in)->num_nodes();
  outcome.before = g->num_nodes();
  if (!fails(*g)) throw std::invalid_argument(in + ": the failure does not reproduce; nothing to minimize");
  // Every predicate call is one candidate; the minimizer reports each accepted one.
  MinimizeProgress progress;
  progress.nodes = g->num_nodes();
  Clock::time_point start = Clock::now();
  auto report = [&] {
    progress.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (on_progress) on_progress(progress);
  };
  check::StillFails counted = [&](const ir::Graph& candidate) {
    ++progress.candidates_tried;
    bool still = fails(candidate);
    report();
    return still;
  };
  check::MinimizeOptions options;
  options.max_seconds = seconds;
  options.on_progress = [&](size_t nodes) {
    progress.nodes = nodes;
    report();
  };
  check::MinimizeResult m = check::minimize_graph(*g, counted, options);
  r.minimized = m.graph->print();
  check::write_repro(out, r);
  outcome.after = m.nodes_after;
  outcome.candidates_tried = progress.candidates_tried;
  outcome.timed_out = m.timed_out;
  return outcome;
}

}  // namespace passcheck::campaign
