// The generic properties every registered pass is held to, checked on one graph with
// one set of inputs: the pipeline gate (verifier after each pass, truthful changed
// flags), idempotence where declared, print -> parse -> print identity of the result,
// bit-for-bit equal outputs unless the pass declares it changes numerics, and a peak
// memory that does not grow for passes that promise to change memory only, and, where
// numerics are preserved, the aliasing of the results (aliasing_changes). Shared by
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
  /// Differences within the ULP bound a pass of the pipeline declares (its option
  /// `tolerance-ulp`, declared_tolerance_ulp): reported apart from bitwise, never
  /// violations. Empty when every result is bit for bit.
  std::vector<std::string> tolerated;
  uint64_t tolerated_max_ulp = 0;  ///< the largest of them
};

/// The ULP bound the pipeline's passes declare: the largest `tolerance-ulp` option of a
/// pass that has one (the Python pass: python{...,tolerance-ulp=N}); 0, bit for bit, by
/// default and for every other pass.
uint64_t declared_tolerance_ulp(const Pipeline& pipeline, const PassRegistry& registry);

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

/// How a rewrite changed the aliasing of one run's results, given the inputs and outputs
/// of the original (`*_before`) and the rewritten graph (`*_after`) on the same inputs:
/// an output that shared storage with an input and no longer does (AOTAutograd's runtime
/// decided from the traced graph that writes through it reach the input), and two outputs
/// that were distinct and now share storage (a write through one changes the other).
/// One violation each, naming the outputs and inputs of `graph` by position and name,
/// prefixed with `who`. Empty: the aliasing is kept.
std::vector<std::string> aliasing_changes(const ir::Graph& graph, const std::vector<c10::IValue>& inputs_before,
                                          const std::vector<c10::IValue>& outputs_before,
                                          const std::vector<c10::IValue>& inputs_after,
                                          const std::vector<c10::IValue>& outputs_after, const std::string& who);

}  // namespace passcheck::check
