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
// graph text (symbols, claims and mesh lines included). A part the cudagraph pass wraps
// carries its capture on the same line, after `from (...)`:
//
//   part forward from (-, -) cudagraph(backend=replay, static=[0, 1])
//
// (`check-static-addresses=false` and `injected=[...]` appear only when set).
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

/// How a part runs under the CUDA-graph wrapper (passes/cudagraph, exec/captured_graph.h):
/// warm-up, then capture, then replays that copy only the inputs that are not static.
struct CaptureSpec {
  /// `cuda`: real CUDA graphs (CUDA builds only). `replay`: the CPU model of their memory
  /// semantics (every build).
  enum class Backend : uint8_t { Replay, Cuda };
  Backend backend = Backend::Replay;
  /// Graph inputs whose buffers keep their address from call to call (parameters,
  /// buffers, outputs of earlier captured parts): recorded once, never copied. Sorted.
  std::vector<size_t> static_inputs;
  /// Check before every replay that each static input is still at its recorded address.
  bool check_static_addresses = true;
  /// Known-buggy wrapper behaviours to reproduce (exec/captured_graph.h lists them). Only
  /// the test-side mutants set them; printed so their repro files replay them.
  std::vector<std::string> injected_bugs;
  bool operator==(const CaptureSpec& o) const {
    return backend == o.backend && static_inputs == o.static_inputs &&
           check_static_addresses == o.check_static_addresses && injected_bugs == o.injected_bugs;
  }
};
const char* to_string(CaptureSpec::Backend backend);
/// "replay" or "cuda"; nullopt for any other name.
std::optional<CaptureSpec::Backend> parse_capture_backend(std::string_view name);
/// The spec as its text: "cudagraph(backend=replay, static=[0, 1])".
std::string print_capture_spec(const CaptureSpec& spec);

struct ModulePart {
  std::string name;
  std::unique_ptr<Graph> graph;
  /// One per graph input: the earlier part's output it receives, or nullopt for the
  /// module input of the same name.
  std::vector<std::optional<PartOutput>> input_sources;
  /// Set when the part runs under the CUDA-graph wrapper; otherwise it runs eagerly.
  std::optional<CaptureSpec> capture;
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
  /// Replaces part `part` by the parts of `sub`, a module over that part's graph: `sub`'s
  /// input names are the part graph's input names (each takes that input's source), its
  /// results stand for the part's outputs in order. Later parts' links and the module's
  /// results are renumbered; `sub`'s part names must not clash with the other parts'.
  void replace_part(size_t part, Module sub);

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
