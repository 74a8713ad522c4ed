// GoogleTest matchers and checks for pass authors (installed with the package as
// passcheck::test_support): BitwiseEqual compares tensors bit for bit the way every
// passcheck check does (framework/check/compare.h), and ExpectPassPreserves holds a
// pipeline to the generic pass properties on a graph with generated inputs.
#pragma once

#include "framework/check/compare.h"
#include "framework/exec/inputs.h"
#include "suites/support/pass_oracle.h"

#include <gmock/gmock.h>

#include <string>
#include <vector>

namespace passcheck::testing {

/// Matches a tensor whose dtype, sizes and bit patterns equal `expected`'s; the
/// explanation is check::compare_bitwise's one-line summary of the first difference.
MATCHER_P(BitwiseEqual, expected, "is bit for bit equal to the expected tensor") {
  const check::TensorComparison comparison = check::compare_bitwise("tensor", expected, arg);
  if (!comparison.equal) *result_listener << comparison.describe();
  return comparison.equal;
}

/// expect_pass_preserves on inputs generated for `graph` (exec::make_inputs with `seed`):
/// one test failure per violated property; returns the pipeline's records.
inline std::vector<check::PassRecord> ExpectPassPreserves(const check::PassRegistry& registry,
                                                          const std::string& pipeline, const ir::Graph& graph,
                                                          uint64_t seed = 0) {
  exec::InputOptions options;
  options.seed = seed;
  return expect_pass_preserves(graph, exec::make_inputs(graph, options), pipeline, registry);
}

}  // namespace passcheck::testing
