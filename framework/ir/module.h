// A Module is a training step split into several graphs run one after the other, as a
// partitioner leaves it: a forward graph whose outputs are the step's forward results and
// the values saved for the backward, then a backward graph whose inputs are those saved
// values (and module state) and whose outputs are the gradients. Each part is an ordinary
// Graph; a part's input is either one of the module's own inputs (bound by name, like the
// joint graph's parameters and arguments) or an output of an earlier part (a link). The
// module's results name part outputs, in the joint graph's output order, so running the
// parts in order yields what the joint graph returns.
//
// Text form (print_module / parse_module):
//
//   module inputs (%w, %x) returns (forward.0, backward.0)
//   part forward
//   graph(
//       param %w : f32[4, 4],
//       arg %x : f32[2, 4]):
//     ...
//     return (%sum, %mm)
//   part backward from (forward.1, -)
//   graph(
//       arg %mm : f32[2, 4],
//       param %w : f32[4, 4]):
//     ...
//
// `from (...)` gives each input of the part, in order, its source: `forward.1` is output 1
// of part forward, `-` a module input of the same name. Each part's text is a complete
// graph text (symbols, claims and mesh lines included).
#pragma once

#include "framework/ir/graph.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace passcheck::ir {

/// Output `output` of part `part` (indices into Module::parts and that graph's outputs).
struct PartOutput {
  size_t part = 0;
  size_t output = 0;
  bool operator==(const PartOutput& o) const { return part == o.part && output == o.output; }
  bool operator!=(const PartOutput& o) const { return !(*this == o); }
};

struct ModulePart {
  std::string name;
  std::unique_ptr<Graph> graph;
  /// One per graph input: the earlier part's output it receives, or nullopt for the
  /// module input of the same name.
  std::vector<std::optional<PartOutput>> input_sources;
};

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Module(Module&&) = default;
  Module& operator=(Module&&) = default;

  /// A module of one part (named `name`) holding `graph`: its inputs are the module's
  /// inputs, its outputs the module's results. How a pipeline wraps a joint graph before
  /// a partitioner splits it.
  static Module of_graph(std::unique_ptr<Graph> graph, const std::string& name = "joint");
  /// Deep copy.
  Module clone() const;

  /// Names of the module's inputs, in the order run() takes them (the joint graph's).
  std::vector<std::string> input_names;
  std::vector<ModulePart> parts;
  /// The module's results, in the joint graph's output order.
  std::vector<PartOutput> outputs;

  /// Index of the part named `name`, or nullopt.
  std::optional<size_t> find_part(const std::string& name) const;
  /// Total nodes over every part.
  size_t num_nodes() const;
  /// The outputs of `part` read by later parts (what it saves for them), each once, in
  /// output order.
  std::vector<size_t> linked_outputs(size_t part) const;
  /// Bytes of the values part `part` hands to later parts (each output once; tensors
  /// only, by their declared metadata).
  int64_t linked_bytes(size_t part) const;

  std::string print() const;
  /// Hash of the text form.
  uint64_t hash() const;
};

/// Text form, as in the file comment.
std::string print_module(const Module& module);
/// Parses module text; throws ParseError (framework/ir/text.h) naming line and column.
/// Checks the structure the text alone shows: part names unique, every `from` entry names
/// an earlier part and one of its outputs, one entry per input, results in range, module
/// inputs unique. Type agreement across links is the verifier's (verify_module).
Module parse_module(std::string_view text, const std::string& source_name = "<text>");
/// True when `text` is module text (its first non-comment line starts with "module").
bool is_module_text(std::string_view text);

}  // namespace passcheck::ir
