// passcheck chunk / prove: graph chunking against eager chunking, and Z3 over the claims
// a graph file records.
#include "framework/cli/commands.h"
#include "framework/io/files.h"

#include "framework/check/pass.h"
#include "framework/check/verifier.h"
#include "framework/cli/graph_tools.h"
#include "framework/compat/torch_compat.h"
#include "framework/ir/text.h"
#include "framework/sym/prover.h"
#include "oracles/chunked_training.h"

#include <fstream>
#include <iostream>

#include <unistd.h>
#include <sstream>

namespace passcheck::cli {

int run_chunk(const ChunkArgs& args) {
  return guarded("chunk", [&] {
  try {
    if (!args.out_graph.empty()) io::check_writable(args.out_graph, "--out-graph file");
    oracles::ChunkedTrainingOptions options;
    options.model = args.model;
    options.steps = args.steps;
    options.subject.seed = args.seed;
    options.subject.batch_size = args.batch_size;
    options.subject.seq_len = args.seq_len;
    options.dim = oracles::parse_symbolic_dim(args.mode);
    options.modules = args.modules;
    options.early_accumulation = args.early_accumulation;
    options.between = args.between;
    options.registry = &check::PassRegistry::global();
    options.prove.timeout_ms = args.timeout_ms;
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
    std::cout << "passcheck chunk: " << args.model << ", " << args.mode << " chunking of " << args.modules
              << ", early gradient accumulation " << (args.early_accumulation ? "on" : "off") << ", " << args.steps
              << " steps: graph-chunked vs eager-chunked\n"
              << report.format();
    if (args.early_accumulation) {
      // Early accumulation may change numerics: the verdict is the stated ULP tolerance.
      const bool within = report.max_ulp <= args.tolerance_ulp;
      std::cout << "verdict: " << (within ? "within" : "OUTSIDE") << " the tolerance of " << args.tolerance_ulp
                << " ULP (max " << report.max_ulp << ")\n";
      return within ? 0 : 1;
    }
    return report.equal() ? 0 : 1;
  } catch (const check::PassFailure& failure) {
    // The verdict goes with the report on stdout.
    std::cout << "verdict: FAILED " << failure.what() << "\n";
    return 1;
  }
  });
}

int run_prove(const ProveArgs& args) {
  return guarded("prove", [&] {
    // Loaded and checked as `passcheck run` loads it, then the structural verifier (which
    // also holds the concrete sizes to their expressions at the hints): a claim about a
    // graph that cannot run proves nothing.
    std::unique_ptr<ir::Graph> graph = load_graph_file(args.file);
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
