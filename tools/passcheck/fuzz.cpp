// passcheck fuzz / repro / minimize / capture: their command-line options and output.
// The campaign itself (cases, processes, repro files, minimizing) is the library in
// workflows/campaign; this file turns arguments into its options, chooses the pass
// registry (the built-in passes plus the mutant and test sets asked for), and prints.
// docs/reproducing-a-failure.md describes the workflow.
#include "tools/passcheck/commands.h"
#include "tools/passcheck/option_checks.h"

#include "workflows/campaign/campaign.h"
#include "workflows/campaign/cases.h"
#include "workflows/campaign/repro_tools.h"
#include "framework/check/isolation.h"
#include "framework/check/pipeline.h"
#include "framework/check/repro.h"
#include "framework/dist/mesh.h"
#include "framework/dist/sim.h"
#include "workflows/python_bridge/python_pass.h"
#include "tools/passcheck/report_commands.h"
#include "framework/io/files.h"
#include "framework/ir/text.h"
#include "framework/version.h"
#include "oracles/models/subject.h"
#include "oracles/training_driver.h"
#include "suites/mutants/alias_mutants.h"
#include "suites/mutants/mutants.h"
#include "suites/mutants/test_passes.h"
#include "generators/program.h"
#include "generators/program_case.h"
#include "generators/program_features.h"

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

namespace passcheck::cli {

namespace {

namespace fs = std::filesystem;

bool env_test_passes() {
  const char* v = std::getenv("PASSCHECK_TEST_PASSES");
  return v && std::string(v) == "1";
}

// The built-in passes plus the extra sets asked for ("mutants", "test", "python").
check::PassRegistry make_registry(const std::vector<std::string>& extra) {
  check::PassRegistry registry;
  check::register_builtin_passes(registry);
  for (const auto& set : extra) {
    if (set == "mutants") {
      mutants::register_all_mutants(registry);
      mutants::register_alias_mutants(registry);
    }
    if (set == "test") mutants::register_test_passes(registry);
    if (set == python_bridge::kPythonPassSet) python_bridge::register_python_pass(registry);
  }
  return registry;
}

std::vector<std::string> registry_sets(bool with_mutants, bool test_passes) {
  std::vector<std::string> sets;
  if (with_mutants) sets.push_back("mutants");
  if (test_passes || env_test_passes()) sets.push_back("test");
  return sets;
}

// A progress line that rewrites itself on a terminal; nothing at all elsewhere, so
// logs and captured output hold only the results.
class ProgressLine {
 public:
  ProgressLine() : tty_(isatty(2) != 0) {}
  void show(const std::string& text) {
    if (!tty_) return;
    std::cerr << "\r" << text << "\033[K" << std::flush;
    shown_ = true;
  }
  /// Clears the line so a message can be printed in its place.
  void clear() {
    if (!shown_) return;
    std::cerr << "\r\033[K" << std::flush;
    shown_ = false;
  }

 private:
  bool tty_;
  bool shown_ = false;
};

std::string format(const char* fmt, double a, double b = 0, double c = 0, double d = 0) {
  char line[200];
  std::snprintf(line, sizeof line, fmt, a, b, c, d);
  return line;
}

// "mlp-dce-cse.repro": capture's file name when --out is not given.
std::string default_capture_path(const std::string& model, const std::string& pipeline) {
  std::string slug;
  for (char ch : pipeline) {
    bool keep = std::isalnum(static_cast<unsigned char>(ch)) != 0;
    if (keep) slug += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    else if (!slug.empty() && slug.back() != '-') slug += '-';
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return model + "-" + (slug.empty() ? "pipeline" : slug) + ".repro";
}

// Limits of the campaign options (each checked by CLI11 before anything runs, exit 2
// naming the option): a value beyond them cannot be meant and would run for ever.
constexpr int64_t kMaxCases = 1000000000;                  // 10^9 cases
constexpr double kMaxSeconds = 7 * 24 * 3600.0;            // a week
constexpr int64_t kMaxTimeoutMs = 7LL * 24 * 3600 * 1000;  // a week

// A repro file whose own pipeline runs Python (python{pass=M:F,path=DIR} or
// python-partitioner{...}) imports and runs code the file chooses, from a directory the
// file chooses: refused (exit 2, before anything runs) unless --allow-python.
void require_python_allowed(const std::string& file, const std::vector<python_bridge::PythonPassUse>& uses,
                            bool allowed) {
  if (allowed || uses.empty()) return;
  const python_bridge::PythonPassUse& use = uses.front();
  const std::string module = use.spec.substr(0, use.spec.find(':'));
  std::string where = "the default import path (passcheck_fx's directory, PYTHONPATH)";
  if (!use.path.empty()) {
    std::error_code error;
    const fs::path dir = fs::weakly_canonical(use.path, error), here = fs::weakly_canonical(fs::current_path(), error);
    const auto [mismatch, _] = std::mismatch(here.begin(), here.end(), dir.begin(), dir.end());
    where = "'" + use.path + "'" + (mismatch == here.end() ? "" : " (outside the current directory)");
  }
  throw std::invalid_argument(file + ": its pipeline runs the Python pass " + use.spec + " (" + use.invocation +
                              "): replaying it imports module '" + module + "' from " + where +
                              " and runs Python code the file chooses; pass --allow-python to run it (only for a "
                              "file you trust)");
}

}  // namespace

int run_fuzz(const FuzzArgs& args) {
  report::Report html("fuzz", current_command_line());
  return guarded("fuzz", [&]() -> int { return run_reported(args.report, html, [&]() -> int {
    campaign::CampaignOptions options;
    options.pipeline = args.pipeline;
    options.pass = args.pass;
    options.chunk = args.chunk;
    std::vector<std::string> sets = registry_sets(args.mutants, args.test_passes);
    // Nothing a Python pass starts outlives the campaign: this process is a subreaper while
    // the campaign runs, and kills every stray descendant at its end.
    std::optional<python_bridge::StrayReaper> strays;
    std::optional<python_bridge::PythonServer> python_server;  // one Python start for the whole campaign
    if (!args.python_pass.empty()) {
      if (!options.pipeline.empty() || !options.pass.empty() || !options.chunk.empty())
        throw std::invalid_argument("--python-pass is the pass under test; it takes no --pass, --pipeline or --chunk");
      // A comma-separated list is a pipeline of Python passes, run in order; a failing case
      // is bisected to the first pass after which it fails (campaign::bisect_failure).
      std::vector<std::string> specs;
      for (size_t begin = 0;;) {
        const size_t comma = args.python_pass.find(',', begin);
        specs.push_back(args.python_pass.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
        if (comma == std::string::npos) break;
        begin = comma + 1;
      }
      for (const std::string& spec : specs)  // checks each spelling before anything starts
        python_bridge::python_pass_pipeline(spec, args.python_path, false, args.python_hand_over,
                                            args.python_tolerance_ulp);
      strays.emplace();
      // The server imports the first pass once (within --timeout-ms) and says whether it is
      // a partitioner (passcheck_fx.partitioner: a module pass). A misspelt pass, or one
      // whose import fails in any way or hangs, is exit 2 before any case; a server that
      // cannot serve leaves the asking to a worker of its own. The other passes of a list
      // are imported once here to learn their kind, and by each case that runs them.
      python_server.emplace(specs.front(), args.python_path, args.timeout_ms);
      if (!python_server->running() && !python_server->import_failure().empty())
        throw std::invalid_argument(python_server->import_failure());
      std::string pipeline;
      for (size_t i = 0; i < specs.size(); ++i) {
        const bool partitioner =
            i == 0 && python_server->running()
                ? python_server->partitioner()
                : python_bridge::check_python_pass(specs[i], args.python_path, args.timeout_ms);
        if (partitioner && i + 1 < specs.size())
          throw std::invalid_argument("--python-pass " + specs[i] +
                                      " is a partitioner (its result is a module); only the last pass of a list may be one");
        pipeline += (i ? "," : "") + python_bridge::python_pass_pipeline(specs[i], args.python_path, partitioner,
                                                                         args.python_hand_over,
                                                                         args.python_tolerance_ulp);
      }
      options.pipeline = pipeline;
      sets.push_back(python_bridge::kPythonPassSet);
    } else if (!args.python_path.empty()) {
      throw std::invalid_argument("--python-path needs --python-pass");
    } else if (args.python_tolerance_ulp > 0) {
      throw std::invalid_argument("--python-tolerance-ulp needs --python-pass");
    }
    const bool graph_cases = args.mix.empty() || args.mix.find("programs") != std::string::npos;
    if (options.pipeline.empty() && options.pass.empty() && options.chunk.empty() && graph_cases) {
      options.pipeline = check::named_pipelines().at("default");
      std::cout << "no --pass or --pipeline: fuzzing the default pipeline (" << options.pipeline << ")\n";
    }
    options.cases = args.cases;
    options.seconds = args.seconds;
    options.seed = args.seed;
    options.jobs = args.jobs;
    options.out = args.out;
    options.timeout_ms = args.timeout_ms;
    options.max_failures = args.max_failures;
    if (args.models && args.situations) throw std::invalid_argument("--models and --situations are two case sources; pick one");
    options.source = args.situations ? campaign::CaseSource::Situations
                     : args.models   ? campaign::CaseSource::Models
                                     : campaign::CaseSource::Programs;
    options.minimize = args.minimize;
    options.minimize_seconds = args.minimize_seconds;
    options.baseline_pass = args.baseline_pass;
    options.registries = sets;
    if (args.isolation != "fork-server" && args.isolation != "per-case" && args.isolation != "persistent")
      throw std::invalid_argument("--isolation " + args.isolation + ": expected fork-server, persistent or per-case");
    options.isolation = args.isolation == "per-case"     ? campaign::Isolation::PerCase
                        : args.isolation == "persistent" ? campaign::Isolation::Persistent
                                                         : campaign::Isolation::ForkServer;
    if (!args.mix.empty()) options.mix = campaign::parse_mix(args.mix);
    if (args.mix.empty() && (args.sim_mesh_pass != "fuse-chained-allgathers" || !args.chunk_pass.empty()))
      throw std::invalid_argument("--sim-mesh-pass and --chunk-pass name the passes of a mixed campaign's cases; they need --mix");
    options.features = gen::parse_features(args.features);
    options.sim_mesh_pass = args.sim_mesh_pass;
    options.chunk_pass = args.chunk_pass;
    check::PassRegistry registry = make_registry(options.registries);

    ProgressLine line;
    campaign::CampaignCallbacks callbacks;
    callbacks.on_progress = [&](const campaign::CampaignProgress& p) {
      std::string total = p.total > 0 ? "/" + std::to_string(p.total) : "";
      line.show("fuzz: " + std::to_string(p.done) + total + " cases, " + std::to_string(p.failures) + " failures, " +
                format("%.1f s", p.elapsed_s));
    };
    callbacks.on_failure = [&](const campaign::CaseFailure& f) {
      line.clear();
      std::cerr << "case " << f.index << " (seed " << f.seed << (args.mix.empty() ? "" : ", " + f.kind_of_case)
                << "): " << f.kind << " (" << f.detail << "): "
                << (f.repro.empty() ? std::string("no repro: the case failed before writing its graph") : f.repro) << "\n";
      if (f.nodes_before > 0)
        std::cerr << "  minimized: " << f.nodes_before << " -> " << f.nodes_after << " nodes"
                  << (f.minimizer_note.empty() ? "" : " (" + f.minimizer_note + ")") << "\n";
      else if (!f.minimizer_note.empty())
        std::cerr << "  " << f.minimizer_note << "\n";
    };
    campaign::CampaignReport report = campaign::run_campaign(options, registry, callbacks);
    line.clear();

    double total = report.seconds;
    char summary[320];
    std::snprintf(summary, sizeof summary,
                  "fuzz summary: %lld cases run, %lld failures (%lld violations, %lld crashes, %lld timeouts), "
                  "%lld repro files written, %.2f cases/s, %.1f s\n",
                  static_cast<long long>(report.cases_run), static_cast<long long>(report.failure_count()),
                  static_cast<long long>(report.violations), static_cast<long long>(report.crashes),
                  static_cast<long long>(report.timeouts), static_cast<long long>(report.repro_files),
                  total > 0 ? report.cases_run / total : 0.0, total);
    std::cout << "pipeline: " << report.pipeline
              << (report.policy_varies ? " (sac-tag policy varies with the case seed)" : "") << "\n";
    for (const auto& [kind, pipeline] : report.mix_pipelines) {
      auto n = report.cases_by_kind.find(kind);
      std::cout << "  " << kind << " cases: " << (n == report.cases_by_kind.end() ? 0 : n->second) << ", pipeline "
                << pipeline << "\n";
    }
    std::cout << summary;
    if (!args.baseline_pass.empty())
      std::cout << report.baseline_failures << " cases not counted: " << args.baseline_pass << " fails them too\n";
    // Decision coverage of the passes the campaign ran (those that declare any).
    std::set<std::string> ran = report.coverage.passes();
    for (const check::PassInvocation& inv : check::parse_pipeline(report.pipeline, registry)) ran.insert(inv.name);
    for (const auto& [kind, pipeline] : report.mix_pipelines)
      for (const check::PassInvocation& inv : check::parse_pipeline(pipeline, registry)) ran.insert(inv.name);
    std::string table = report.coverage.table(registry, ran);
    if (!table.empty()) std::cout << "decision coverage (rules fired, guards refused, over all cases):\n" << table;
    if (!report.failures.empty()) {
      const campaign::CaseFailure& first = report.failures.front();
      std::cout << "first failure at case " << first.index << " (" << first.index + 1 << " cases run to find it), "
                << format("%.1f s", first.found_at_s) << "; repro "
                << (first.repro.empty() ? std::string("none") : first.repro);
      if (first.kind_of_case == "chunk")
        std::cout << " (chunk case: a program, not minimized)\n";
      else if (first.kind_of_case == "sim-mesh")
        std::cout << " (sim-mesh case: run on every rank, not minimized)\n";
      else if (first.nodes_before > 0)
        std::cout << "; minimized " << first.nodes_before << " -> " << first.nodes_after << " nodes\n";
      else
        std::cout << "; not minimized\n";
    }
    // Whether the passes under test acted at all: a campaign whose pass changed no graph
    // checked nothing it does (a pass keyed on metadata the cases lack, cases that give
    // it no work), and says so; --require-change makes that a failure.
    std::vector<std::string> under_test;
    if (!args.pass.empty()) {
      under_test.push_back(args.pass);
    } else {
      for (const check::PassInvocation& inv : check::parse_pipeline(report.pipeline, registry))
        if (std::find(under_test.begin(), under_test.end(), inv.name) == under_test.end())
          under_test.push_back(inv.name);
    }
    const campaign::ChangeVerdict changes = campaign::change_verdict(report, under_test);
    std::string change_text;
    if (report.cases_run > 0)
      for (const std::string& l : changes.lines) change_text += "changes: " + l + "\n";
    if (!options.features.empty()) {
      change_text += "features:";
      for (const std::string& f : options.features) {
        auto n = report.coverage.features().find(f);
        change_text += " " + f + " in " + std::to_string(n == report.coverage.features().end() ? 0 : n->second) +
                       (&f == &options.features.back() ? "" : ",");
      }
      change_text += " of " + std::to_string(report.cases_run) + " cases\n";
    }
    if (report.coverage.tolerated_cases() > 0)
      change_text += "tolerance: " + std::to_string(report.coverage.tolerated_cases()) +
                     " passing cases differed from the original within the declared tolerance (at most " +
                     std::to_string(report.coverage.tolerated_max_ulp()) + " ULP); the others were bit for bit\n";
    std::cout << change_text;
    const bool acted = report.cases_run == 0 || changes.unchanged.empty();
    if (!acted && args.require_change)
      std::cout << "--require-change: a pass under test changed no case's graph\n";
    std::cout << std::flush;
    if (!args.report.empty()) add_campaign_report(html, report, summary + change_text);
    return report.failure_count() > 0 || (!acted && args.require_change) ? 1 : 0;
  }); });
}

namespace {

int replay_repro(const ReproArgs& args, bool allow_python) {
  return guarded("repro", [&]() -> int {
    check::Repro r = check::read_repro(args.file);
    const bool pipeline_from_file = args.pipeline.empty();
    if (!pipeline_from_file) r.pipeline = args.pipeline;
    check::PassRegistry registry = make_registry(r.registries);
    check::parse_pipeline(r.pipeline, registry);  // unknown pass: exit 2 here
    const std::vector<python_bridge::PythonPassUse> python = python_bridge::python_passes_of(r.pipeline, registry);
    // Python the file chooses runs only when asked (a --pipeline typed here is chosen by the user).
    require_python_allowed(args.file, python, allow_python || !pipeline_from_file);
    std::optional<python_bridge::StrayReaper> strays;  // nothing a Python pass starts outlives the replay
    if (!python.empty()) strays.emplace();
    const int64_t timeout_ms = campaign::replay_timeout_ms(r, args.timeout_ms);
    // A Python pass this machine cannot import, or whose import fails in any way or hangs
    // (past the replay's limit, or 20 s without one): exit 2. The server that imported it
    // then runs it for the replay (which inherits its socket), so Python starts once.
    const std::unique_ptr<python_bridge::PythonServer> python_server =
        python_bridge::serve_python_pass_of(r.pipeline, registry, timeout_ms);
    // A replay that ends abnormally: a crash or a timeout is the failure still showing.
    auto abnormal = [&](const check::ChildOutcome& o) {
      if (o.kind == check::ChildOutcome::Kind::TimedOut)
        std::cout << "verdict: FAILS: the failure is still there (timeout after " << timeout_ms << " ms)\n";
      else
        std::cout << "verdict: FAILS (the replay process " << o.describe(timeout_ms) << ")\n";
      return 1;
    };
    if (r.is_chunk_case()) {
      gen::ChunkCase cc;
      cc.program = r.program;
      cc.seed = r.seed;
      cc.config = gen::ChunkConfig::parse(r.chunk);
      gen::decode_spec(cc.program);  // malformed program: exit 2 here
      auto [chunk_pass, concretize_pass] = campaign::chunk_passes_of(r.pipeline, registry);
      std::cout << "passcheck repro " << args.file << ": chunk case, pipeline " << r.pipeline << ", " << r.chunk
                << ", seed " << r.seed << (r.version != PASSCHECK_VERSION ? ", written by passcheck " + r.version : "")
                << "\n";
      check::prepare_for_fork();
      check::ChildOutcome o = check::run_in_child(
          [&] {
            gen::ChunkCaseResult result = gen::run_chunk_case(cc, registry, chunk_pass, concretize_pass);
            for (const auto& v : result.violations) std::cout << "violation: " << v << "\n";
            std::cout << (result.violations.empty() ? "verdict: PASSES\n" : "verdict: FAILS\n") << std::flush;
            return result.violations.empty() ? 0 : 1;
          },
          timeout_ms);
      if (o.kind == check::ChildOutcome::Kind::Exited && (o.exit_code == 0 || o.exit_code == 1)) return o.exit_code;
      return abnormal(o);
    }
    if (r.is_sim_mesh_case()) {
      check::prepare_for_fork();
      try {
        dist::check_simulable(dist::DeviceMesh::parse(r.sim_mesh));  // malformed or too large: exit 2 here
      } catch (const dist::MeshError& e) {
        throw check::ReproError(args.file, r.sim_mesh_line, std::string("sim-mesh: ") + e.what());
      }
      campaign::check_sim_mesh_graph(r);   // so is a graph of another kind of case
      std::cout << "passcheck repro " << args.file << ": sim-mesh case on " << r.sim_mesh << ", pipeline " << r.pipeline
                << (r.version != PASSCHECK_VERSION ? ", written by passcheck " + r.version : "") << "\n"
                << std::flush;
      check::ChildOutcome o = check::run_in_child(
          [&] {
            std::vector<std::string> violations = campaign::replay_sim_mesh_case(r, registry);
            for (const auto& v : violations) std::cout << "violation: " << v << "\n";
            std::cout << (violations.empty() ? "verdict: PASSES\n" : "verdict: FAILS\n") << std::flush;
            return violations.empty() ? 0 : 1;
          },
          timeout_ms);
      if (o.kind == check::ChildOutcome::Kind::Exited && (o.exit_code == 0 || o.exit_code == 1)) return o.exit_code;
      return abnormal(o);
    }
    check::prepare_for_fork();
    campaign::check_repro_graph(r, args.file);  // a broken graph is bad input: exit 2
    std::cout << "passcheck repro " << args.file << ": pipeline " << r.pipeline << ", seed " << r.seed << ", "
              << ir::parse_graph(r.graph_text(), args.file)->num_nodes() << " nodes ("
              << (r.minimized.empty() ? "original" : "minimized") << " graph)"
              << (timeout_ms > 0 ? ", time limit " + std::to_string(timeout_ms) + " ms" : "")
              << (r.version != PASSCHECK_VERSION ? ", written by passcheck " + r.version : "") << "\n"
              << std::flush;
    // In a child, so a crash repro reports the crash instead of crashing `repro`.
    check::ChildOutcome o = check::run_in_child(
        [&] {
          check::PassPropertyReport report = check::replay(r, registry);
          for (const auto& v : report.violations) std::cout << "violation: " << v << "\n";
          std::cout << (report.violations.empty() ? "verdict: PASSES\n" : "verdict: FAILS\n") << std::flush;
          return report.violations.empty() ? 0 : 1;
        },
        timeout_ms);
    if (o.kind == check::ChildOutcome::Kind::Exited && (o.exit_code == 0 || o.exit_code == 1)) return o.exit_code;
    return abnormal(o);
  });
}

int minimize_file(const MinimizeArgs& args, bool allow_python) {
  return guarded("minimize", [&]() -> int {
    check::Repro r = check::read_repro(args.file);
    // Another repro is earlier work: replaced only when asked, checked before minimizing.
    if (!args.out.empty() && args.out != args.file) {
      io::check_writable(args.out, "--out repro file");
      io::check_new_or_forced(args.out, "--out repro file", args.force);
    }
    check::PassRegistry registry = make_registry(r.registries);
    const std::vector<python_bridge::PythonPassUse> python = python_bridge::python_passes_of(r.pipeline, registry);
    require_python_allowed(args.file, python, allow_python);  // Python the file chooses runs only when asked
    std::optional<python_bridge::StrayReaper> strays;  // nothing a Python pass starts outlives the minimizer
    if (!python.empty()) strays.emplace();
    check::prepare_for_fork();
    // A Python pass runs on every candidate: one Python start for all of them (its import
    // bounded by --timeout-ms).
    std::unique_ptr<python_bridge::PythonServer> python_server =
        python_bridge::serve_python_pass_of(r.pipeline, registry, args.timeout_ms);
    std::string out = args.out.empty() ? args.file : args.out;
    ProgressLine line;
    auto progress = [&](const campaign::MinimizeProgress& p) {
      line.show("minimize: " + std::to_string(p.candidates_tried) + " candidates tried, " + std::to_string(p.nodes) +
                " nodes, " + format("%.1f s", p.elapsed_s));
    };
    campaign::MinimizeOutcome s = campaign::minimize_repro(args.file, out, registry, args.seconds, args.timeout_ms, progress);
    line.clear();
    std::cout << "minimized " << args.file << ": " << s.before << " -> " << s.after << " nodes (original "
              << s.original_nodes << "; " << s.candidates_tried << " candidates tried"
              << (s.timed_out ? ", stopped at the --seconds limit" : "") << "); wrote " << out << "\n";
    return 0;
  });
}

}  // namespace

int run_repro(const ReproArgs& args) { return replay_repro(args, /*allow_python=*/false); }

int run_minimize(const MinimizeArgs& args) { return minimize_file(args, /*allow_python=*/false); }

int run_capture(const CaptureArgs& args) {
  return guarded("capture", [&]() -> int {
    std::string out = args.out;
    if (out.empty()) {
      out = default_capture_path(args.model, args.pipeline);
      if (io::kind_of(out) != io::PathKind::Missing)
        throw std::invalid_argument("'" + out + "' (the default --out) already exists; pass --out or remove it");
    }
    if (io::kind_of(out) == io::PathKind::Directory)
      throw io::FileError("cannot write repro file '" + out + "': it is a directory");
    io::check_writable(out, "--out repro file");
    io::check_new_or_forced(out, "--out repro file", args.force);
    std::vector<std::string> sets = registry_sets(args.mutants, args.test_passes);
    check::PassRegistry registry = make_registry(sets);
    check::parse_pipeline(args.pipeline, registry);
    check::prepare_for_fork();  // before any tensor work: the replay runs in a forked child
    models::SubjectOptions options;
    options.seed = args.seed;
    auto subject = models::make_subject(args.model, options);
    trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), false);
    check::Repro r;
    r.pipeline = args.pipeline;
    r.registries = sets;
    r.seed = args.seed;
    r.case_description = "passcheck capture --model " + args.model + " --seed " + std::to_string(args.seed);
    r.original = program.graph().print();
    // The repro exists before the pipeline runs: a pass that crashes or hangs leaves
    // a crash/timeout repro, not nothing. The replay runs in a child process.
    r.status = "pending";
    check::write_repro(out, r);
    check::ChildOutcome outcome = check::run_in_child(
        [&] {
          check::PassPropertyReport report = check::replay(r, registry);
          check::Repro done = r;
          done.status = report.violations.empty() ? "passed" : "failed";
          if (!report.violations.empty()) done.property = check::property_of(report.violations.front());
          done.messages = report.violations;
          check::write_repro(out, done);
          for (const auto& v : report.violations) std::cout << "violation: " << v << "\n";
          std::cout << std::flush;
          return report.violations.empty() ? 0 : 1;
        },
        args.timeout_ms);
    if (outcome.kind != check::ChildOutcome::Kind::Exited || outcome.exit_code > 1) {
      const bool timed_out = outcome.kind == check::ChildOutcome::Kind::TimedOut;
      r.status = timed_out ? "timeout" : "crash";
      r.property = r.status;
      r.messages = {"the pipeline's process " + outcome.describe(args.timeout_ms)};
      if (timed_out) r.timeout_ms = args.timeout_ms;
      check::write_repro(out, r);
      std::cout << "wrote " << out << " (" << program.graph().num_nodes() << " nodes): " << r.status << " ("
                << outcome.describe(args.timeout_ms) << ")\n";
      return 1;
    }
    std::cout << "wrote " << out << " (" << program.graph().num_nodes() << " nodes): "
              << (outcome.exit_code == 0 ? "passes" : "FAILS") << "\n";
    return outcome.exit_code;
  });
}

std::function<std::optional<int>()> add_campaign_commands(CLI::App& app) {
  // The parsed arguments live as long as the returned function.
  struct Commands {
    FuzzArgs fuzz;
    ReproArgs repro;
    MinimizeArgs minimize;
    CaptureArgs capture;
    bool repro_allow_python = false;     // --allow-python (not in ReproArgs: commands.h is shared)
    bool minimize_allow_python = false;  // --allow-python (not in MinimizeArgs)
    CLI::App* fuzz_cmd = nullptr;
    CLI::App* repro_cmd = nullptr;
    CLI::App* minimize_cmd = nullptr;
    CLI::App* capture_cmd = nullptr;
  };
  auto c = std::make_shared<Commands>();
  const CLI::Validator cases_range = whole_number(1, kMaxCases), failures_range = whole_number(0, kMaxCases),
                       seed_range = whole_number(0, UINT64_MAX),
                       jobs_range = whole_number(1, static_cast<uint64_t>(campaign::kMaxJobs)),
                       timeout_range = whole_number(1, kMaxTimeoutMs),
                       replay_timeout_range = whole_number(0, kMaxTimeoutMs),
                       positive_seconds = number_in(0, /*low_inclusive=*/false, kMaxSeconds),
                       non_negative_seconds = number_in(0, /*low_inclusive=*/true, kMaxSeconds);

  FuzzArgs& fuzz = c->fuzz;
  auto* fuzz_cmd = c->fuzz_cmd =
      app.add_subcommand("fuzz", "Run generated cases through a pipeline, one process each; write repro files");
  fuzz_cmd->add_option("--pipeline", fuzz.pipeline,
                       "Pipeline to check, e.g. \"dce,canonicalize,cse,dce\" (neither this nor --pass: the default "
                       "named pipeline)")
      ;
  fuzz_cmd->add_option("--pass", fuzz.pass, "One pass, run after the passes it needs (remat: ac-regions,sac-tag first)")
      ;
  fuzz_cmd->add_option("--cases", fuzz.cases, "Number of cases, 1 to 10^9 (default 100 when --seconds is not given)")
      ->check(cases_range);
  fuzz_cmd->add_option("--seconds", fuzz.seconds, "Stop starting cases after this many seconds (> 0, at most a week)")
      ->check(positive_seconds);
  fuzz_cmd->add_option("--seed", fuzz.seed, "Campaign seed; case i uses a seed derived from it and i")
      ->check(seed_range)
      ->capture_default_str();
  fuzz_cmd->add_option("--jobs", fuzz.jobs, "Cases run in parallel, one process each (1 to 256)")
      ->check(jobs_range)
      ->capture_default_str();
  fuzz_cmd->add_option("--out", fuzz.out, "Directory for repro files (existing files in it are never replaced)")
      
      ->capture_default_str();
  fuzz_cmd->add_option("--timeout-ms", fuzz.timeout_ms,
                       "Kill a case after this long (reported as a timeout; at most a week); also the limit of "
                       "importing a --python-pass")
      ->check(timeout_range)
      ->capture_default_str();
  fuzz_cmd->add_flag("--mutants", fuzz.mutants, "Also register the known-buggy AC mutants (mutant-remat-...)");
  fuzz_cmd->add_flag("--test-passes", fuzz.test_passes, "Also register the test-only passes crash-on-odd and hang");
  fuzz_cmd->add_option("--max-failures", fuzz.max_failures, "Stop after this many failures (0: never)")
      ->check(failures_range)
      ->capture_default_str();
  fuzz_cmd->add_option("--baseline-pass", fuzz.baseline_pass,
                       "Count a failure only when this pass, in place of --pass, passes the case (e.g. remat for a mutant)")
      ;
  fuzz_cmd->add_flag("--models", fuzz.models, "Draw cases from the debug models instead of the program generator");
  fuzz_cmd->add_flag("--situations", fuzz.situations,
                     "Draw cases from the cleanup situations generator (the traps of the cleanup passes)");
  fuzz_cmd->add_option("--chunk", fuzz.chunk,
                       "Fuzz the chunking passes in this mode (batch): chunkable programs, graph chunking against eager "
                       "chunking; --pass/--pipeline name the chunk and concretize passes (default chunk,concretize)")
      ;
  fuzz_cmd->add_option("--python-pass", fuzz.python_pass,
                       "Fuzz this Python pass (MODULE:FUNCTION over a torch.fx GraphModule; docs/python-passes.md), or "
                       "a comma-separated list run in order (a failure is bisected to the first pass after which it "
                       "appears)")
      ;
  fuzz_cmd->add_option("--python-path", fuzz.python_path, "Directory the Python pass is imported from")
      ;
  fuzz_cmd->add_option("--python-hand-over", fuzz.python_hand_over,
                       "What the Python pass is handed: caller (what its real caller gives: meta[\"val\"] FakeTensors "
                       "from one fake mode, the caller's context; docs/python-passes.md) or bare (tensor_meta only)")
      ->check(CLI::IsMember({"caller", "bare"}))
      ->capture_default_str();
  fuzz_cmd->add_option("--python-tolerance-ulp", fuzz.python_tolerance_ulp,
                       "Declared tolerance of the Python pass: results may differ by at most this many ULP, counted "
                       "apart from bitwise (0, the default: bit for bit)")
      ->check(whole_number(0, 1000000000))
      ->capture_default_str();
  fuzz_cmd->add_option("--features", fuzz.features,
                       "Generator features added to each program or model case where it has a place: identity-views, "
                       "noop-clones, aliased-outputs, writes-through-views, all or none (docs/python-passes.md)")
      ->capture_default_str();
  fuzz_cmd->add_flag("--require-change", fuzz.require_change,
                     "Exit 1 when a pass under test changed no case's graph (the campaign checked nothing it does)");
  fuzz_cmd->add_flag("!--no-minimize", fuzz.minimize, "Keep failing repros at their original size");
  fuzz_cmd->add_option("--minimize-seconds", fuzz.minimize_seconds,
                       "Time limit of each minimization (>= 0, at most a week)")
      ->check(non_negative_seconds)
      ->capture_default_str();
  fuzz_cmd->add_option("--isolation", fuzz.isolation,
                       "fork-server: warm workers (one per job) fork a process per case; persistent: warm workers "
                       "run the cases themselves, a crashing or hanging case costing its worker, which is replaced; "
                       "per-case: the campaign forks each case itself (slowest)")
      ->check(CLI::IsMember({"fork-server", "persistent", "per-case"}))
      ->capture_default_str();
  fuzz_cmd->add_option("--mix", fuzz.mix,
                       "Cycle through kinds of case: programs (--pipeline/--pass), sim-mesh (chained all_gathers run "
                       "on every rank of a sim mesh), chunk (chunkable programs, chunk mode batch); e.g. "
                       "programs,sim-mesh,chunk")
      ;
  fuzz_cmd->add_option("--sim-mesh-pass", fuzz.sim_mesh_pass,
                       "With --mix: the pass of the sim-mesh cases (fuse-chained-allgathers or a mutant of it)")
      
      ->capture_default_str();
  fuzz_cmd->add_option("--chunk-pass", fuzz.chunk_pass,
                       "With --mix: the chunk or concretize pass of the chunk cases (default chunk,concretize)")
      ;
  fuzz_cmd->add_option("--report", fuzz.report, "Also write an HTML report of the campaign here (docs/reports.md)")
      ;

  ReproArgs& repro = c->repro;
  auto* repro_cmd = c->repro_cmd =
      app.add_subcommand("repro", "Replay a repro file: exit 1 while the failure is present, 0 once fixed");
  repro_cmd->add_option("file", repro.file, "Repro file")->required();
  repro_cmd->add_option("--pipeline", repro.pipeline, "Replay with this pipeline instead of the file's")
      ;
  repro_cmd->add_option("--timeout-ms", repro.timeout_ms,
                        "Kill the replay after this long (0: no limit; default: the limit a timeout repro records, "
                        "else none; at most a week); also the limit of importing a Python pass (20 s without one)")
      ->check(replay_timeout_range);
  repro_cmd->add_flag("--allow-python", c->repro_allow_python,
                      "Run the Python pass the file's pipeline names (python{pass=M:F,path=DIR}): it imports and "
                      "runs code the file chooses, from a directory the file chooses; only for files you trust");

  MinimizeArgs& minimize = c->minimize;
  auto* minimize_cmd = c->minimize_cmd = app.add_subcommand("minimize", "Shrink a repro file's graph while the failure persists");
  minimize_cmd->add_option("file", minimize.file, "Repro file")->required();
  minimize_cmd->add_option("--out", minimize.out, "Write here instead of rewriting FILE");
  minimize_cmd->add_option("--seconds", minimize.seconds, "Time limit (> 0, at most a week)")
      ->check(positive_seconds)
      ->capture_default_str();
  minimize_cmd->add_option("--timeout-ms", minimize.timeout_ms,
                           "Per-candidate limit for crash repros (> 0, at most a week); also the limit of importing a "
                           "Python pass")
      ->check(timeout_range)
      ->capture_default_str();
  minimize_cmd->add_flag("--force", minimize.force, "Replace an existing --out file");
  minimize_cmd->add_flag("--allow-python", c->minimize_allow_python,
                         "Run the Python pass the file's pipeline names (python{pass=M:F,path=DIR}): it imports and "
                         "runs code the file chooses, from a directory the file chooses; only for files you trust");

  CaptureArgs& capture = c->capture;
  auto* capture_cmd = c->capture_cmd =
      app.add_subcommand("capture", "Write a repro file for a debug model and a pipeline (regressions)");
  capture_cmd->add_option("--model", capture.model, "Debug model")->capture_default_str();
  capture_cmd->add_option("--pipeline", capture.pipeline, "Pipeline")->required();
  capture_cmd->add_option("--out", capture.out,
                          "Repro file to write (default: <model>-<pipeline>.repro here, never replacing a file)")
      ;
  capture_cmd->add_option("--seed", capture.seed, "Model and input seed")->check(seed_range)->capture_default_str();
  capture_cmd->add_flag("--force", capture.force, "Replace an existing --out file");
  capture_cmd->add_flag("--mutants", capture.mutants, "Also register the AC mutants");
  capture_cmd->add_flag("--test-passes", capture.test_passes, "Also register the test-only passes");
  capture_cmd->add_option("--timeout-ms", capture.timeout_ms,
                          "Kill the pipeline's process after this long (a timeout repro; > 0, at most a week)")
      ->check(timeout_range)
      ->capture_default_str();

  return [c]() -> std::optional<int> {
    if (*c->fuzz_cmd) return run_fuzz(c->fuzz);
    if (*c->repro_cmd) return replay_repro(c->repro, c->repro_allow_python);
    if (*c->minimize_cmd) return minimize_file(c->minimize, c->minimize_allow_python);
    if (*c->capture_cmd) return run_capture(c->capture);
    return std::nullopt;
  };
}

}  // namespace passcheck::cli
