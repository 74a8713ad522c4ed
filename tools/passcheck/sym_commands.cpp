// passcheck chunk / prove: graph chunking against eager chunking, and Z3 over the claims
// a graph file records.
#include "tools/passcheck/commands.h"
#include "framework/io/files.h"

#include "framework/check/pass.h"
#include "framework/check/verifier.h"
#include "workflows/graph_files/graph_tools.h"
#include "tools/passcheck/report_commands.h"
#include "framework/ir/text.h"
#include "framework/sym/prover.h"
#include "oracles/chunked_training.h"

#include <fstream>
#include <iostream>

#include <unistd.h>
#include <sstream>

namespace passcheck::cli {

int run_chunk(const ChunkArgs& args) {
  report::Report html("chunk", current_command_line());
  PassDiffRecorder diffs;
  // The report's passes (with their diffs) and claims, also when the run stops early.
  auto fill_report = [&](const oracles::ChunkedTrainingReport* result) {
    if (args.report.empty()) return;
    html.add_fact("model", args.model);
    html.add_fact("chunked dimension", args.mode);
    html.add_fact("modules", args.modules);
    html.add_fact("early gradient accumulation", args.early_accumulation ? "on" : "off");
    html.add_fact("steps", std::to_string(args.steps));
    if (result) {
      html.add_fact("nodes before chunking", std::to_string(result->nodes_before));
      html.add_fact("nodes after concretization", std::to_string(result->nodes_after));
      html.add_fact("largest ULP distance", std::to_string(result->max_ulp));
    }
    diffs.add_to(html, result ? result->passes : std::vector<check::PassRecord>{});
    if (diffs.first_estimate() && diffs.last_estimate())
      html.add_memory_timeline(estimate_timeline(
          "live bytes per node, before chunking vs after concretization (static estimate at the traced sizes)",
          {{"before chunking", *diffs.first_estimate()}, {"after the last pass", *diffs.last_estimate()}}));
    if (result) add_driver_steps(html, result->driver);
  };
  return guarded("chunk", [&] { return run_reported(args.report, html, [&] {
  try {
    if (!args.out_graph.empty()) io::check_writable(args.out_graph, "--out-graph file");
    oracles::ChunkedTrainingOptions options;
    options.model = args.model;
    options.steps = args.steps;
    options.subject.seed = args.seed;
    options.subject.batch_size = args.batch_size;
    options.subject.seq_len = args.seq_len;
    check_training_memory(args.model, options.subject, FootprintShape{2, 1, 1, args.memory_budget});
    options.dim = oracles::parse_symbolic_dim(args.mode);
    options.modules = args.modules;
    options.early_accumulation = args.early_accumulation;
    options.between = args.between;
    options.registry = &check::PassRegistry::global();
    options.prove.timeout_ms = args.timeout_ms;
    if (!args.report.empty()) {
      options.pipeline.dump = diffs.dump();
      options.on_proofs = [&](const sym::ProofReport& proofs) { html.add_claims(proofs); };
    }
    if (!args.out_graph.empty())
      options.on_chunked = [&](const ir::Graph& graph) {
        io::write_file(args.out_graph,
                       "# passcheck chunk --model " + args.model + " --mode " + args.mode + " --modules " + args.modules +
                           ": the chunked graph before concretization\n" + graph.print(),
                       "--out-graph file");
      };
    // On a terminal, one line rewritten in place says which stage is running.
    const bool terminal = ::isatty(STDERR_FILENO) != 0;
    if (terminal)
      options.on_progress = [](const std::string& stage) { std::cerr << "\r\033[Kpasscheck chunk: " << stage << std::flush; };
    oracles::ChunkedTrainingReport report = oracles::run_graph_chunked_vs_eager_chunked(options);
    if (terminal) std::cerr << "\r\033[K" << std::flush;
    fill_report(&report);
    std::cout << "passcheck chunk: " << args.model << ", " << args.mode << " chunking of " << args.modules
              << ", early gradient accumulation " << (args.early_accumulation ? "on" : "off") << ", " << args.steps
              << " steps: graph-chunked vs eager-chunked\n"
              << report.format();
    if (args.early_accumulation) {
      // Early accumulation may change numerics: the verdict is the stated ULP tolerance.
      const bool within = report.max_ulp <= args.tolerance_ulp;
      std::cout << "verdict: " << (within ? "within" : "OUTSIDE") << " the tolerance of " << args.tolerance_ulp
                << " ULP (max " << report.max_ulp << ")\n";
      html.set_verdict(within ? 0 : 1, std::string(within ? "within" : "OUTSIDE") + " the tolerance of " +
                                           std::to_string(args.tolerance_ulp) + " ULP (max " + std::to_string(report.max_ulp) + ")");
      return within ? 0 : 1;
    }
    html.set_verdict(report.equal() ? 0 : 1, driver_verdict(report.driver));
    return report.equal() ? 0 : 1;
  } catch (const check::PassFailure& failure) {
    // The verdict goes with the report on stdout.
    std::cout << "verdict: FAILED " << failure.what() << "\n";
    fill_report(nullptr);
    html.set_verdict(1, failure.what());
    return 1;
  } catch (const std::exception&) {
    fill_report(nullptr);  // refuted claims stop the run: their table stays in the report
    throw;
  }
  }); });
}

int run_prove(const ProveArgs& args) {
  return guarded("prove", [&] {
    // Loaded and checked as `passcheck run` loads it, then the structural verifier (which
    // also holds the concrete sizes to their expressions at the hints): a claim about a
    // graph that cannot run proves nothing.
    std::unique_ptr<ir::Graph> graph = graph_files::load_graph_file(args.file);
    check::verify_or_throw(*graph, args.file);
    sym::ProveOptions options;
    options.timeout_ms = args.timeout_ms;
    sym::ProofReport report = sym::prove_all(graph->claims(), graph->symbols(), options);
    std::cout << "passcheck prove: " << args.file << ", Z3 " << sym::z3_version() << "\n";
    for (const sym::Symbol& s : graph->symbols()) std::cout << "symbol " << s.to_string() << "\n";
    if (args.verbose)
      for (const sym::ClaimResult& r : report.results) std::cout << r.format() << "\n";
    std::cout << report.format() << "\n";
    return report.all_proved() ? 0 : 1;
  });
}

}  // namespace passcheck::cli
