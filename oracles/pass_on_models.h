// One pass on the subjects the suites trace (models::available_subjects() at
// models::suite_options sizes): the traced joint graph and inputs of a subject, and the
// pipeline that runs a pass after the passes it needs there. The registry properties
// suite (suites/model/registry_properties_test.cpp) and `passcheck gate` share them, so
// both hold a pass to its declared properties on the same graphs.
#pragma once

#include "framework/ir/graph.h"

#include <ATen/core/ivalue.h>

#include <memory>
#include <string>
#include <vector>

namespace passcheck::oracles {

/// A subject's joint graph at models::suite_options sizes, traced on batch 0, and batch 1's
/// inputs for it.
struct ModelJoint {
  std::shared_ptr<ir::Graph> graph;
  std::vector<c10::IValue> inputs;
};

/// Traces `model` (a name of models::available_subjects()) at its suite sizes.
ModelJoint trace_model_joint(const std::string& model);

/// `pass` after the passes it needs before it has work to do on `model` (remat after the
/// AC region and tagging passes, with RNG replay where the model draws random numbers).
std::string pipeline_with_prerequisites(const std::string& pass, const std::string& model);

/// Whether the registry properties hold `pass` on the traced subjects. Not chunk: it needs
/// a graph traced with a symbolic dimension and is checked against the eager-chunked
/// oracle instead (suites/model/chunking_test.cpp).
bool runs_on_traced_subjects(const std::string& pass);

}  // namespace passcheck::oracles
