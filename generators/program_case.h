// A fuzzing case: a random training-step program, traced into its joint graph, with
// everything needed to run it again — deterministic from one seed. The fuzzer
// (passcheck fuzz) and the property suites draw cases from here; everything after
// generation works on the graph alone, so a repro file needs only the graph text,
// the input seed and the pipeline.
#pragma once

#include "framework/check/pass.h"
#include "framework/ir/graph.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace passcheck::gen {

struct ProgramGenOptions {
  int max_layers = 3;
  int max_ops_per_layer = 8;
  int64_t max_dim = 8;
  bool allow_bf16 = true;
  bool allow_random_ops = true;       ///< dropout, bernoulli, rand-like ops
  bool allow_buffer_updates = true;   ///< in-place updates of module buffers
  /// Programs the chunk pass supports (passes/chunk): an even batch of at least 2, no
  /// random ops, no BufferUpdate (it updates its buffer twice), and the MoE-like Route
  /// and CountUpdate operations (one in-place update per buffer). Off: the vocabulary
  /// and the draws are exactly those of the plain generator.
  bool chunkable = false;
  /// Also draw the decision-coverage kinds, as a family of their own (about one op in
  /// five):
  /// plain mode ForceSaved, SavedForBackward, RandomSavedForBackward, UpdateThenScale,
  /// BufferUpdate and Dropout; chunkable mode PadRow, PadTwoRows, DoubleDropout, Dropout
  /// and BufferUpdate, some of which the chunk passes refuse with a clear error
  /// (ChunkConfig::refusal_allowed). Off: the draws are unchanged.
  bool decision_coverage = false;
};

/// The options of decision-coverage programs for the AC passes: plain ones plus the
/// corner cases of the AC guards.
ProgramGenOptions ac_coverage_options();
/// The options of decision-coverage chunk cases: chunkable plus the refusal kinds.
ProgramGenOptions chunk_coverage_options();

/// The options of chunk fuzzing: chunkable programs, small widths.
ProgramGenOptions chunkable_options();

struct GeneratedCase {
  std::shared_ptr<ir::Graph> graph;  ///< the traced joint graph (forward, loss, backward)
  uint64_t input_seed = 0;           ///< exec::make_inputs seed for the graph's inputs
  int64_t int_high = 2;              ///< exec::InputOptions::int_high valid for this graph
  std::string description;           ///< the program in one readable line per layer
};

/// How a case's program is traced into its graph: on meta tensors, then moved to the CPU
/// (the default: no arithmetic, no parameter initialization), or by running the step on
/// CPU tensors. Both give the same graph text; TraceOn::Cpu is the reference the
/// conformance suite compares the default with.
enum class TraceOn { Meta, Cpu };

/// The case for `seed`: the same seed always gives the same case.
GeneratedCase generate_case(uint64_t seed, const ProgramGenOptions& options = {}, TraceOn on = TraceOn::Meta);
/// A decision-coverage program whose first layer runs `copies` times (same operations,
/// own parameters): identical layer bodies, for the layer deduplication passes.
GeneratedCase generate_repeated_layer_case(uint64_t seed, int copies = 3, TraceOn on = TraceOn::Meta);

/// Tags every forward node of `graph` with a recompute policy drawn from `seed`, unsafe
/// choices included (a buffer update or a random op tagged recomputable), as a user or
/// another tagger might: remat's own guards must then keep the result correct.
void tag_randomly(ir::Graph& graph, uint64_t seed);

// ---------------------------------------------------------------------------------
// Chunk cases (passes/chunk): a chunkable program, its seed and a chunk configuration,
// run by oracles::run_graph_chunked_vs_eager_chunked. Unlike a graph case, replaying one
// needs the program (the eager-chunked oracle runs the module tree), so a repro file
// carries the program text (encode_spec) and the configuration text.

struct ChunkConfig {
  std::string mode = "batch";          ///< oracles::SymbolicDim
  std::string modules = "layers.*";    ///< module patterns, comma-separated
  bool early_accumulation = false;
  int steps = 2;
  std::string optimizer = "sgd";       ///< oracles::OptimizerKind
  /// The program may be one the chunk passes refuse (drawn with decision_coverage): a
  /// check::RefusedInput from chunk or concretize is then the expected outcome, not a
  /// violation. Printed only when true.
  bool refusal_allowed = false;
  /// "mode=batch modules=layers.* early-accumulation=false steps=2 optimizer=sgd"
  std::string str() const;
  /// Inverse of str(); throws std::invalid_argument.
  static ChunkConfig parse(const std::string& text);
};

struct ChunkCase {
  std::string program;   ///< gen::encode_spec text of the program
  uint64_t seed = 0;     ///< parameters and batches (models::SubjectOptions::seed)
  ChunkConfig config;
  std::string description;  ///< the program, one line per layer
};

/// The chunk case for `seed` (deterministic): a program from `options` (chunkable) and a
/// configuration varying the module patterns and the optimizer.
ChunkCase generate_chunk_case(uint64_t seed, const ProgramGenOptions& options = chunkable_options());

struct ChunkCaseResult {
  /// One message per violated promise (empty: the case holds): every claim proved, the
  /// chunk invariants on the chunked graph (check_chunk_invariants, before concretize),
  /// no symbol left after concretize (find_symbols), graph chunking bitwise equal to
  /// eager chunking; a thrown error (a pass refusing the program included) is one too.
  std::vector<std::string> violations;
  std::string report;     ///< the oracle's report when it ran to the end
  /// The chunk passes refused the program with a clear error (refusal_allowed cases
  /// only; otherwise a refusal is a violation): the message.
  std::string refusal;
  double seconds = 0;
};

/// The program of `c` traced with its chunk dimension symbolic (oracles/symbolic_trace.h),
/// the graph the chunk pass rewrites. Throws when the program cannot be symbolized.
std::shared_ptr<ir::Graph> trace_chunk_case(const ChunkCase& c);

/// Runs `c` with `chunk_pass` and `concretize_pass` of `registry` (real passes or
/// mutants); never throws for a failing case.
ChunkCaseResult run_chunk_case(const ChunkCase& c, const check::PassRegistry& registry,
                               const std::string& chunk_pass = "chunk",
                               const std::string& concretize_pass = "concretize");

}  // namespace passcheck::gen
