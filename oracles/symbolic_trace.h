// Traces a subject with one dimension of its token input symbolic (the batch or the
// sequence dimension), by differential symbolization (framework/sym/symbolize.h): the
// step is traced at the hint and at two other sizes, and the traces are merged into one
// graph whose shapes and integer arguments are expressions of the symbol.
#pragma once

#include "framework/ir/graph.h"
#include "framework/trace/traced_program.h"
#include "oracles/models/subject.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace passcheck::oracles {

enum class SymbolicDim { Batch, Seq };
SymbolicDim parse_symbolic_dim(const std::string& text);
const char* to_string(SymbolicDim dim);
/// Dimension of a [batch, seq] token input the symbol stands for.
inline int64_t tensor_dim(SymbolicDim dim) { return dim == SymbolicDim::Batch ? 0 : 1; }

struct SymbolicTraceOptions {
  std::string model = "deepseek_v3";
  models::SubjectOptions subject;
  SymbolicDim dim = SymbolicDim::Batch;
  std::string symbol = "s0";
  bool trace_on_meta = true;
  /// Builds the subject at given options instead of models::make_subject(model, ...):
  /// random programs (generators/program.h) are traced this way.
  std::function<std::unique_ptr<models::TrainingSubject>(const models::SubjectOptions&)> make_subject;
};

struct SymbolicTrace {
  std::shared_ptr<ir::Graph> graph;
  /// Sizes the step was traced at (the hint first).
  std::vector<int64_t> traced_at;
  double seconds = 0;
};

/// The symbol is declared with hint = the subject's size n in that dimension (it must be
/// even and at least 2), range [n/2, n] and multiple_of 2: the values a chunked run can
/// see. Throws sym::SymbolizeError (non-isomorphic traces) or std::invalid_argument.
SymbolicTrace trace_symbolic(const SymbolicTraceOptions& options);

}  // namespace passcheck::oracles
