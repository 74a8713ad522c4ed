// Deterministic inputs for running a graph file on its own: tensors matching each
// input's TensorMeta, drawn from a seeded generator.
#pragma once

#include "framework/exec/memory.h"
#include "framework/ir/graph.h"

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <string>
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

/// The values of a torch.save archive of a list (python/passcheck_fx save_inputs), one
/// per entry of `inputs`: a tensor's dtype and shape must match its declaration (it is
/// copied into the declared strides and device when those differ). Throws
/// std::invalid_argument naming `path` (and the input's index and name) for a file that
/// is no such archive, a count, kind, dtype or shape mismatch. (framework/exec/archive.cpp)
std::vector<c10::IValue> load_inputs(const std::string& path, const std::vector<ir::Value*>& inputs);

/// The values of a torch.save archive held in `bytes` (`path` names it in messages),
/// checked before LibTorch reads it (the pickle's stack stays under 4096 objects, every
/// opcode known) and after (every tensor dense and inside its storage). Throws
/// std::invalid_argument for anything else (docs/security.md).
std::vector<c10::IValue> read_archive(const std::string& bytes, const std::string& path);

/// Writes `values` (tensors moved to the CPU) as a torch.save-compatible archive of a
/// list, which torch.load reads back.
void save_values(const std::string& path, const std::vector<c10::IValue>& values);

}  // namespace passcheck::exec
