// Graph files as first-class objects: loading one (optionally moved to another device),
// and translation validation of two graph files, which runs both on the same generated
// inputs, with the same generator state, and compares every output bit for bit. Used by
// `passcheck run`, `opt` and `equiv`, and by the text pass-test driver (suites/passes_text).
#pragma once

#include "framework/check/compare.h"
#include "framework/exec/memory.h"
#include "framework/ir/graph.h"
#include "framework/ir/module.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace passcheck::graph_files {

/// Reads, parses and checks a graph file: the schema checks (check/schema_check.h: known
/// operators, argument and output counts, declared output kinds) and the verifier
/// (check/verifier.h, argument kinds and enum codes included), each naming
/// file:line:col. Throws io::FileError when it cannot be read, std::invalid_argument when
/// it does not check, ir::ParseError when it is malformed. Every subcommand reading a
/// graph file (run, opt, equiv, prove) loads it here, so all refuse the same bad input.
std::unique_ptr<ir::Graph> load_graph_file(const std::string& path);

/// Moves every tensor type and device argument of `graph` to `device` (meta, cpu and
/// cuda alike); throws std::invalid_argument for cuda without a CUDA device, unless
/// `require_available` is false (the graph is only analysed, never run there). Returns
/// how many types and arguments changed.
size_t retarget_graph(ir::Graph& graph, const std::string& device, bool require_available = true);

/// The two input lists differ in names, dtypes, shapes, strides or devices: bad input.
class InputMismatch : public std::invalid_argument {
 public:
  explicit InputMismatch(const std::string& message) : std::invalid_argument(message) {}
};

struct EquivOptions {
  uint64_t seed = 0;
  int64_t int_high = 2;
  /// The default generators are seeded with this before each run, so random ops of both
  /// graphs draw the same numbers.
  uint64_t rng_seed = 0;
  /// Memory budget of input generation and of each run (exec::ExecutorOptions::max_bytes).
  int64_t max_bytes = exec::kDefaultMemoryBudget;
  /// Non-empty: A's inputs come from this torch.save archive (exec::load_inputs), not
  /// from `seed`.
  std::string inputs_file;
};

/// One compared value: a graph output (by position) or an input after the run (by
/// name: what in-place updates left in it).
struct EquivRow {
  std::string label;  ///< "output 0 (%a / %b)" or "input %buf after the run"
  check::TensorComparison comparison;
  /// Non-tensor values: both printed, equal when the texts are.
  bool tensor = true;
  std::string a_text, b_text;
  /// An input after the run (listed in reports only when it differs).
  bool is_input = false;
  bool equal() const { return tensor ? comparison.equal : a_text == b_text; }
};

struct EquivReport {
  /// Output counts or kinds differ: no per-output rows for the positions affected.
  std::vector<std::string> structural_problems;
  std::vector<EquivRow> rows;
  bool equal() const;
  /// One line per output ("equal" or the first differing index, both values, the ULP
  /// distance), one per input that differs after the run, then a verdict line.
  std::string format() const;
};

/// Lists how the inputs of `a` and `b` differ, matched by name ("only in A: %x",
/// "%x: f32[2] vs f32[3]"); empty when they agree.
std::vector<std::string> input_differences(const ir::Graph& a, const ir::Graph& b);

/// Runs `a` and `b` on the same inputs (generated from `a`, handed to `b` by name) and
/// compares outputs by position and inputs after the run by name. Throws InputMismatch
/// listing every difference when the input sets differ.
EquivReport compare_graphs(const ir::Graph& a, const ir::Graph& b, const EquivOptions& options = {});
/// The same with a module as B (a partitioned A): the module's parts run in order
/// (exec/module_executor.h) on inputs handed to it by name.
EquivReport compare_graph_with_module(const ir::Graph& a, const ir::Module& b, const EquivOptions& options = {});

/// Reads a module file (framework/ir/module.h) and checks it like load_graph_file: each
/// part against the schemas, then the module verifier.
ir::Module load_module_file(const std::string& path);

}  // namespace passcheck::graph_files
