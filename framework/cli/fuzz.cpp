// passcheck fuzz / repro / minimize / capture: the fuzzing campaign and the repro-file
// workflow (docs/reproducing-a-failure.md).
//
// Isolation design: the parent never runs a tensor operation. It only schedules cases,
// each in a fork()ed child that generates its graph, writes the pending repro file,
// runs the property checks and reports through its exit status (0 pass, 1 property
// violated with the repro completed, anything else or a signal: crash). LibTorch is
// set to one intra-op thread before the first fork, so no pool thread can hold a lock
// a child inherits; children _exit() without static destructors. A child past
// --timeout-ms is SIGKILLed. Minimization also runs in a child with a time limit;
// for crashes, every candidate it tries runs in a grandchild. A child counts the rules
// and guards its passes reach (through a counting copy of the registry) and leaves
// them in "<repro>.coverage" for the parent, which sums them into the campaign's
// coverage table.
#include "framework/cli/commands.h"

#include "framework/check/coverage.h"
#include "framework/check/isolation.h"
#include "framework/check/minimize.h"
#include "framework/check/repro.h"
#include "framework/compat/torch_compat.h"
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/ir/text.h"
#include "framework/version.h"
#include "oracles/models/subject.h"
#include "oracles/training_driver.h"
#include "suites/mutants/mutants.h"
#include "suites/mutants/test_passes.h"
#ifdef PASSCHECK_HAVE_PROGRAM_GEN
#include "generators/cleanup_situations.h"
#include "generators/program.h"
#include "generators/program_case.h"
#endif

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <thread>

namespace passcheck::cli {

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool env_test_passes() {
  const char* v = std::getenv("PASSCHECK_TEST_PASSES");
  return v && std::string(v) == "1";
}

// The built-in passes plus the extra sets asked for ("mutants", "test").
check::PassRegistry make_registry(const std::vector<std::string>& extra) {
  check::PassRegistry registry;
  check::register_builtin_passes(registry);
  for (const auto& set : extra) {
    if (set == "mutants") mutants::register_all_mutants(registry);
    if (set == "test") mutants::register_test_passes(registry);
  }
  return registry;
}

std::vector<std::string> registry_sets(bool with_mutants, bool test_passes) {
  std::vector<std::string> sets;
  if (with_mutants) sets.push_back("mutants");
  if (test_passes || env_test_passes()) sets.push_back("test");
  return sets;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The pipeline a case runs: --pipeline as given, or --pass after the passes it needs.
// The AC family varies the sac-tag policy with the case seed, so one campaign covers
// every policy.
std::string case_pipeline(const FuzzArgs& args, uint64_t case_seed) {
  if (!args.pipeline.empty()) return args.pipeline;
  const std::string& p = args.pass;
  if (!args.chunk.empty()) {
    // Chunk mode: "<chunk pass>,<concretize pass>", --pass standing in for one of them.
    if (p.empty()) return "chunk,concretize";
    return p.find("concretize") != std::string::npos ? "chunk," + p : p + ",concretize";
  }
  static const char* policies[] = {"default", "eager", "full"};
  std::string policy = policies[case_seed % 3];
  if (p == "remat" || p.rfind("mutant-remat", 0) == 0)
    return "ac-regions,sac-tag{policy=" + policy + "}," + p + "{rng=replay}";
  if (p == "sac-tag") return "ac-regions,sac-tag{policy=" + policy + "}";
  if (p == "apply-ac") return "ac-regions,apply-ac";
  return p;
}

// The chunk and concretize passes a chunk-mode pipeline names.
std::pair<std::string, std::string> chunk_passes_of(const std::string& pipeline, const check::PassRegistry& registry) {
  std::vector<check::PassInvocation> passes = check::parse_pipeline(pipeline, registry);
  if (passes.size() != 2 || !passes[0].options.empty() || !passes[1].options.empty())
    throw std::invalid_argument("a chunk pipeline names two passes without options, the chunk pass then the "
                                "concretize pass (e.g. chunk,concretize); got '" + pipeline + "'");
  return {passes[0].name, passes[1].name};
}

struct CaseGraph {
  std::shared_ptr<ir::Graph> graph;
  uint64_t input_seed = 0;
  int64_t int_high = 2;
  std::string description;
};

enum class CaseSource { Programs, Models, Situations };

// Case `index` of the campaign: from the program generator, the cleanup situations
// generator, or the debug models in turn.
CaseGraph make_case(uint64_t case_seed, int64_t index, CaseSource source) {
  CaseGraph c;
#ifdef PASSCHECK_HAVE_PROGRAM_GEN
  // Both generators return a graph with its input seed, integer range and description.
  auto adopt = [&](const auto& g, const std::string& generator) {
    c.graph = g.graph;
    c.input_seed = g.input_seed;
    c.int_high = g.int_high;
    c.description = generator + "(" + std::to_string(case_seed) + "): " + g.description;
    return c;
  };
  if (source == CaseSource::Situations) return adopt(gen::generate_cleanup_situation(case_seed), "generate_cleanup_situation");
  if (source == CaseSource::Programs) return adopt(gen::generate_case(case_seed), "generate_case");
#endif
  std::vector<std::string> names = models::available_subjects();
  const std::string& name = names[static_cast<size_t>(index) % names.size()];
  models::SubjectOptions options;
  options.seed = case_seed;
  if (name == "llama3") {
    options.batch_size = 1;
    options.seq_len = 16;
  }
  auto subject = models::make_subject(name, options);
  trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), false);
  c.graph = std::shared_ptr<ir::Graph>(program.graph().clone().release());
  c.input_seed = case_seed;
  c.description = "debug model " + name + " (seed " + std::to_string(case_seed) + ")";
  return c;
}

std::set<std::string> signatures(const std::vector<std::string>& violations) {
  std::set<std::string> s;
  for (const auto& v : violations) s.insert(check::violation_signature(v));
  return s;
}

bool runs_cleanly(const ir::Graph& g, uint64_t seed, int64_t int_high) {
  try {
    exec::InputOptions o;
    o.seed = seed;
    o.int_high = int_high;
    exec::ExecutorOptions eo;
    eo.check_metadata = true;
    exec::Executor(g, eo).run(exec::make_inputs(g, o));
    return true;
  } catch (const std::exception&) {
    return false;
  }
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

struct Shrunk {
  size_t before = 0, after = 0;
  bool ok = false;
};

// Minimizes the repro at `in` into `out` in-process; returns node counts.
Shrunk minimize_repro(const std::string& in, const std::string& out, const check::PassRegistry& registry,
                      double seconds, int64_t timeout_ms, bool verbose) {
  check::Repro r = check::read_repro(in);
  if (r.is_chunk_case())
    throw std::invalid_argument(in + ": a chunk case is a program, not a graph; it cannot be minimized");
  if (r.status != "failed" && r.status != "crash")
    throw std::invalid_argument(in + ": status is '" + r.status + "'; only failed and crash repros can be minimized");
  std::unique_ptr<ir::Graph> g = ir::parse_graph(r.graph_text(), in);
  check::StillFails fails = failure_predicate(r, registry, timeout_ms);
  Shrunk s;
  s.before = ir::parse_graph(r.original, in)->num_nodes();
  if (!fails(*g)) throw std::runtime_error(in + ": the failure does not reproduce; nothing to minimize");
  check::MinimizeOptions options;
  options.max_seconds = seconds;
  if (verbose) options.on_progress = [](size_t n) { std::cerr << "  minimizing: " << n << " nodes\n"; };
  check::MinimizeResult m = check::minimize_graph(*g, fails, options);
  r.minimized = m.graph->print();
  check::write_repro(out, r);
  s.after = m.nodes_after;
  s.ok = true;
  return s;
}

// Where a case child leaves its decision counts for the parent.
std::string coverage_path(const std::string& repro_path) { return repro_path + ".coverage"; }

void write_coverage(const std::string& path, const check::Coverage& coverage) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;  // the table then misses one case; the verdict does not depend on it
  std::string text = coverage.serialize();
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

// Reads and deletes a child's counts; a missing file (the child crashed or timed out
// before writing) adds nothing.
void collect_coverage(const std::string& path, check::Coverage& into) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return;
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
  std::fclose(f);
  fs::remove(path);
  into.merge(check::Coverage::parse(text));
}

struct Running {
  pid_t pid;
  int64_t index;
  uint64_t seed;
  std::string path;
  Clock::time_point start;
};

}  // namespace

int run_fuzz(const FuzzArgs& args) {
  return guarded("fuzz", [&]() -> int {
    if (!args.pipeline.empty() && !args.pass.empty()) throw std::invalid_argument("give exactly one of --pipeline and --pass");
    if (args.pipeline.empty() && args.pass.empty() && args.chunk.empty())
      throw std::invalid_argument("give exactly one of --pipeline and --pass");
    if (!args.baseline_pass.empty() && args.pass.empty()) throw std::invalid_argument("--baseline-pass needs --pass");
    if (args.jobs < 1) throw std::invalid_argument("--jobs must be at least 1");
    std::vector<std::string> sets = registry_sets(args.mutants, args.test_passes);
    check::PassRegistry registry = make_registry(sets);
    check::parse_pipeline(case_pipeline(args, 0), registry);  // bad names fail here, before any case
    int64_t max_cases = args.cases > 0 ? args.cases : (args.seconds > 0 ? 0 : 100);
    const bool chunk_mode = !args.chunk.empty();
    if (chunk_mode) {
      if (args.chunk != "batch")
        throw std::invalid_argument("--chunk " + args.chunk + ": generated programs have no sequence dimension; "
                                    "only batch chunking can be fuzzed");
      if (args.models) throw std::invalid_argument("--chunk draws chunkable programs; it cannot be combined with --models");
      chunk_passes_of(case_pipeline(args, 0), registry);
#ifndef PASSCHECK_HAVE_PROGRAM_GEN
      throw std::invalid_argument("--chunk needs the program generator, which this build does not have");
#endif
    }
    fs::create_directories(args.out);
    if (args.models && args.situations) throw std::invalid_argument("--models and --situations are two case sources; pick one");
    if (chunk_mode && args.situations) throw std::invalid_argument("--chunk draws chunkable programs; it cannot be combined with --situations");
    CaseSource source = args.situations ? CaseSource::Situations : args.models ? CaseSource::Models : CaseSource::Programs;
#ifndef PASSCHECK_HAVE_PROGRAM_GEN
    if (source == CaseSource::Situations) throw std::invalid_argument("--situations needs the generators, which this build does not have");
    source = CaseSource::Models;
#endif
    check::prepare_for_fork();

    check::Coverage coverage;
    int64_t baseline_fails = 0;
    int64_t started = 0, done = 0, violations = 0, crashes = 0, timeouts = 0, written = 0;
    int64_t first_failure = -1;
    double first_failure_s = 0;
    Shrunk first_shrunk;
    std::string first_repro;
    Clock::time_point t0 = Clock::now(), last_progress = t0;
    bool tty = isatty(2);
    std::vector<Running> running;
    auto failures = [&] { return violations + crashes + timeouts; };
    auto stop_starting = [&] {
      if (max_cases > 0 && started >= max_cases) return true;
      if (args.seconds > 0 && since(t0) >= args.seconds) return true;
      return args.max_failures > 0 && failures() >= args.max_failures;
    };
    auto progress = [&](bool final) {
      double s = since(t0);
      char line[160];
      std::snprintf(line, sizeof line, "fuzz: %lld cases, %.1f cases/s, %lld failures", static_cast<long long>(done),
                    s > 0 ? done / s : 0.0, static_cast<long long>(failures()));
      if (tty)
        std::cerr << "\r" << line << (final ? "\n" : "") << std::flush;
      else if (!final)
        std::cerr << line << "\n";
    };

    // A finished case: delete the pending repro, or complete and minimize it.
    auto finish = [&](const Running& r, const check::ChildOutcome& o) {
      ++done;
      collect_coverage(coverage_path(r.path), coverage);
      bool failed = true;
      std::string kind;
      if (o.kind == check::ChildOutcome::Kind::Exited && (o.exit_code == 0 || o.exit_code == 4)) {
        failed = false;
        baseline_fails += o.exit_code == 4;
        fs::remove(r.path);
      } else if (o.kind == check::ChildOutcome::Kind::Exited && o.exit_code == 1) {
        ++violations;
        kind = "violation";
      } else {
        bool timeout = o.kind == check::ChildOutcome::Kind::TimedOut;
        ++(timeout ? timeouts : crashes);
        kind = timeout ? "timeout" : "crash";
        if (fs::exists(r.path)) {
          check::Repro repro = check::read_repro(r.path);
          repro.status = timeout ? "timeout" : "crash";
          repro.property = timeout ? "timeout" : "crash";
          repro.messages = {"the case process " + o.describe(args.timeout_ms)};
          check::write_repro(r.path, repro);
        }
      }
      if (!failed) return;
      bool have_repro = fs::exists(r.path);
      written += have_repro;
      if (first_failure < 0) {
        first_failure = r.index;
        first_failure_s = since(t0);
        first_repro = r.path;
      }
      if (tty) std::cerr << "\n";
      std::cerr << "case " << r.index << " (seed " << r.seed << "): " << kind << " ("
                << (kind == "violation" ? "property violated" : o.describe(args.timeout_ms)) << "): "
                << (have_repro ? r.path : std::string("no repro: the case failed before writing its graph")) << "\n";
      if (!have_repro || !args.minimize || kind == "timeout" || chunk_mode) return;
      // Minimize in a child too: the minimizer runs the buggy pass again and again.
      check::ChildOutcome m = check::run_in_child(
          [&] {
            Shrunk s = minimize_repro(r.path, r.path, registry, args.minimize_seconds, args.timeout_ms, false);
            return s.ok ? 0 : 1;
          },
          static_cast<int64_t>(args.minimize_seconds * 1000) + 2 * args.timeout_ms + 5000);
      try {
        check::Repro repro = check::read_repro(r.path);
        Shrunk s;
        s.before = ir::parse_graph(repro.original, r.path)->num_nodes();
        s.after = ir::parse_graph(repro.graph_text(), r.path)->num_nodes();
        s.ok = m.kind == check::ChildOutcome::Kind::Exited && m.exit_code == 0;
        std::cerr << "  minimized: " << s.before << " -> " << s.after << " nodes"
                  << (s.ok ? "" : " (minimizer " + m.describe() + ")") << "\n";
        if (r.index == first_failure) first_shrunk = s;
      } catch (const std::exception& e) {
        std::cerr << "  minimizer left an unreadable repro: " << e.what() << "\n";
      }
    };

    while (true) {
      while (static_cast<int>(running.size()) < args.jobs && !stop_starting()) {
        int64_t index = started++;
        uint64_t seed = splitmix64(args.seed * 0x100000001b3ULL + static_cast<uint64_t>(index));
        Running r{-1, index, seed, args.out + "/case-" + std::to_string(index) + "-" + std::to_string(seed) + ".repro",
                  Clock::now()};
        std::string pipeline = case_pipeline(args, seed);
        std::string baseline;
        if (!args.baseline_pass.empty()) {
          FuzzArgs base = args;
          base.pass = args.baseline_pass;
          baseline = case_pipeline(base, seed);
        }
        r.pid = check::spawn_child([&]() -> int {
          // The case's own passes count their decisions; the baseline's are not the
          // campaign's. Written on every way out that returns.
          check::Coverage case_coverage;
          check::PassRegistry counting = check::counting_registry(registry, &case_coverage);
          struct WriteOnReturn {
            const std::string path;
            const check::Coverage& coverage;
            ~WriteOnReturn() { write_coverage(path, coverage); }
          } write_on_return{coverage_path(r.path), case_coverage};
#ifdef PASSCHECK_HAVE_PROGRAM_GEN
          if (chunk_mode) {
            gen::ChunkCase cc = gen::generate_chunk_case(seed);
            cc.config.mode = args.chunk;
            check::Repro repro;
            repro.pipeline = pipeline;
            repro.registries = sets;
            repro.seed = cc.seed;
            repro.chunk = cc.config.str();
            repro.program = cc.program;
            repro.case_description = "generate_chunk_case(" + std::to_string(seed) + "): " + cc.description;
            {
              // The program traced at the hint, for the reader (the replay runs the program).
              models::SubjectOptions so;
              so.seed = cc.seed;
              auto subject = gen::make_program_subject(gen::decode_spec(cc.program), so);
              repro.original = oracles::trace_subject(*subject, subject->batch(0), false).graph().print();
            }
            check::write_repro(r.path, repro);  // on disk before the passes run
            auto [chunk_pass, concretize_pass] = chunk_passes_of(pipeline, registry);
            gen::ChunkCaseResult result = gen::run_chunk_case(cc, counting, chunk_pass, concretize_pass);
            if (result.violations.empty()) return 0;
            if (!baseline.empty()) {
              auto [base_chunk, base_concretize] = chunk_passes_of(baseline, registry);
              if (!gen::run_chunk_case(cc, registry, base_chunk, base_concretize).violations.empty()) return 4;
            }
            repro.status = "failed";
            repro.property = "chunk-properties";
            repro.messages = result.violations;
            check::write_repro(r.path, repro);
            return 1;
          }
#endif
          CaseGraph c = make_case(seed, index, source);
          check::Repro repro;
          repro.pipeline = pipeline;
          repro.registries = sets;
          repro.seed = c.input_seed;
          repro.int_high = c.int_high;
          repro.case_description = c.description;
          repro.original = c.graph->print();
          check::write_repro(r.path, repro);  // on disk before the pass runs
          check::PassPropertyReport report = check::check_case(*c.graph, pipeline, c.input_seed, c.int_high, counting);
          if (report.violations.empty()) return 0;
          // Differential mode: a failure counts only when the baseline pass survives the case.
          if (!baseline.empty() &&
              !check::check_case(*c.graph, baseline, c.input_seed, c.int_high, registry).violations.empty())
            return 4;
          repro.status = "failed";
          repro.property = check::property_of(report.violations.front());
          repro.messages = report.violations;
          check::write_repro(r.path, repro);
          return 1;
        });
        if (r.pid < 0) throw std::runtime_error("fork failed");
        running.push_back(r);
      }
      if (running.empty()) break;
      for (size_t i = 0; i < running.size();) {
        check::ChildOutcome o;
        bool ended = check::poll_child(running[i].pid, o);
        if (!ended && args.timeout_ms > 0 && since(running[i].start) * 1000 > static_cast<double>(args.timeout_ms)) {
          check::kill_child(running[i].pid);
          o.kind = check::ChildOutcome::Kind::TimedOut;
          ended = true;
        }
        if (!ended) {
          ++i;
          continue;
        }
        Running r = running[i];
        running.erase(running.begin() + static_cast<long>(i));
        finish(r, o);
      }
      if (since(last_progress) >= (tty ? 0.5 : 10.0)) {
        progress(false);
        last_progress = Clock::now();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    progress(true);
    double total = since(t0);
    char line[320];
    std::snprintf(line, sizeof line,
                  "fuzz summary: %lld cases run, %lld failures (%lld violations, %lld crashes, %lld timeouts), "
                  "%lld repro files written, %.2f cases/s, %.1f s\n",
                  static_cast<long long>(done), static_cast<long long>(failures()), static_cast<long long>(violations),
                  static_cast<long long>(crashes), static_cast<long long>(timeouts), static_cast<long long>(written),
                  total > 0 ? done / total : 0.0, total);
    std::cout << "pipeline: " << case_pipeline(args, 0) << (case_pipeline(args, 0) != case_pipeline(args, 1) ? " (sac-tag policy varies with the case seed)" : "")
              << "\n"
              << line;
    if (!args.baseline_pass.empty())
      std::cout << baseline_fails << " cases not counted: " << args.baseline_pass << " fails them too\n";
    // Decision coverage of the passes the campaign ran (those that declare any).
    std::set<std::string> ran = coverage.passes();
    for (const check::PassInvocation& inv : check::parse_pipeline(case_pipeline(args, 0), registry)) ran.insert(inv.name);
    std::string table = coverage.table(registry, ran);
    if (!table.empty()) std::cout << "decision coverage (rules fired, guards refused, over all cases):\n" << table;
    if (first_failure >= 0 && chunk_mode) {
      std::printf("first failure at case %lld (%lld cases run to find it), %.1f s; repro %s (chunk case: a program, "
                  "not minimized)\n",
                  static_cast<long long>(first_failure), static_cast<long long>(first_failure + 1), first_failure_s,
                  first_repro.c_str());
    } else if (first_failure >= 0) {
      std::printf("first failure at case %lld (%lld cases run to find it), %.1f s; repro %s; minimized %zu -> %zu nodes\n",
                  static_cast<long long>(first_failure), static_cast<long long>(first_failure + 1), first_failure_s,
                  first_repro.c_str(), first_shrunk.before, first_shrunk.after);
    }
    std::fflush(stdout);
    return failures() > 0 ? 1 : 0;
  });
}

int run_repro(const ReproArgs& args) {
  return guarded("repro", [&]() -> int {
    check::Repro r = check::read_repro(args.file);
    if (!args.pipeline.empty()) r.pipeline = args.pipeline;
    check::PassRegistry registry = make_registry(r.registries);
    check::parse_pipeline(r.pipeline, registry);  // unknown pass: exit 2 here
    if (r.is_chunk_case()) {
#ifdef PASSCHECK_HAVE_PROGRAM_GEN
      gen::ChunkCase cc;
      cc.program = r.program;
      cc.seed = r.seed;
      cc.config = gen::ChunkConfig::parse(r.chunk);
      gen::decode_spec(cc.program);  // malformed program: exit 2 here
      auto [chunk_pass, concretize_pass] = chunk_passes_of(r.pipeline, registry);
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
          args.timeout_ms);
      if (o.kind == check::ChildOutcome::Kind::Exited && (o.exit_code == 0 || o.exit_code == 1)) return o.exit_code;
      std::cout << "verdict: FAILS (the replay process " << o.describe(args.timeout_ms) << ")\n";
      return 1;
#else
      throw std::invalid_argument("a chunk case needs the program generator, which this build does not have");
#endif
    }
    std::cout << "passcheck repro " << args.file << ": pipeline " << r.pipeline << ", seed " << r.seed << ", "
              << ir::parse_graph(r.graph_text(), args.file)->num_nodes() << " nodes ("
              << (r.minimized.empty() ? "original" : "minimized") << " graph)"
              << (r.version != PASSCHECK_VERSION ? ", written by passcheck " + r.version : "") << "\n";
    check::prepare_for_fork();
    // In a child, so a crash repro reports the crash instead of crashing `repro`.
    check::ChildOutcome o = check::run_in_child(
        [&] {
          check::PassPropertyReport report = check::replay(r, registry);
          for (const auto& v : report.violations) std::cout << "violation: " << v << "\n";
          std::cout << (report.violations.empty() ? "verdict: PASSES\n" : "verdict: FAILS\n");
          return report.violations.empty() ? 0 : 1;
        },
        args.timeout_ms);
    if (o.kind == check::ChildOutcome::Kind::Exited && (o.exit_code == 0 || o.exit_code == 1)) return o.exit_code;
    std::cout << "verdict: FAILS (the replay process " << o.describe(args.timeout_ms) << ")\n";
    return 1;
  });
}

int run_minimize(const MinimizeArgs& args) {
  return guarded("minimize", [&]() -> int {
    check::Repro r = check::read_repro(args.file);
    check::PassRegistry registry = make_registry(r.registries);
    check::prepare_for_fork();
    std::string out = args.out.empty() ? args.file : args.out;
    size_t from = ir::parse_graph(r.graph_text(), args.file)->num_nodes();
    Shrunk s = minimize_repro(args.file, out, registry, args.seconds, args.timeout_ms, true);
    std::cout << "minimized " << args.file << ": " << from << " -> " << s.after << " nodes (original " << s.before
              << "); wrote " << out << "\n";
    return 0;
  });
}

int run_capture(const CaptureArgs& args) {
  return guarded("capture", [&]() -> int {
    if (args.out.empty()) throw std::invalid_argument("--out is required");
    std::vector<std::string> sets = registry_sets(args.mutants, args.test_passes);
    check::PassRegistry registry = make_registry(sets);
    check::parse_pipeline(args.pipeline, registry);
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
    check::PassPropertyReport report = check::replay(r, registry);
    r.status = report.violations.empty() ? "passed" : "failed";
    if (!report.violations.empty()) r.property = check::property_of(report.violations.front());
    r.messages = report.violations;
    check::write_repro(args.out, r);
    std::cout << "wrote " << args.out << " (" << program.graph().num_nodes() << " nodes): "
              << (report.violations.empty() ? "passes" : "FAILS") << "\n";
    for (const auto& v : report.violations) std::cout << "violation: " << v << "\n";
    return report.violations.empty() ? 0 : 1;
  });
}

}  // namespace passcheck::cli
