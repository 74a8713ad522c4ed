// Tracer conformance: passcheck's tracer against PyTorch's make_fx on the shared corpus
// (suites/conformance/corpus.txt, reference in make_fx.golden written by
// python/conformance/make_fx_reference.py), CPU traces against meta traces, and every
// traced program replayed on fresh inputs (zeros, ties, NaN) against eager.
// docs/tracer-conformance.md lists the normalisation and the differences left.
#include "suites/conformance/corpus.h"

#include "framework/check/compare.h"
#include "framework/trace/subclass_like_backward.h"
#include "framework/exec/executor.h"
#include "framework/exec/op_properties.h"
#include "framework/ir/text.h"
#include "framework/trace/tracer.h"
#include "oracles/models/subject.h"
#include "oracles/training_driver.h"
#include "suites/support/test_support.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace passcheck::conformance {
namespace {

using testing::source_path;

const std::vector<CorpusProgram>& corpus() {
  static const std::vector<CorpusProgram> programs = read_corpus(source_path("suites/conformance/corpus.txt"));
  return programs;
}

/// make_fx.golden: program name -> lines ("! refused: data-dependent" for a refusal).
/// PASSCHECK_MAKE_FX_GOLDEN names another reference (ci/gpu.sh writes one with the GPU
/// machine's torch and compares against it there).
std::map<std::string, std::vector<std::string>> golden() {
  const char* other = std::getenv("PASSCHECK_MAKE_FX_GOLDEN");
  std::ifstream in(other && *other ? std::string(other) : source_path("suites/conformance/make_fx.golden"));
  if (!in) throw std::runtime_error(std::string("cannot read the make_fx reference ") + (other ? other : ""));
  std::map<std::string, std::vector<std::string>> out;
  std::string line, current;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("== ", 0) == 0) current = line.substr(3), out[current];
    else out[current].push_back(line);
  }
  return out;
}

// The normalisation applied to both sides (docs/tracer-conformance.md):
// - aten::detach and aten::alias nodes are dropped: make_fx records the detaches autograd
//   makes when it saves a result (torch 2.x's make_fx as aten::alias); passcheck maps
//   saved variables back to their value instead.
// - make_fx's in-place updates of temporaries read as the functional operator (below).
// - make_fx's getitem projections are not operator nodes (dropped by the script);
//   passcheck's nodes define several outputs directly.
// - make_fx's aten::lift_fresh_copy is passcheck's aten::scalar_tensor: both materialize
//   a constant tensor a formula built outside the dispatcher (the backward of mul.Scalar);
//   passcheck's following aten::lift_fresh returns its input and is dropped.
const std::set<std::string> kDroppedOps = {"aten::detach", "aten::alias", "aten::lift_fresh"};
const std::map<std::string, std::string> kRenamedOps = {{"aten::lift_fresh_copy", "aten::scalar_tensor"}};

std::string describe_meta(const ir::Value& v) {
  if (!v.meta()) return "-";
  std::string s = std::string(ir::dtype_short_name(v.meta()->dtype)) + "[";
  for (size_t i = 0; i < v.meta()->sizes.size(); ++i) s += (i ? "," : "") + std::to_string(v.meta()->sizes[i]);
  return s + "]";
}

std::vector<std::string> op_lines(const ir::Graph& graph) {
  std::vector<std::string> lines;
  for (const ir::Node* n : graph.nodes()) {
    if (kDroppedOps.count(n->op())) continue;
    std::string line = n->op();
    for (const ir::Value* v : n->outputs()) line += " " + describe_meta(*v);
    lines.push_back(line);
  }
  return lines;
}

// make_fx's in-place update of a temporary (marked " @temporary" by the script) as
// passcheck records it: the functional operator, when LibTorch has one with the same
// arguments (TraceOptions::functionalize_temporaries).
std::string functional_if_temporary(std::string line) {
  const std::string marker = " @temporary";
  if (line.size() < marker.size() || line.compare(line.size() - marker.size(), marker.size(), marker) != 0) return line;
  line.resize(line.size() - marker.size());
  const std::string op = line.substr(0, line.find(' '));
  const size_t dot = op.find('.');
  const std::string name = op.substr(0, dot), overload = dot == std::string::npos ? "" : op.substr(dot + 1);
  if (name.empty() || name.back() != '_') return line;
  const std::string functional = name.substr(0, name.size() - 1);
  if (!c10::Dispatcher::singleton().findSchema({functional, overload})) return line;
  return functional + (overload.empty() ? "" : "." + overload) + line.substr(op.size());
}

std::vector<std::string> normalized(const std::vector<std::string>& raw) {
  std::vector<std::string> lines;
  for (const std::string& l : raw) lines.push_back(functional_if_temporary(l));
  std::vector<std::string> out;
  for (const std::string& l : lines) {
    std::string op = l.substr(0, l.find(' '));
    if (kDroppedOps.count(op)) continue;
    auto renamed = kRenamedOps.find(op);
    out.push_back(renamed == kRenamedOps.end() ? l : renamed->second + l.substr(op.size()));
  }
  return out;
}

trace::TracedProgram trace_program(const CorpusProgram& program, c10::Device device) {
  std::vector<c10::IValue> args;
  for (const at::Tensor& t : example_inputs(program, 0, device)) args.emplace_back(t);
  return trace::trace_step({}, make_step(program), args);
}

// The CPU trace, or null when the tracer refuses the program (a data-dependent decision).
std::unique_ptr<trace::TracedProgram> trace_unless_refused(const CorpusProgram& program) {
  try {
    return std::make_unique<trace::TracedProgram>(trace_program(program, at::kCPU));
  } catch (const trace::TraceError&) {
    return nullptr;
  }
}

std::string first_difference(const std::vector<std::string>& expected, const std::vector<std::string>& actual) {
  std::ostringstream os;
  size_t i = 0;
  while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) ++i;
  os << "first difference at node " << i << ": make_fx "
     << (i < expected.size() ? "'" + expected[i] + "'" : std::string("<end>")) << ", passcheck "
     << (i < actual.size() ? "'" + actual[i] + "'" : std::string("<end>")) << "\n  make_fx:   ";
  for (const std::string& l : expected) os << l << "; ";
  os << "\n  passcheck: ";
  for (const std::string& l : actual) os << l << "; ";
  return os.str();
}

// Operators a program's reference records whole where the tracer decomposes them, or the
// reverse (docs/tracer-conformance.md); none with torch 2.15's make_fx.
const std::map<std::string, std::string> kKeptWhole = {};

// Programs that go through a data-dependent output shape (masked_select, and the backward
// of masked_scatter, which selects with the mask): traced on the CPU, where the shape
// holds only for masks with the example's count and the executor checks it as a guard
// (replays with another count must stop there), and refused on the meta device.
const std::set<std::string> kDataDependentBackwardShape = {"masked_select", "masked_scatter"};

TEST(Conformance, CorpusIsLargeAndCoversTheVocabulary) {
  EXPECT_GE(corpus().size(), 80u);
  std::map<std::string, std::vector<std::string>> reference = golden();
  for (const CorpusProgram& p : corpus()) EXPECT_TRUE(reference.count(p.name)) << p.name << " has no make_fx reference";
}

TEST(Conformance, TracerAgreesWithMakeFx) {
  std::map<std::string, std::vector<std::string>> reference = golden();
  int compared = 0, refused = 0;
  for (const CorpusProgram& p : corpus()) {
    SCOPED_TRACE(p.name);
    const std::vector<std::string>& expected = reference[p.name];
    bool make_fx_refused = expected.size() == 1 && expected[0].rfind("! refused", 0) == 0;
    if (make_fx_refused) {
      try {
        trace_program(p, at::kCPU);
        ADD_FAILURE() << p.name << ": make_fx refuses this data-dependent step; passcheck traced it";
      } catch (const trace::TraceError& e) {
        EXPECT_NE(std::string(e.what()).find("data-dependent decision"), std::string::npos) << e.what();
        ++refused;
      }
      continue;
    }
    trace::TracedProgram traced = trace_program(p, at::kCPU);
    std::vector<std::string> want = normalized(expected), got = op_lines(traced.graph());
    auto kept = kKeptWhole.find(p.name);
    if (kept != kKeptWhole.end()) {
      // The listed difference must still be the only reason: the op is there whole.
      bool has_op = std::any_of(got.begin(), got.end(), [&](const std::string& l) { return l.rfind(kept->second, 0) == 0; });
      EXPECT_TRUE(has_op && want != got) << p.name << ": the listed difference is gone; update kKeptWhole and the docs";
      continue;
    }
    EXPECT_EQ(want, got) << p.name << ": " << first_difference(want, got);
    ++compared;
  }
  std::printf("conformance: %d programs equal to make_fx, %d refused by both\n", compared, refused);
}

TEST(Conformance, MetaTraceEqualsCpuTrace) {
  for (const CorpusProgram& p : corpus()) {
    SCOPED_TRACE(p.name);
    std::unique_ptr<trace::TracedProgram> cpu = trace_unless_refused(p);
    if (!cpu) continue;  // refused (TracerAgreesWithMakeFx checks make_fx refuses it too)
    if (kDataDependentBackwardShape.count(p.name)) {
      try {
        trace_program(p, at::kMeta);
        ADD_FAILURE() << p.name << ": a data-dependent output shape was traced on meta";
      } catch (const trace::TraceError& e) {
        EXPECT_NE(std::string(e.what()).find("depends on tensor values"), std::string::npos) << e.what();
      }
      continue;
    }
    trace::TracedProgram meta = trace_program(p, at::kMeta);
    EXPECT_EQ(op_lines(cpu->graph()), op_lines(meta.graph()));
    std::unique_ptr<ir::Graph> retargeted = meta.graph().clone();
    ir::retarget_device(*retargeted, at::kMeta, at::kCPU);
    EXPECT_EQ(ir::print_graph(cpu->graph()), ir::print_graph(*retargeted));
  }
}

TEST(Conformance, EveryModelTracesTheSameOnMetaAndCpu) {
  for (const std::string& name : models::available_subjects()) {
    SCOPED_TRACE(name);
    models::SubjectOptions options = models::suite_options(name);
    options.batch_size = 2;
    options.seq_len = 16;
    auto subject = models::make_subject(name, options);
    trace::TracedProgram real = oracles::trace_subject(*subject, subject->batch(0), false);
    trace::TracedProgram meta = oracles::trace_subject(*subject, subject->batch(0), true);
    EXPECT_EQ(ir::print_graph(real.graph()), ir::print_graph(meta.graph())) << name;
  }
}

// A mutation in a joint graph is a mutation the program makes (a buffer update, an
// in-place op it calls), or an in-place write into a fresh temporary that make_fx records
// in the same place (masked_fill_ in the backward of maximum); never one of the in-place
// backward formulas make_fx does not record (index_add_, scatter_add_, masked_scatter_).
TEST(Conformance, OnlyProgramMutationsAreRecorded) {
  std::map<std::string, std::vector<std::string>> reference = golden();
  for (const CorpusProgram& p : corpus()) {
    std::unique_ptr<trace::TracedProgram> traced = trace_unless_refused(p);
    if (!traced) continue;  // refused (TracerAgreesWithMakeFx checks make_fx refuses it too)
    std::set<std::string> allowed;
    for (const CorpusOp& op : p.ops) allowed.insert(op.op);
    for (const std::string& line : reference[p.name]) allowed.insert(line.substr(0, line.find(' ')));
    for (const ir::Node* n : traced->graph().nodes()) {
      if (!exec::is_mutating(*n)) continue;
      EXPECT_TRUE(allowed.count(n->op())) << p.name << ": " << ir::print_node(*n);
    }
  }
}

std::vector<c10::IValue> as_ivalues(const std::vector<at::Tensor>& tensors) {
  std::vector<c10::IValue> out;
  for (const at::Tensor& t : tensors) out.emplace_back(t.detach());
  return out;
}

// The graph is right for inputs it was not traced on: replayed on fresh inputs with
// zeros, ties and NaN, every output equals eager's bit for bit. The eager step runs with
// the formulas the tracer records (trace::SubclassLikeBackwardGuard), so a formula that
// baked one data-dependent branch into the graph would show here.
TEST(Conformance, TracedGraphIsRightForFreshInputs) {
  int replays = 0, guarded_stops = 0;
  for (const CorpusProgram& p : corpus()) {
    std::unique_ptr<trace::TracedProgram> traced = trace_unless_refused(p);
    if (!traced) continue;  // refused (TracerAgreesWithMakeFx checks make_fx refuses it too)
    exec::Executor executor(traced->graph());
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      SCOPED_TRACE(p.name + " seed " + std::to_string(seed));
      std::vector<at::Tensor> inputs = replay_inputs(p, seed, /*with_nan=*/seed % 2 == 0);
      at::manual_seed(seed);
      std::vector<c10::IValue> got;
      try {
        got = executor.run(as_ivalues(inputs));
      } catch (const exec::ExecError& e) {
        // Only a data-dependent shape may stop a replay, and only at its guard.
        bool guarded = kDataDependentBackwardShape.count(p.name) &&
                       std::string(e.what()).find("data-dependent shape guard failed") != std::string::npos;
        EXPECT_TRUE(guarded) << p.name << ": " << e.what();
        ++guarded_stops;
        continue;
      }
      at::manual_seed(seed);
      std::vector<at::Tensor> want;
      {
        trace::SubclassLikeBackwardGuard same_formulas;
        want = run_eager(p, inputs);
      }
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        check::TensorComparison c = check::compare_bitwise("output " + std::to_string(i), want[i], got[i].toTensor());
        EXPECT_TRUE(c.equal) << c.describe();
      }
      ++replays;
    }
  }
  std::printf("conformance: %d replays on fresh inputs equal to eager, %d stopped at a data-dependent shape guard\n",
              replays, guarded_stops);
}

// Tracing must refuse a decision on tensor data rather than bake one branch in.
TEST(Conformance, DataDependentDecisionInAStepIsRefused) {
  at::Tensor x = at::randn({3});
  trace::StepFunction step = [](const std::vector<c10::IValue>& args) {
    at::Tensor t = args[0].toTensor();
    at::Tensor y = t.sum().item<double>() > 0 ? t * 2 : t * 3;
    return c10::IValue(y);
  };
  try {
    trace::trace_step({}, step, {x});
    FAIL() << "a step branching on .item() was traced";
  } catch (const trace::TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("data-dependent decision"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("_local_scalar_dense"), std::string::npos) << e.what();
  }
}

const CorpusProgram& program_named(const std::string& name) {
  for (const CorpusProgram& p : corpus())
    if (p.name == name) return p;
  throw std::invalid_argument("no corpus program " + name);
}

// The backwards that decide on data in LibTorch's plain CPU formulas, replayed on inputs
// that take the other branch than the example (a NaN maximum, zeros in a product): the
// graph agrees with plain eager (the formula users run) to rounding, where a baked branch
// would give NaN, infinities or zeros. The bitwise check against eager with the same
// formulas is TracedGraphIsRightForFreshInputs.
TEST(Conformance, DataDecidingBackwardsAreRightOnTheOtherBranch) {
  for (const std::string name : {"max_all", "min_all", "prod_all", "prod_dim", "cumprod"}) {
    SCOPED_TRACE(name);
    const CorpusProgram& p = program_named(name);
    trace::TracedProgram traced = trace_program(p, at::kCPU);
    std::vector<at::Tensor> inputs = example_inputs(p, 0, at::kCPU);
    at::Tensor x = inputs[0].detach().clone();
    if (name == "max_all" || name == "min_all") x[1][2] = NAN;  // the NaN is the extremum
    else x[0][1] = 0.0, x[2][0] = 0.0, x[2][2] = 0.0;          // one zero, then two in a row
    std::vector<at::Tensor> fresh = {x.set_requires_grad(true)};
    std::vector<c10::IValue> got = exec::Executor(traced.graph()).run(as_ivalues(fresh));
    std::vector<at::Tensor> want = run_eager(p, fresh);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      check::ToleranceReport r = check::compare_tolerance(want[i], got[i].toTensor());
      EXPECT_TRUE(r.within(1e-6, 1e-5)) << "output " << i << ": max abs " << r.max_abs << ", max rel " << r.max_rel
                                        << "\n  eager " << want[i] << "\n  graph " << got[i].toTensor();
    }
  }
}

// The checks above are not vacuous: a tracer that records LibTorch's plain CPU formulas
// (the behaviour before the conformance work, kept as TraceOptions::make_fx_backward_formulas
// = false) fails each of them.
TEST(Conformance, ChecksCatchATracerRecordingPlainCpuFormulas) {
  trace::TraceOptions plain;
  plain.make_fx_backward_formulas = false;
  plain.functionalize_temporaries = false;  // the plain formulas' writes into temporaries, as they are
  auto trace_plain = [&](const std::string& name) {
    const CorpusProgram& p = program_named(name);
    std::vector<c10::IValue> args;
    for (const at::Tensor& t : example_inputs(p, 0, at::kCPU)) args.emplace_back(t);
    return trace::trace_step({}, make_step(p), args, plain);
  };
  std::map<std::string, std::vector<std::string>> reference = golden();
  // Every program whose plain-formula trace differs from make_fx is caught by
  // TracerAgreesWithMakeFx's comparison; those whose formula decides on data are refused.
  std::set<std::string> differ, refused;
  for (const CorpusProgram& p : corpus()) {
    std::vector<std::string> want = normalized(reference[p.name]);
    if ((want.size() == 1 && want[0].rfind("! refused", 0) == 0) || kKeptWhole.count(p.name)) continue;
    try {
      if (op_lines(trace_plain(p.name).graph()) != want) differ.insert(p.name);
    } catch (const trace::TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("data-dependent decision"), std::string::npos) << e.what();
      refused.insert(p.name);
    }
  }
  for (const char* name : {"index_select", "gather", "advanced_index", "max_dim", "topk", "masked_select", "prod_all"})
    EXPECT_TRUE(differ.count(name)) << name << " traced the same with plain formulas";
  for (const char* name : {"max_all", "min_all", "prod_dim", "cumprod"})
    EXPECT_TRUE(refused.count(name)) << name << " was not refused with plain formulas";
  // The in-place writes of the plain formulas are flagged by OnlyProgramMutationsAreRecorded's rule.
  trace::TracedProgram gather = trace_plain("gather");
  bool flagged = false;
  for (const ir::Node* n : gather.graph().nodes()) flagged |= exec::is_mutating(*n) && n->op() == "aten::scatter_add_";
  EXPECT_TRUE(flagged);
  // The plain backward of prod counts zeros with nonzero: replaying on a zero stops at the
  // data-dependent shape guard instead of returning wrong gradients.
  const CorpusProgram& prod = program_named("prod_all");
  trace::TracedProgram traced = trace_plain("prod_all");
  at::Tensor x = example_inputs(prod, 0, at::kCPU)[0].detach().clone();
  x[0][1] = 0.0;
  EXPECT_THROW(exec::Executor(traced.graph()).run(as_ivalues({x})), exec::ExecError);
  std::printf("plain formulas: %zu programs differ from make_fx, %zu refused\n", differ.size(), refused.size());
}

}  // namespace
}  // namespace passcheck::conformance
