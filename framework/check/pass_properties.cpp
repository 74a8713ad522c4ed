// Generic pass properties (see pass_properties.h).
#include "framework/check/pass_properties.h"

#include "framework/check/compare.h"
#include "framework/check/memory_estimate.h"
#include "framework/check/replay_properties.h"
#include "framework/exec/executor.h"
#include "framework/exec/module_executor.h"
#include "framework/ir/text.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <optional>

namespace passcheck::check {

namespace {
constexpr uint64_t kRunSeed = 20261121;

// Each run gets its own copies of the inputs: a graph that updates a buffer in place
// would otherwise hand the second run (the rewritten graph) different inputs. The copies
// are left in `inputs_after` (when given): what the run wrote into its inputs.
std::vector<c10::IValue> fresh_inputs(const std::vector<c10::IValue>& inputs) {
  std::vector<c10::IValue> fresh;
  fresh.reserve(inputs.size());
  for (const c10::IValue& v : inputs) fresh.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
  return fresh;
}

std::vector<c10::IValue> run_graph(const ir::Graph& g, const std::vector<c10::IValue>& inputs,
                                   std::vector<c10::IValue>* inputs_after = nullptr) {
  at::manual_seed(kRunSeed);
  exec::ExecutorOptions options;
  options.check_metadata = true;
  std::vector<c10::IValue> fresh = fresh_inputs(inputs);
  std::vector<c10::IValue> outputs = exec::Executor(g, options).run(fresh);
  if (inputs_after) *inputs_after = std::move(fresh);
  return outputs;
}

// Whether two run results share storage (a write through one is seen through the other).
// Tensors without elements share nothing a write could reach.
bool shares_storage(const c10::IValue& a, const c10::IValue& b) {
  if (!a.isTensor() || !b.isTensor()) return false;
  const at::Tensor &x = a.toTensor(), &y = b.toTensor();
  if (!x.defined() || !y.defined() || x.numel() == 0 || y.numel() == 0) return false;
  if (!x.has_storage() || !y.has_storage()) return false;
  return x.storage().is_alias_of(y.storage());
}

}  // namespace

std::vector<std::string> aliasing_changes(const ir::Graph& graph, const std::vector<c10::IValue>& inputs_before,
                                          const std::vector<c10::IValue>& outputs_before,
                                          const std::vector<c10::IValue>& inputs_after,
                                          const std::vector<c10::IValue>& outputs_after, const std::string& who) {
  std::vector<std::string> v;
  auto output_name = [&](size_t i) {
    return "output " + std::to_string(i) + (i < graph.outputs().size() ? " %" + graph.outputs()[i]->name() : "");
  };
  auto input_name = [&](size_t j) {
    return "input " + std::to_string(j) + (j < graph.inputs().size() ? " %" + graph.inputs()[j]->name() : "");
  };
  const size_t outputs = std::min(outputs_before.size(), outputs_after.size());
  const size_t inputs = std::min(inputs_before.size(), inputs_after.size());
  for (size_t i = 0; i < outputs; ++i) {
    for (size_t j = 0; j < inputs; ++j)
      if (shares_storage(outputs_before[i], inputs_before[j]) && !shares_storage(outputs_after[i], inputs_after[j]))
        v.push_back(who + " changed aliasing: " + output_name(i) + " aliased " + input_name(j) +
                    " before it and no longer does (a write through the output no longer reaches the input)");
    for (size_t k = i + 1; k < outputs; ++k)
      if (!shares_storage(outputs_before[i], outputs_before[k]) && shares_storage(outputs_after[i], outputs_after[k]))
        v.push_back(who + " changed aliasing: " + output_name(i) + " and " + output_name(k) +
                    " were distinct before it and now share storage (a write through one changes the other)");
  }
  return v;
}

namespace {

// What the pipeline leaves: the graph, or a module when it holds a partitioner.
struct Rewritten {
  std::unique_ptr<ir::Graph> graph;
  std::optional<ir::Module> module;
  // The graph's hash as the last run's gate left it: the next run (an idempotence rerun)
  // starts from it instead of hashing the graph again. Only runs change the graph.
  std::optional<uint64_t> hash;

  std::vector<PassRecord> run(const Pipeline& pipeline) {
    if (module) return pipeline.run(*module);
    PipelineOptions options;
    options.graph_hash = &hash;
    return pipeline.run(*graph, options);
  }
  std::string print() const { return module ? module->print() : graph->print(); }
  std::string reprint(const std::string& text) const {
    return module ? ir::parse_module(text, "<result>").print() : ir::parse_graph(text, "<result>")->print();
  }
  std::vector<c10::IValue> execute(const std::vector<c10::IValue>& inputs, std::vector<c10::IValue>* inputs_after) const {
    if (!module) return run_graph(*graph, inputs, inputs_after);
    at::manual_seed(kRunSeed);
    exec::ExecutorOptions options;
    options.check_metadata = true;
    std::vector<c10::IValue> fresh = fresh_inputs(inputs);
    std::vector<c10::IValue> outputs = exec::ModuleExecutor(*module, options).run(fresh);
    if (inputs_after) *inputs_after = std::move(fresh);
    return outputs;
  }
};
}  // namespace

uint64_t declared_tolerance_ulp(const Pipeline& pipeline, const PassRegistry& registry) {
  uint64_t bound = 0;
  for (const PassInvocation& pass : pipeline.passes()) {
    const PassInfo& info = registry.get(pass.name).info;
    auto declared = std::find_if(info.options.begin(), info.options.end(),
                                 [](const PassOptionInfo& o) { return o.name == "tolerance-ulp"; });
    if (declared == info.options.end()) continue;
    auto given = pass.options.find("tolerance-ulp");
    const std::string& text = given != pass.options.end() ? given->second : declared->default_value;
    bound = std::max<uint64_t>(bound, std::stoull(text));  // checked when the pipeline was parsed
  }
  return bound;
}

PassPropertyReport check_pass_properties(const ir::Graph& graph, const std::vector<c10::IValue>& inputs,
                                         const std::string& pipeline_text, const PassRegistry& registry) {
  return check_pass_properties(graph, inputs, pipeline_text, registry, nullptr);
}

PassPropertyReport check_pass_properties(const ir::Graph& graph, const std::vector<c10::IValue>& inputs,
                                         const std::string& pipeline_text, const PassRegistry& registry,
                                         std::unique_ptr<ir::Graph>* rewritten) {
  PassPropertyReport report;
  Pipeline pipeline = Pipeline::parse(pipeline_text, registry);
  // The pipeline's result, built again from `graph` when a second run spoiled it.
  auto rewrite = [&]() {
    Rewritten r;
    if (pipeline.has_module_pass()) r.module = ir::Module::of_graph(graph.clone());
    else r.graph = graph.clone();
    return r;
  };
  Rewritten g = rewrite();
  try {
    report.records = g.run(pipeline);
  } catch (const PassFailure& failure) {
    report.violations.push_back(failure.what());
    return report;
  }
  // Violations are reported in the order of the properties: idempotence, text identity,
  // memory, numerics. The checks that only read the result run first, on it; the second
  // runs of idempotent passes come last, on the result itself rather than on copies.
  std::vector<std::string> idempotence, v;

  // Text identity of the result.
  std::string printed = g.print();
  try {
    if (g.reprint(printed) != printed) v.push_back("print -> parse -> print is not the identity");
  } catch (const ir::ParseError& e) {
    v.push_back(std::string("the result does not parse back: ") + e.what());
  }

  bool preserves = true, memory_only = false;
  for (const PassInvocation& pass : pipeline.passes()) {
    NumericsEffect effect = registry.get(pass.name).info.numerics;
    preserves &= effect != NumericsEffect::Changes;
    memory_only |= effect == NumericsEffect::MemoryOnly;
  }
  if (memory_only && g.graph) {
    // The promise of a memory-only pass: recomputable values are no longer held from the
    // forward into the backward. (Its effect on the overall peak depends on the tags:
    // recomputing a chain can need more temporaries than the one value it saves.)
    int64_t was = estimate_memory(graph).recomputable_live_at_backward_start;
    int64_t now = estimate_memory(*g.graph).recomputable_live_at_backward_start;
    if (now > was)
      v.push_back("bytes of recomputable values held from the forward into the backward grew from " +
                  std::to_string(was) + " to " + std::to_string(now));
  }
  if (preserves) {
    // A declared tolerance turns a difference within it into a note, reported apart.
    const uint64_t tolerance = declared_tolerance_ulp(pipeline, registry);
    auto tolerated = [&](const TensorComparison& c) {
      if (tolerance == 0 || !c.values_differ() || c.max_ulp > tolerance) return false;
      report.tolerated.push_back(pipeline.str() + " changed numerics within its declared tolerance of " +
                                 std::to_string(tolerance) + " ULP: " + c.describe());
      report.tolerated_max_ulp = std::max(report.tolerated_max_ulp, c.max_ulp);
      return true;
    };
    try {
      std::vector<c10::IValue> expected_inputs, actual_inputs;
      std::vector<c10::IValue> expected = run_graph(graph, inputs, &expected_inputs),
                               actual = g.execute(inputs, &actual_inputs);
      // What a run writes into its inputs (a buffer's running statistics updated in
      // place) is a result too: a pass that drops or moves such an update changes the
      // training state even where every output stays equal.
      for (size_t i = 0; i < expected_inputs.size() && i < actual_inputs.size(); ++i) {
        if (!expected_inputs[i].isTensor() || !actual_inputs[i].isTensor()) continue;
        TensorComparison c = compare_bitwise("input " + std::to_string(i) + " %" + graph.inputs()[i]->name() +
                                                 " after the run",
                                             expected_inputs[i].toTensor(), actual_inputs[i].toTensor());
        if (!c.equal && !tolerated(c))
          v.push_back(pipeline.str() + " changed an in-place update of an input: " + c.describe());
      }
      if (expected.size() != actual.size()) {
        v.push_back("the graph returns " + std::to_string(actual.size()) + " outputs instead of " +
                    std::to_string(expected.size()));
      } else {
        for (std::string& change :
             aliasing_changes(graph, expected_inputs, expected, actual_inputs, actual, pipeline.str()))
          v.push_back(std::move(change));
        for (size_t i = 0; i < expected.size(); ++i) {
          if (!expected[i].isTensor() || !actual[i].isTensor()) continue;
          TensorComparison c = compare_bitwise("output " + std::to_string(i) + " %" + graph.outputs()[i]->name(),
                                               expected[i].toTensor(), actual[i].toTensor());
          if (!c.equal && !tolerated(c)) v.push_back(pipeline.str() + " changed numerics: " + c.describe());
        }
      }
    } catch (const std::exception& e) {
      v.push_back(std::string("running the rewritten graph failed: ") + e.what());
    }
    // One run of a captured module is only its warm-up: replay it like a training loop.
    if (g.module && has_captured_parts(*g.module))
      for (std::string& violation : check_captured_replays(graph, *g.module, inputs, pipeline.str()))
        v.push_back(std::move(violation));
  }

  // Idempotence: every pass that declares it, run again on the pipeline's result. The
  // second run works on the result itself: one that reports no change has passed the
  // gate's hash check, so the next second run (and the caller) sees the result as the
  // pipeline left it. One that changed it or failed leaves a spoiled graph: the result is
  // built again (the pipeline on a fresh copy) when anything still needs it.
  std::vector<const PassInvocation*> idempotent;
  for (const PassInvocation& pass : pipeline.passes())
    if (registry.get(pass.name).info.idempotent) idempotent.push_back(&pass);
  bool spoiled = false;
  for (size_t k = 0; k < idempotent.size(); ++k) {
    const PassInvocation& pass = *idempotent[k];
    if (spoiled) {
      g = rewrite();
      try {
        g.run(pipeline);  // passed the gate before: deterministic passes pass it again
      } catch (const PassFailure& failure) {
        idempotence.push_back(std::string("the pipeline failed on a second run: ") + failure.what());
        break;
      }
      spoiled = false;
    }
    try {
      auto records = g.run(Pipeline({pass}, registry));
      if (records.at(0).changed) {
        idempotence.push_back(pass.str() + " is declared idempotent but changed the graph on a second run");
        spoiled = true;
      }
    } catch (const PassFailure& failure) {
      idempotence.push_back(std::string("second run: ") + failure.what());
      spoiled = true;
    }
  }
  if (rewritten && g.graph) {
    if (spoiled) {
      g = rewrite();
      try {
        g.run(pipeline);
        spoiled = false;
      } catch (const PassFailure&) {
        // Reported above; the caller then has no result to check further.
      }
    }
    if (!spoiled) *rewritten = std::move(g.graph);
  }
  report.violations = std::move(idempotence);
  for (std::string& violation : v) report.violations.push_back(std::move(violation));
  return report;
}

}  // namespace passcheck::check
