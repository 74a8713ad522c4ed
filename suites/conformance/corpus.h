// The tracer conformance corpus (suites/conformance/corpus.txt): small training steps
// written as ATen operator calls, shared with the make_fx reference script
// (python/conformance/make_fx_reference.py). This reader turns a program into inputs and a
// step function that calls the operators through the dispatcher, as LibTorch's C++ API
// does (a number in a Tensor slot becomes a wrapped number, like `x * 0.5`).
#pragma once

#include "framework/trace/tracer.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

namespace passcheck::conformance {

/// One argument as written: a value reference, a constant, a list, or None.
struct CorpusArg {
  enum class Kind { Ref, Int, Float, Bool, String, Dtype, Device, None, List } kind = Kind::None;
  std::string text;  ///< Ref name, String, Dtype or Device spelling
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::vector<CorpusArg> items;
};

struct CorpusInput {
  std::string name;
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::vector<int64_t> sizes;
  bool requires_grad = false;
  int64_t high = 2;  ///< integer inputs hold values in [0, high)
};

struct CorpusOp {
  std::vector<std::string> outs;
  std::string op;  ///< "aten::max.dim"
  std::vector<CorpusArg> args;
  bool no_grad = false;
  int line = 0;
};

struct CorpusProgram {
  std::string name;
  int line = 0;
  std::vector<CorpusInput> inputs;
  std::vector<CorpusOp> ops;
  std::vector<std::string> outputs;
};

/// Reads the corpus; throws std::invalid_argument naming file:line on malformed text.
std::vector<CorpusProgram> read_corpus(const std::string& path);

/// The inputs the reference script uses for integers and booleans (arange % high,
/// arange % 3 == 0) and seeded normal floats, on `device`, grad flags set.
std::vector<at::Tensor> example_inputs(const CorpusProgram& program, uint64_t seed, c10::Device device);

/// Fresh inputs for replaying a traced program: floats with zeros, repeated values (ties)
/// and, when `with_nan`, a NaN; integers uniform in [0, high); booleans random.
std::vector<at::Tensor> replay_inputs(const CorpusProgram& program, uint64_t seed, bool with_nan);

/// The training step: runs the operators, loss = sum of out.sum() over the floating
/// outputs, returns [loss, gradients of the grad inputs...] (through trace::gradients).
trace::StepFunction make_step(const CorpusProgram& program);

/// Runs the step eagerly on `inputs` (fresh leaves with the program's grad flags).
std::vector<at::Tensor> run_eager(const CorpusProgram& program, const std::vector<at::Tensor>& inputs);

/// True for the operators whose results depend on the random generator.
bool uses_random(const CorpusProgram& program);

}  // namespace passcheck::conformance
