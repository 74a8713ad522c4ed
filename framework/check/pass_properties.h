// The generic properties every registered pass is held to, checked on one graph with
// one set of inputs: the pipeline gate (verifier after each pass, truthful changed
// flags), idempotence where declared, print -> parse -> print identity of the result,
// bit-for-bit equal outputs unless the pass declares it changes numerics, and a peak
// memory that does not grow for passes that promise to change memory only. Shared by
// the unit suites, the model suites and the fuzzer.
#pragma once

#include "framework/check/pipeline.h"

#include <ATen/core/ivalue.h>

#include <memory>
#include <string>
#include <vector>

namespace passcheck::check {

struct PassPropertyReport {
  std::vector<PassRecord> records;      ///< the first run of the pipeline
  std::vector<std::string> violations;  ///< empty when every property holds
};

/// Runs `pipeline` on a copy of `graph` and checks the properties its passes declare.
/// `inputs` feed both the original and the rewritten graph; the default generator is
/// reseeded before each run so random operators draw the same numbers. A PassFailure
/// (verifier, changed claim, a pass that throws) is reported as a violation.
PassPropertyReport check_pass_properties(const ir::Graph& graph, const std::vector<c10::IValue>& inputs,
                                         const std::string& pipeline,
                                         const PassRegistry& registry = PassRegistry::global());

/// The same, also handing back the pipeline's result (graph pipelines only) in
/// `*rewritten` when the pipeline passed its gate, so a caller with more properties to
/// check (check_case: the remat properties) need not run the pipeline again. Left null
/// when the pipeline failed or left a module.
PassPropertyReport check_pass_properties(const ir::Graph& graph, const std::vector<c10::IValue>& inputs,
                                         const std::string& pipeline, const PassRegistry& registry,
                                         std::unique_ptr<ir::Graph>* rewritten);

}  // namespace passcheck::check
