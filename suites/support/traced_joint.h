// A debug model's traced joint graph and inputs for it, traced once per process and
// shared by the suites that run passes on every model (the registry properties, the
// partitioner unit tests).
#pragma once

#include "oracles/pass_on_models.h"
#include "oracles/training_driver.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace passcheck::testing {

/// A debug model's joint graph and inputs for it at models::suite_options sizes:
/// the inputs are batch 1's, the graph was traced on batch 0.
struct TracedJoint {
  std::shared_ptr<ir::Graph> graph;
  std::vector<c10::IValue> inputs;
};

inline const TracedJoint& traced_joint(const std::string& model) {
  static std::map<std::string, TracedJoint> cache;
  auto it = cache.find(model);
  if (it != cache.end()) return it->second;
  oracles::ModelJoint joint = oracles::trace_model_joint(model);
  TracedJoint m{joint.graph, std::move(joint.inputs)};
  return cache.emplace(model, std::move(m)).first->second;
}

}  // namespace passcheck::testing
