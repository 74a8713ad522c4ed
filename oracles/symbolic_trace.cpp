// Differential tracing of a subject at three sizes (symbolic_trace.h).
#include "oracles/symbolic_trace.h"

#include "framework/sym/symbolize.h"
#include "oracles/training_driver.h"

#include <chrono>
#include <stdexcept>

namespace passcheck::oracles {

SymbolicDim parse_symbolic_dim(const std::string& text) {
  if (text == "batch") return SymbolicDim::Batch;
  if (text == "seq") return SymbolicDim::Seq;
  throw std::invalid_argument("unknown chunk dimension '" + text + "' (batch or seq)");
}

const char* to_string(SymbolicDim dim) { return dim == SymbolicDim::Batch ? "batch" : "seq"; }

namespace {

int64_t token_extent(models::TrainingSubject& subject, SymbolicDim dim) {
  std::vector<c10::IValue> args = subject.batch(0);
  if (args.empty() || !args[0].isTensor() || args[0].toTensor().dim() <= tensor_dim(dim))
    throw std::invalid_argument("subject " + subject.name() + ": its first training argument is not a [batch, seq] "
                                "token tensor, so no " + to_string(dim) + " dimension can be marked symbolic");
  return args[0].toTensor().size(tensor_dim(dim));
}

}  // namespace

SymbolicTrace trace_symbolic(const SymbolicTraceOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  auto subject_at = [&](int64_t value) {
    models::SubjectOptions o = options.subject;
    if (value > 0) (options.dim == SymbolicDim::Batch ? o.batch_size : o.seq_len) = value;
    return options.make_subject ? options.make_subject(o) : models::make_subject(options.model, o);
  };
  auto base = subject_at(0);
  const int64_t hint = token_extent(*base, options.dim);
  if (hint < 2 || hint % 2 != 0)
    throw std::invalid_argument(std::string("the ") + to_string(options.dim) + " size " + std::to_string(hint) +
                                " of " + options.model + " cannot be chunked in halves: it must be even and at least 2");
  sym::Symbol symbol;
  symbol.name = options.symbol;
  symbol.hint = hint;
  symbol.min = hint / 2;
  symbol.max = hint;
  symbol.multiple_of = 2;
  // Fit on the hint and a second size inside the range where there is one (the lower
  // bound), confirm on sizes outside it (the fourth confirms quadratic fits such as
  // [seq, seq] strides); sizes below 2 could take broadcasting paths.
  SymbolicTrace result;
  result.traced_at = {hint, hint / 2 >= 2 ? hint / 2 : hint + 6, hint + 2, hint + 4};
  std::vector<trace::TracedProgram> programs;
  std::vector<sym::TraceAt> traces;
  for (int64_t value : result.traced_at) {
    auto subject = value == hint ? std::move(base) : subject_at(value);
    if (token_extent(*subject, options.dim) != value)
      throw std::invalid_argument("subject " + options.model + " ignored the requested " + to_string(options.dim) +
                                  " size " + std::to_string(value));
    programs.push_back(trace_subject(*subject, subject->batch(0), options.trace_on_meta));
  }
  for (size_t i = 0; i < programs.size(); ++i) traces.push_back({&programs[i].graph(), result.traced_at[i]});
  result.graph = sym::symbolize(traces, symbol);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace passcheck::oracles
