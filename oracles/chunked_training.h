// Graph chunking against eager chunking: trains two copies of a subject for N steps, one
// eagerly with the matching module calls split in two (the eager-chunked oracle,
// eager_chunked.h) and one through its joint graph traced with the chunk dimension
// symbolic, rewritten by the chunk pass, its claims proved by Z3 and concretized.
// Compares loss, gradients, parameters and buffers after every step.
#pragma once

#include "framework/check/pass.h"
#include "framework/check/pipeline.h"
#include "framework/sym/prover.h"
#include "oracles/symbolic_trace.h"
#include "oracles/training_driver.h"

#include <string>
#include <vector>

namespace passcheck::oracles {

struct ChunkedTrainingOptions {
  std::string model = "deepseek_v3";
  models::SubjectOptions subject;
  /// Optional subject factory (see SymbolicTraceOptions::make_subject).
  std::function<std::unique_ptr<models::TrainingSubject>(const models::SubjectOptions&)> make_subject;
  int steps = 5;
  SymbolicDim dim = SymbolicDim::Batch;
  /// Module patterns, as the chunk pass's `modules` option takes them.
  std::string modules = "layers.*";
  bool early_accumulation = false;
  /// Passes between chunk and concretize (a scheduler, say); empty for none.
  std::string between;
  sym::ProveOptions prove;
  /// Registry holding chunk and concretize (a test may register a mutant under those names).
  const check::PassRegistry* registry = nullptr;
  std::string chunk_pass = "chunk";
  std::string concretize_pass = "concretize";
  /// Called with the chunked graph before concretization (symbols and claims still in
  /// it): graph dumps, structural properties.
  std::function<void(const ir::Graph&)> on_chunked;
  /// Refuted or unknown claims stop the run before training (off: report and go on).
  bool require_proofs = true;
  /// Pipeline options of the chunk, between and concretize runs (dump: the graph before
  /// and after each pass, which reports diff).
  check::PipelineOptions pipeline;
  /// Called with the proof report as soon as the claims are checked, before a refuted one
  /// stops the run (reports keep the verdicts of a run that fails).
  std::function<void(const sym::ProofReport&)> on_proofs;
  OptimizerKind optimizer = OptimizerKind::SGD;
  /// Called as each stage starts (symbolic trace, chunk, proofs, each training step): a
  /// long run's progress line.
  std::function<void(const std::string& stage)> on_progress;
};

struct ChunkedTrainingReport {
  DriverReport driver;
  sym::ProofReport proofs;
  std::vector<check::PassRecord> passes;
  std::vector<int64_t> traced_at;
  double symbolize_seconds = 0;
  size_t nodes_before = 0;
  size_t nodes_after = 0;
  /// Largest ULP distance over every compared value and step (0 when bitwise equal),
  /// and how many compared values differed at all.
  uint64_t max_ulp = 0;
  size_t differing_values = 0;
  bool equal() const { return driver.equal(); }
  std::string format() const;
};

/// Throws on setup errors and on a pass failure; refuted claims throw when
/// require_proofs is set (the message carries the proof report).
ChunkedTrainingReport run_graph_chunked_vs_eager_chunked(const ChunkedTrainingOptions& options);

}  // namespace passcheck::oracles
