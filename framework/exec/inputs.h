// Deterministic inputs for running a graph file on its own: tensors matching each
// input's TensorMeta, drawn from a seeded generator.
#pragma once

#include "framework/exec/memory.h"
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
  /// The inputs' storages together may take at most this many bytes (0: no limit);
  /// drawing them may take about twice that (values are drawn as float32 first).
  int64_t max_bytes = kDefaultMemoryBudget;
};

/// One value per graph input: tensors shaped, strided, typed and placed as its meta
/// says; scalar inputs get 1 / 1.0 / true. Throws std::invalid_argument for a tensor
/// input without metadata, on a device this process cannot use, or over the budget
/// (naming the input, its bytes and the budget) before anything is allocated.
std::vector<c10::IValue> make_inputs(const ir::Graph& graph, const InputOptions& options = {});

}  // namespace passcheck::exec
