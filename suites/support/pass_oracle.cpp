// expect_pass_preserves (see pass_oracle.h).
#include "suites/support/pass_oracle.h"

#include <gtest/gtest.h>

namespace passcheck::testing {

std::vector<check::PassRecord> expect_pass_preserves(const ir::Graph& graph, const std::vector<c10::IValue>& inputs,
                                                     const std::string& pipeline,
                                                     const check::PassRegistry& registry) {
  check::PassPropertyReport report = check::check_pass_properties(graph, inputs, pipeline, registry);
  for (const auto& violation : report.violations) ADD_FAILURE() << pipeline << ": " << violation;
  return report.records;
}

}  // namespace passcheck::testing
