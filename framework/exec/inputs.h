// Deterministic inputs for running a graph file on its own: tensors matching each
// input's TensorMeta, drawn from a seeded generator.
#pragma once

#include "framework/ir/graph.h"

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <vector>

namespace passcheck::exec {

struct InputOptions {
  uint64_t seed = 0;
  /// Integer tensors draw from [0, int_high): small enough to be a valid index into
  /// any embedding table or class dimension of size >= int_high.
  int64_t int_high = 2;
  /// Floating tensors are standard normal times this scale.
  double float_scale = 1.0;
};

/// One value per graph input: tensors shaped, strided, typed and placed as its meta
/// says; scalar inputs get 1 / 1.0 / true. Throws std::invalid_argument for a tensor
/// input without metadata or on a device this process cannot use.
std::vector<c10::IValue> make_inputs(const ir::Graph& graph, const InputOptions& options = {});

}  // namespace passcheck::exec
