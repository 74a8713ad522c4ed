// passcheck opt / equiv: graph files through a pipeline (like mlir-opt) and translation
// validation of two graph files (the same inputs and generator state, every output
// compared bit for bit), so a pass run anywhere can be checked from its input and output.
#include "tools/passcheck/commands.h"
#include "framework/io/files.h"

#include "framework/check/pipeline.h"
#include "workflows/graph_files/graph_tools.h"
#include "tools/passcheck/report_commands.h"
#include "framework/ir/text.h"
#include "passes/cudagraph/capturable.h"
#include "suites/mutants/mutants.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <unordered_set>
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

check::Pipeline parse_pipeline_for(const std::string& pipeline_text, bool mutants) {
  return check::Pipeline::parse(pipeline_text,
                                mutants ? mutants::registry_with_mutants() : check::PassRegistry::global());
}

void log_records(const std::vector<check::PassRecord>& records, std::ostream& log, const char* command) {
  for (const check::PassRecord& r : records) log << "passcheck " << command << ": " << format_record(r) << "\n";
}

// What a graph file becomes after a pipeline: a graph, or a module when the pipeline
// holds a partitioner (or the file already was a module).
struct Optimized {
  std::unique_ptr<ir::Graph> graph;
  std::optional<ir::Module> module;
  std::string print() const { return module ? module->print() : graph->print(); }
};

// Runs the pipeline behind the gate, printing one line per pass to `log`. With
// `mutants` the known-buggy passes (suites/mutants) can be named too: a way to see what
// the gate and equiv report for a wrong pass.
// `records` (optional) receives the pass records, `options` are the pipeline's.
Optimized optimize(std::unique_ptr<ir::Graph> graph, const std::string& pipeline_text, bool mutants,
                   std::ostream& log, const char* command, const check::PipelineOptions& options = {},
                   std::vector<check::PassRecord>* records = nullptr) {
  check::Pipeline pipeline = parse_pipeline_for(pipeline_text, mutants);
  Optimized out;
  std::vector<check::PassRecord> ran;
  if (pipeline.has_module_pass()) {
    out.module = ir::Module::of_graph(std::move(graph));
    ran = pipeline.run(*out.module, options);
  } else {
    ran = pipeline.run(*graph, options);
    out.graph = std::move(graph);
  }
  log_records(ran, log, command);
  if (records) *records = std::move(ran);
  return out;
}

bool is_module_file(const std::string& path) { return ir::is_module_text(io::read_file(path, "graph file")); }

}  // namespace

int run_opt(const OptArgs& args) {
  return guarded("opt", [&] {
    std::string text;
    if (is_module_file(args.file)) {
      ir::Module module = graph_files::load_module_file(args.file);
      log_records(parse_pipeline_for(args.pipeline, args.mutants).run(module), std::cerr, "opt");
      text = module.print();
    } else {
      text = optimize(graph_files::load_graph_file(args.file), args.pipeline, args.mutants, std::cerr, "opt").print();
    }
    if (args.out.empty()) {
      std::cout << text;
    } else {
      io::write_file(args.out, text, "graph file");
    }
    return 0;
  });
}

int run_equiv(const EquivArgs& args) {
  report::Report html("equiv", current_command_line());
  return guarded("equiv", [&] { return run_reported(args.report, html, [&] {
    if (args.b.empty() == args.pipeline.empty())
      throw std::invalid_argument("give a second graph file B or --pipeline P (B is then A after the pipeline), not both");
    std::unique_ptr<ir::Graph> a = graph_files::load_graph_file(args.a);
    Optimized b;
    std::string b_name = args.b;
    const bool reporting = !args.report.empty();
    PassDiffRecorder diffs;
    std::vector<check::PassRecord> records;
    if (reporting) {
      html.add_fact("graph A", args.a);
      html.add_fact("graph A nodes", std::to_string(a->num_nodes()));
      html.add_fact("seed", std::to_string(args.seed));
    }
    if (!args.pipeline.empty()) {
      check::PipelineOptions options;
      if (reporting) {
        html.add_fact("pipeline", args.pipeline);
        options.dump = diffs.dump();
      }
      try {
        b = optimize(a->clone(), args.pipeline, args.mutants, std::cout, "equiv", options, &records);
      } catch (const check::PassFailure&) {
        diffs.add_to(html, records);  // the passes up to the one that broke the gate
        throw;
      }
      diffs.add_to(html, records);
      b_name = "opt(" + args.a + ", " + args.pipeline + ")";
    } else if (is_module_file(args.b)) {
      b.module = graph_files::load_module_file(args.b);
    } else {
      b.graph = graph_files::load_graph_file(args.b);
    }
    if (!args.device.empty()) {
      graph_files::retarget_graph(*a, args.device);
      if (b.module)
        for (ir::ModulePart& part : b.module->parts) graph_files::retarget_graph(*part.graph, args.device);
      else
        graph_files::retarget_graph(*b.graph, args.device);
    }
    graph_files::EquivOptions options;
    options.seed = args.seed;
    options.int_high = args.int_high;
    options.rng_seed = args.seed;
    options.max_bytes = args.memory_budget;
    options.inputs_file = args.inputs_file;
    if (args.threads > 0) at::set_num_threads(args.threads);
    if (reporting) add_equiv_sections(html, *a, b.graph.get(), b.module ? &*b.module : nullptr, b_name, args.pipeline.empty());
    graph_files::EquivReport report = b.module ? graph_files::compare_graph_with_module(*a, *b.module, options) : graph_files::compare_graphs(*a, *b.graph, options);
    std::cout << "passcheck equiv: A " << args.a << ", B " << b_name << ", seed " << args.seed
              << (args.inputs_file.empty() ? "" : ", inputs " + args.inputs_file) << "\n"
              << report.format();
    if (reporting) add_equiv_comparison(html, report);
    return report.equal() ? 0 : 1;
  }); });
}

int run_capturable(const CapturableArgs& args) {
  return guarded("capturable", [&] {
    std::unique_ptr<ir::Graph> graph = graph_files::load_graph_file(args.file);
    // Only the types move: nothing runs, so no device is needed to ask what a capture on
    // it would refuse.
    graph_files::retarget_graph(*graph, args.device, /*require_available=*/false);
    // The cudagraph pass's static-input rule, on the graph as a one-part module.
    const ir::Module module = ir::Module::of_graph(graph->clone());
    std::unordered_set<const ir::Value*> copied;
    std::vector<size_t> static_inputs;
    for (size_t i = 0; i < graph->inputs().size(); ++i) {
      if (passes::has_fixed_address(module, 0, i)) static_inputs.push_back(i);
      else copied.insert(graph->inputs()[i]);
    }
    const passes::CaptureContext ctx =
        passes::CaptureContext::of(*graph, ir::CaptureSpec::Backend::Replay, std::move(copied));
    std::vector<std::string> refused;
    for (const ir::Node* n : graph->nodes())
      if (const char* why = passes::why_not_capturable(*n, ctx))
        refused.push_back("%" + (n->outputs().empty() ? n->op() : n->outputs()[0]->name()) + " " + n->op() + ": " + why);
    std::cout << args.file << ": " << (graph->num_nodes() - refused.size()) << " of " << graph->num_nodes()
              << " nodes capturable on " << args.device << "\n";
    std::cout << "static inputs:";
    for (size_t i : static_inputs) std::cout << " " << i;
    std::cout << "\n";
    for (const std::string& line : refused) std::cout << "not capturable " << line << "\n";
    return 0;
  });
}

}  // namespace passcheck::cli
