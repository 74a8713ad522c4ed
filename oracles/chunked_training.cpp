// Graph-chunked vs eager-chunked training (chunked_training.h).
#include "oracles/chunked_training.h"

#include <chrono>
#include <sstream>
#include <stdexcept>

namespace passcheck::oracles {

std::string ChunkedTrainingReport::format() const {
  std::ostringstream out;
  out << "symbolized from traces at";
  for (int64_t v : traced_at) out << " " << v;
  out << " in " << static_cast<int64_t>(symbolize_seconds * 1000) << " ms; graph " << nodes_before << " -> "
      << nodes_after << " nodes\n";
  for (const check::PassRecord& r : passes) {
    out << "  " << r.pass << ":";
    for (const auto& [k, v] : r.stats) out << " " << k << "=" << v;
    out << "\n";
  }
  out << proofs.format() << "\n";
  out << driver.format();
  out << "max ULP distance " << max_ulp << " over " << differing_values << " differing values\n";
  return out.str();
}

ChunkedTrainingReport run_graph_chunked_vs_eager_chunked(const ChunkedTrainingOptions& options) {
  if (!options.registry) throw std::invalid_argument("run_graph_chunked_vs_eager_chunked: no pass registry given");
  ChunkedTrainingReport report;
  SymbolicTraceOptions trace_options;
  trace_options.model = options.model;
  trace_options.subject = options.subject;
  trace_options.dim = options.dim;
  trace_options.make_subject = options.make_subject;
  // A factory's subject cannot be rebuilt on the meta device by name (trace_subject).
  trace_options.trace_on_meta = !options.make_subject;
  auto progress = [&](const std::string& stage) {
    if (options.on_progress) options.on_progress(stage);
  };
  progress("symbolic trace");
  SymbolicTrace symbolic = trace_symbolic(trace_options);
  report.traced_at = symbolic.traced_at;
  report.symbolize_seconds = symbolic.seconds;
  report.nodes_before = symbolic.graph->num_nodes();

  std::map<std::string, std::string> chunk_options = {
      {"mode", to_string(options.dim)},
      {"modules", options.modules},
      {"early-accumulation", options.early_accumulation ? "true" : "false"}};
  progress("chunk (" + std::to_string(report.nodes_before) + " nodes)");
  check::Pipeline chunk({check::PassInvocation{options.chunk_pass, chunk_options}}, *options.registry);
  auto records = chunk.run(*symbolic.graph, options.pipeline);
  if (!options.between.empty()) {
    auto more = check::Pipeline::parse(options.between, *options.registry).run(*symbolic.graph, options.pipeline);
    records.insert(records.end(), more.begin(), more.end());
  }
  if (options.on_chunked) options.on_chunked(*symbolic.graph);
  // Proofs happen on the symbolic graph: after concretization only the hint is left.
  progress("proving " + std::to_string(symbolic.graph->claims().size()) + " claims with Z3");
  report.proofs = sym::prove_all(symbolic.graph->claims(), symbolic.graph->symbols(), options.prove);
  if (options.on_proofs) options.on_proofs(report.proofs);
  if (options.require_proofs && !report.proofs.all_proved())
    throw std::runtime_error("claims of the chunked graph are not all proved:\n" + report.proofs.format());
  auto concretize = check::Pipeline({check::PassInvocation{options.concretize_pass, {}}}, *options.registry)
                        .run(*symbolic.graph, options.pipeline);
  records.insert(records.end(), concretize.begin(), concretize.end());
  report.passes = records;
  report.nodes_after = symbolic.graph->num_nodes();

  DriverOptions driver;
  driver.model = options.model;
  driver.subject = options.subject;
  driver.steps = options.steps;
  driver.optimizer = options.optimizer;
  if (options.make_subject) {
    auto factory = options.make_subject;
    models::SubjectOptions subject = options.subject;
    driver.make_subject = [factory, subject] { return factory(subject); };
  }
  driver.eager_chunking = EagerChunkConfig{{}, tensor_dim(options.dim)};
  for (size_t start = 0; start <= options.modules.size();) {
    size_t comma = options.modules.find(',', start);
    if (comma == std::string::npos) comma = options.modules.size();
    if (comma > start) driver.eager_chunking->module_patterns.push_back(options.modules.substr(start, comma - start));
    start = comma + 1;
  }
  std::shared_ptr<ir::Graph> chunked = symbolic.graph;
  // The driver's own trace only supplies the program the chunked graph replaces: on meta
  // it computes nothing (and on a mesh it runs no collective while other ranks train).
  driver.trace_on_meta = trace_options.trace_on_meta;
  driver.transform = [chunked](trace::TracedProgram& program) { program.replace_graph(chunked); };
  driver.executor.check_metadata = true;
  driver.on_step = [&](const DriverReport&, const StepReport& step) {
    progress("training: step " + std::to_string(step.step) + "/" + std::to_string(options.steps) + " done");
  };
  progress("training: step 1/" + std::to_string(options.steps));
  report.driver = run_traced_vs_eager(driver);
  for (const StepReport& step : report.driver.steps)
    for (const check::TensorComparison& c : step.comparisons) {
      if (c.equal) continue;
      ++report.differing_values;
      report.max_ulp = std::max(report.max_ulp, c.max_ulp);
    }
  return report;
}

}  // namespace passcheck::oracles
