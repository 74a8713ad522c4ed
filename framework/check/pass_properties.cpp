// Generic pass properties (see pass_properties.h).
#include "framework/check/pass_properties.h"

#include "framework/check/compare.h"
#include "framework/check/memory_estimate.h"
#include "framework/exec/executor.h"
#include "framework/ir/text.h"

#include <ATen/ATen.h>

namespace passcheck::check {

namespace {
constexpr uint64_t kRunSeed = 20261121;

std::vector<c10::IValue> run_graph(const ir::Graph& g, const std::vector<c10::IValue>& inputs) {
  at::manual_seed(kRunSeed);
  exec::ExecutorOptions options;
  options.check_metadata = true;
  return exec::Executor(g, options).run(inputs);
}
}  // namespace

PassPropertyReport check_pass_properties(const ir::Graph& graph, const std::vector<c10::IValue>& inputs,
                                         const std::string& pipeline_text, const PassRegistry& registry) {
  PassPropertyReport report;
  auto& v = report.violations;
  Pipeline pipeline = Pipeline::parse(pipeline_text, registry);
  std::unique_ptr<ir::Graph> g = graph.clone();
  try {
    report.records = pipeline.run(*g);
  } catch (const PassFailure& failure) {
    v.push_back(failure.what());
    return report;
  }

  // Idempotence: every pass that declares it, run again on its own result.
  for (const PassInvocation& pass : pipeline.passes()) {
    if (!registry.get(pass.name).info.idempotent) continue;
    std::unique_ptr<ir::Graph> again = g->clone();
    try {
      auto records = Pipeline({pass}, registry).run(*again);
      if (records.at(0).changed) v.push_back(pass.str() + " is declared idempotent but changed the graph on a second run");
    } catch (const PassFailure& failure) {
      v.push_back(std::string("second run: ") + failure.what());
    }
  }

  // Text identity of the result.
  std::string printed = g->print();
  try {
    if (ir::parse_graph(printed, "<result>")->print() != printed) v.push_back("print -> parse -> print is not the identity");
  } catch (const ir::ParseError& e) {
    v.push_back(std::string("the result does not parse back: ") + e.what());
  }

  bool preserves = true, memory_only = false;
  for (const PassInvocation& pass : pipeline.passes()) {
    NumericsEffect effect = registry.get(pass.name).info.numerics;
    preserves &= effect != NumericsEffect::Changes;
    memory_only |= effect == NumericsEffect::MemoryOnly;
  }
  if (memory_only) {
    int64_t was = estimate_memory(graph).peak_bytes, now = estimate_memory(*g).peak_bytes;
    if (now > was)
      v.push_back("estimated peak memory grew from " + std::to_string(was) + " to " + std::to_string(now) + " bytes");
  }
  if (preserves) {
    try {
      std::vector<c10::IValue> expected = run_graph(graph, inputs), actual = run_graph(*g, inputs);
      if (expected.size() != actual.size()) {
        v.push_back("the graph returns " + std::to_string(actual.size()) + " outputs instead of " +
                    std::to_string(expected.size()));
      } else {
        for (size_t i = 0; i < expected.size(); ++i) {
          if (!expected[i].isTensor() || !actual[i].isTensor()) continue;
          TensorComparison c = compare_bitwise("output " + std::to_string(i) + " %" + graph.outputs()[i]->name(),
                                               expected[i].toTensor(), actual[i].toTensor());
          if (!c.equal) v.push_back(pipeline.str() + " changed numerics: " + c.describe());
        }
      }
    } catch (const std::exception& e) {
      v.push_back(std::string("running the rewritten graph failed: ") + e.what());
    }
  }
  return report;
}

}  // namespace passcheck::check
