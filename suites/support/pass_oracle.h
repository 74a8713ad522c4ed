// expect_pass_preserves: the one helper every pass test uses (unit cases, model suites,
// property tests). It checks the generic pass properties (framework/check/
// pass_properties.h) and reports each violation as a test failure.
#pragma once

#include "framework/check/pass_properties.h"

namespace passcheck::testing {

/// Adds a failure per violated property; returns the pipeline's records.
std::vector<check::PassRecord> expect_pass_preserves(const ir::Graph& graph, const std::vector<c10::IValue>& inputs,
                                                     const std::string& pipeline,
                                                     const check::PassRegistry& registry = check::PassRegistry::global());

}  // namespace passcheck::testing
