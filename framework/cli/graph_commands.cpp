// passcheck opt / equiv: graph files through a pipeline (like mlir-opt) and translation
// validation of two graph files (the same inputs and generator state, every output
// compared bit for bit), so a pass run anywhere can be checked from its input and output.
#include "framework/cli/commands.h"
#include "framework/io/files.h"

#include "framework/check/pipeline.h"
#include "framework/cli/graph_tools.h"
#include "framework/compat/torch_compat.h"
#include "framework/ir/text.h"
#include "suites/mutants/mutants.h"

#include <c10/util/Exception.h>

#include <fstream>
#include <functional>
#include <iostream>

namespace passcheck::cli {

namespace {

std::string format_record(const check::PassRecord& r) {
  std::string line = r.pass + ": " + (r.changed ? "changed" : "unchanged") + ", nodes " +
                     std::to_string(r.nodes_before) + " -> " + std::to_string(r.nodes_after);
  for (const auto& [name, value] : r.stats) line += ", " + name + "=" + std::to_string(value);
  // Why candidates were refused, where the pass says more than a count (a refuted claim).
  for (const std::string& note : r.notes) line += "\n  refused: " + note;
  return line;
}

// Runs the pipeline behind the gate, printing one line per pass to `log`. With
// `mutants` the known-buggy passes (suites/mutants) can be named too: a way to see what
// the gate and equiv report for a wrong pass.
void optimize(ir::Graph& graph, const std::string& pipeline_text, bool mutants, std::ostream& log,
              const char* command) {
  check::Pipeline pipeline =
      check::Pipeline::parse(pipeline_text, mutants ? mutants::registry_with_mutants() : check::PassRegistry::global());
  std::vector<check::PassRecord> records = pipeline.run(graph);
  for (const check::PassRecord& r : records) log << "passcheck " << command << ": " << format_record(r) << "\n";
}

}  // namespace

int run_opt(const OptArgs& args) {
  return guarded("opt", [&] {
    std::unique_ptr<ir::Graph> graph = load_graph_file(args.file);
    optimize(*graph, args.pipeline, args.mutants, std::cerr, "opt");
    const std::string text = graph->print();
    if (args.out.empty()) {
      std::cout << text;
    } else {
      io::write_file(args.out, text, "graph file");
    }
    return 0;
  });
}

int run_equiv(const EquivArgs& args) {
  return guarded("equiv", [&] {
    if (args.b.empty() == args.pipeline.empty())
      throw std::invalid_argument("give a second graph file B or --pipeline P (B is then A after the pipeline), not both");
    std::unique_ptr<ir::Graph> a = load_graph_file(args.a);
    std::unique_ptr<ir::Graph> b;
    std::string b_name = args.b;
    if (!args.pipeline.empty()) {
      b = a->clone();
      optimize(*b, args.pipeline, args.mutants, std::cout, "equiv");
      b_name = "opt(" + args.a + ", " + args.pipeline + ")";
    } else {
      b = load_graph_file(args.b);
    }
    if (!args.device.empty()) {
      retarget_graph(*a, args.device);
      retarget_graph(*b, args.device);
    }
    EquivOptions options;
    options.seed = args.seed;
    options.int_high = args.int_high;
    options.rng_seed = args.seed;
    options.max_bytes = args.memory_budget;
    EquivReport report = compare_graphs(*a, *b, options);
    std::cout << "passcheck equiv: A " << args.a << ", B " << b_name << ", seed " << args.seed << "\n"
              << report.format();
    return report.equal() ? 0 : 1;
  });
}

}  // namespace passcheck::cli
