// The AC/chunk decision situations generator (see decision_situations.h). Each motif
// writes one small graph: a symbol line (hint even, range from 2 to twice the hint,
// multiple of 2) when the chunk symbol is involved, inputs, nodes with their phase and
// module path, outputs. Sizes and the layer number are drawn per seed; the variants
// change the op, the input role or the position of the offending node.
#include "generators/decision_situations.h"
#include "generators/choice.h"

#include "framework/check/compare.h"
#include "framework/check/pipeline.h"
#include "framework/check/repro.h"
#include "framework/check/verifier.h"
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/ir/text.h"

#include <ATen/Context.h>

#include <functional>
#include <random>
#include <stdexcept>

namespace passcheck::gen {

namespace {

struct Draw {
  explicit Draw(uint64_t seed) : rng(seed) {}
  std::mt19937_64 rng;
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
  bool coin() { return pick(0, 1) == 1; }
  template <typename T>
  const T& one_of(const std::vector<T>& items) { return items[static_cast<size_t>(pick(0, static_cast<int64_t>(items.size()) - 1))]; }
};

// The parts of a case a motif fills in.
struct Motif {
  std::string decision, pipeline, variant;
  bool refusal = true;
  bool executable = true;
  std::string header;  // symbol lines
  std::vector<std::string> inputs, lines, outputs;

  std::string text() const {
    std::string out = header + "graph(";
    for (size_t i = 0; i < inputs.size(); ++i) out += (i ? ",\n    " : "\n    ") + inputs[i];
    out += "):\n";
    for (const std::string& l : lines) out += "  " + l + "\n";
    out += "  return (";
    for (size_t i = 0; i < outputs.size(); ++i) out += (i ? ", " : "") + outputs[i];
    return out + ")\n";
  }
};

// The common frame of the chunk motifs: symbol s0, a region layers.<L>, a width.
struct ChunkFrame {
  int64_t hint, width;
  std::string fqn;        // the region's module path (a submodule of layers.<L>)
  std::string forward;    // "#{phase=forward, fqn=...}"
  std::string backward;
  std::string rows;       // "sym(s0)"

  explicit ChunkFrame(Draw& d) {
    hint = 2 * d.pick(1, 4);
    width = d.pick(2, 5);
    fqn = "layers." + std::to_string(d.pick(0, 3)) + d.one_of<std::string>({"", ".mlp", ".moe"});
    forward = "  #{phase=forward, fqn=\"" + fqn + "\"}";
    backward = "  #{phase=backward, fqn=\"" + fqn + "\"}";
    rows = "sym(s0)";
  }
  std::string header() const {
    return "symbol s0 in [2, " + std::to_string(2 * hint) + "] hint " + std::to_string(hint) + " multiple_of 2\n";
  }
  std::string w() const { return std::to_string(width); }
  std::string x() const { return "f32[" + rows + ", " + w() + "]"; }
  static std::string chunk(const std::string& extra = "") {
    return "chunk{modules=layers.*" + extra + "},concretize";
  }
};

Motif chunk_motif(Draw& d, const std::string& guard, const std::function<void(Motif&, ChunkFrame&, Draw&)>& body,
                  const std::string& options = "") {
  ChunkFrame f(d);
  Motif m;
  m.decision = "chunk guard " + guard;
  m.header = f.header();
  m.pipeline = ChunkFrame::chunk(options);
  body(m, f, d);
  return m;
}

Motif multi_dim_live_in(Draw& d) {
  return chunk_motif(d, "multi-dim-live-in", [](Motif& m, ChunkFrame& f, Draw& d) {
    // x x: both factors carry the symbol in both dimensions; the row sums carry it once,
    // so only the live-in has two chunked dimensions.
    const std::string t = "f32[sym(s0), sym(s0)]";
    m.inputs = {"arg %x : " + t};
    const std::string op = d.one_of<std::string>({"aten::relu(%x)", "aten::neg(%x)", "aten::exp(%x)"});
    m.variant = op + ", squared, row sums";
    m.lines = {"%h : " + t + " = " + op + f.forward, "%m : " + t + " = aten::mm(%h, %h)" + f.forward,
               "%y : f32[sym(s0)] = aten::sum.dim_IntList(%m, [1])" + f.forward};
    m.outputs = {"%y"};
  });
}

Motif multi_dim_live_out(Draw& d) {
  return chunk_motif(d, "multi-dim-live-out", [](Motif& m, ChunkFrame& f, Draw& d) {
    m.inputs = {"arg %x : " + f.x()};
    m.lines = {"%t : f32[" + f.w() + ", sym(s0)]{1, " + f.w() + "} = aten::t(%x)" + f.forward,
               "%m : f32[sym(s0), sym(s0)] = aten::mm(%x, %t)" + f.forward};
    m.variant = d.coin() ? "x x^T, returned" : "x x^T, read after the region";
    if (m.variant == "x x^T, returned") {
      m.outputs = {"%m"};
    } else {
      m.lines.push_back("%r : f32[sym(s0), sym(s0)] = aten::relu(%m)");
      m.outputs = {"%r"};
    }
  });
}

Motif baked_reshape_size(Draw& d) {
  return chunk_motif(d, "baked-reshape-size", [](Motif& m, ChunkFrame& f, Draw& d) {
    const int64_t a = d.pick(1, 3), b = d.pick(2, 3);
    f.width = a * b;
    m.inputs = {"arg %x : " + f.x()};
    const std::string op = d.one_of<std::string>({"aten::view", "aten::reshape", "aten::_unsafe_view"});
    m.variant = op + " to [hint, " + std::to_string(a) + ", " + std::to_string(b) + "]";
    m.lines = {"%h : " + f.x() + " = aten::relu(%x)" + f.forward,
               "%v : f32[sym(s0), " + std::to_string(a) + ", " + std::to_string(b) + "] = " + op + "(%h, [" +
                   std::to_string(f.hint) + ", " + std::to_string(a) + ", " + std::to_string(b) + "])" + f.forward};
    m.outputs = {"%v"};
  });
}

Motif forward_reads_backward(Draw& d) {
  return chunk_motif(d, "forward-reads-backward", [](Motif& m, ChunkFrame& f, Draw& d) {
    m.inputs = {"arg %x : " + f.x()};
    const bool in_region = d.coin();
    m.variant = in_region ? "backward node of the same module" : "backward node of the head";
    const std::string bwd = in_region ? f.backward : "  #{phase=backward, fqn=\"head\"}";
    m.lines = {"%b : " + f.x() + " = aten::neg(%x)" + bwd, "%y : " + f.x() + " = aten::relu(%b)" + f.forward};
    m.outputs = {"%y"};
  });
}

Motif static_input_split(Draw& d) {
  return chunk_motif(d, "static-input-split", [](Motif& m, ChunkFrame& f, Draw& d) {
    const std::string role = d.coin() ? "buffer" : "param";
    m.variant = role + " carrying the symbol";
    m.inputs = {role + " %state : " + f.x(), "arg %x : " + f.x()};
    m.lines = {"%y : " + f.x() + " = aten::mul.Tensor(%x, %state)" + f.forward};
    m.outputs = {"%y"};
  });
}

Motif live_out_without_meta(Draw& d) {
  return chunk_motif(d, "live-out-without-meta", [](Motif& m, ChunkFrame& f, Draw& d) {
    m.inputs = {"arg %x : " + f.x()};
    const std::string op = d.one_of<std::string>({"aten::relu(%x)", "aten::sigmoid(%x)", "aten::neg(%x)"});
    m.variant = op + " typed Tensor";
    m.lines = {"%y : Tensor = " + op + f.forward};
    m.outputs = {"%y"};
  });
}

Motif scalar_body_output(Draw& d) {
  return chunk_motif(d, "scalar-body-output", [](Motif& m, ChunkFrame& f, Draw& d) {
    m.inputs = {"arg %x : " + f.x()};
    const std::string op = d.one_of<std::string>({"aten::_local_scalar_dense", "aten::item"});
    m.variant = op + " of a body sum, scaling the body";
    m.lines = {"%y : " + f.x() + " = aten::relu(%x)" + f.forward, "%s : f32[] = aten::sum(%y)" + f.forward,
               "%n : float = " + op + "(%s)" + f.forward,
               "%z : " + f.x() + " = aten::mul.Scalar(%y, %n)" + f.forward};
    m.outputs = {"%z"};
  });
}

// A buffer without the symbol (a counter), updated from a body sum.
void counter_update(Motif& m, const ChunkFrame& f) {
  m.inputs = {"buffer %count : f32[" + f.w() + "]", "arg %x : " + f.x()};
  m.lines = {"%s : f32[" + f.w() + "] = aten::sum.dim_IntList(%x, [0])" + f.forward,
             "%u : f32[" + f.w() + "] = aten::add_.Tensor(%count, %s, 1)" + f.forward};
}

// The buffer read back after the region (what a wrong update order changes).
void read_back(Motif& m, const ChunkFrame& f) {
  m.lines.push_back("%after : f32[" + f.w() + "] = aten::clone(%count)");
  m.outputs.push_back("%after");
}

Motif state_updated_twice(Draw& d) {
  return chunk_motif(d, "state-updated-twice", [](Motif& m, ChunkFrame& f, Draw& d) {
    counter_update(m, f);
    const std::string second = d.one_of<std::string>({"aten::mul_.Tensor(%count, %s)", "aten::div_.Tensor(%count, %s)"});
    m.variant = "then " + second;
    m.lines.push_back("%u2 : f32[" + f.w() + "] = " + second + f.forward);
    m.lines.push_back("%y : " + f.x() + " = aten::relu(%x)" + f.forward);
    m.outputs = {"%y"};
    read_back(m, f);
  });
}

Motif read_after_update(Draw& d) {
  return chunk_motif(d, "read-after-update", [](Motif& m, ChunkFrame& f, Draw& d) {
    counter_update(m, f);
    const std::string op = d.one_of<std::string>({"aten::mul.Tensor(%x, %count)", "aten::add.Tensor(%x, %count, 1)"});
    m.variant = "then " + op;
    m.lines.push_back("%y : " + f.x() + " = " + op + f.forward);
    m.outputs = {"%y"};
  });
}

// The region reads the buffer, then updates it (found by the coverage campaign: per-chunk
// execution gives chunk 1 the updated buffer).
Motif read_before_update(Draw& d) {
  return chunk_motif(d, "read-before-update", [](Motif& m, ChunkFrame& f, Draw& d) {
    m.inputs = {"buffer %count : f32[" + f.w() + "]", "arg %x : " + f.x()};
    const std::string op = d.one_of<std::string>({"aten::mul.Tensor(%x, %count)", "aten::add.Tensor(%x, %count, 1)"});
    m.variant = op + " then the update";
    m.lines = {"%y : " + f.x() + " = " + op + f.forward,
               "%s : f32[" + f.w() + "] = aten::sum.dim_IntList(%x, [0])" + f.forward,
               "%u : f32[" + f.w() + "] = aten::add_.Tensor(%count, %s, 1)" + f.forward};
    m.outputs = {"%y"};
    read_back(m, f);
  });
}

// An update that reads no chunked value: eager chunking runs it once per chunk.
Motif update_runs_once(Draw& d) {
  return chunk_motif(d, "update-runs-once", [](Motif& m, ChunkFrame& f, Draw& d) {
    m.inputs = {"buffer %count : f32[" + f.w() + "]", "arg %x : " + f.x()};
    const std::string op = d.one_of<std::string>({"aten::mul_.Scalar(%count, 0.5)", "aten::add_.Scalar(%count, 1.0, 1)"});
    m.variant = op;
    m.lines = {"%u : f32[" + f.w() + "] = " + op + f.forward, "%y : " + f.x() + " = aten::relu(%x)" + f.forward};
    m.outputs = {"%y"};
    read_back(m, f);
  });
}

// Two random draws in one region: interleaved bodies would draw c0, c1, c0, c1.
Motif second_random_op(Draw& d) {
  return chunk_motif(d, "second-random-op", [](Motif& m, ChunkFrame& f, Draw& d) {
    m.inputs = {"arg %x : " + f.x()};
    const std::string second = d.one_of<std::string>({"aten::rand_like(%x)", "aten::randn_like(%x)"});
    m.variant = "rand_like then " + second;
    m.lines = {"%r1 : " + f.x() + " = aten::rand_like(%x)" + f.forward,
               "%r2 : " + f.x() + " = " + second + f.forward,
               "%a : " + f.x() + " = aten::add.Tensor(%r1, %r2, 1)" + f.forward,
               "%y : " + f.x() + " = aten::mul.Tensor(%x, %a)" + f.forward};
    m.outputs = {"%y"};
  });
}

Motif unsupported_in_place(Draw& d) {
  return chunk_motif(d, "unsupported-in-place", [](Motif& m, ChunkFrame& f, Draw& d) {
    m.inputs = {"buffer %count : f32[" + f.w() + "]", "arg %x : " + f.x()};
    const std::string op = d.one_of<std::string>({"aten::add.out(%s, %s, 1, %count)", "aten::mul.out(%s, %s, %count)"});
    m.variant = op;
    m.lines = {"%s : f32[" + f.w() + "] = aten::sum.dim_IntList(%x, [0])" + f.forward,
               "%u : f32[" + f.w() + "] = " + op + f.forward, "%y : " + f.x() + " = aten::relu(%x)" + f.forward};
    m.outputs = {"%y"};
    read_back(m, f);
  });
}

Motif not_a_partial_sum(Draw& d) {
  return chunk_motif(d, "not-a-partial-sum", [](Motif& m, ChunkFrame& f, Draw& d) {
    m.inputs = {"arg %x : " + f.x()};
    const std::string op = d.one_of<std::string>({"aten::amax(%x, [0])", "aten::amin(%x, [0])",
                                                  "aten::mean.dim(%x, [0])", "aten::prod.dim_int(%x, 0)"});
    m.variant = op;
    m.lines = {"%r : f32[" + f.w() + "] = " + op + f.forward};
    m.outputs = {"%r"};
  });
}

Motif seq_through_attention(Draw& d) {
  return chunk_motif(
      d, "seq-through-attention",
      [](Motif& m, ChunkFrame& f, Draw& d) {
        f.fqn = "layers." + std::to_string(d.pick(0, 3)) + ".attention";
        f.forward = "  #{phase=forward, fqn=\"" + f.fqn + "\"}";
        m.inputs = {"arg %x : " + f.x()};
        // Attention mixes positions: a softmax over the chunked (sequence) dimension.
        m.variant = "softmax over the sequence";
        m.lines = {"%y : " + f.x() + " = aten::_softmax(%x, 0, False)" + f.forward};
        m.outputs = {"%y"};
      },
      ",mode=seq");
}

Motif erase_scalar_plumbing(Draw& d) {
  ChunkFrame f(d);
  Motif m;
  m.decision = "concretize rule erase-scalar-plumbing";
  m.refusal = false;
  m.header = f.header();
  m.pipeline = "concretize";
  const std::string op = d.one_of<std::string>({"aten::_local_scalar_dense", "aten::item"});
  m.inputs = {"arg %x : " + f.x()};
  m.lines = {"%y : " + f.x() + " = aten::relu(%x)", "%s : f32[] = aten::sum(%y)", "%n : float = " + op + "(%s)"};
  m.outputs = {"%y"};
  m.variant = op + " unused";
  if (d.coin()) {
    // A scalar with a reader stays.
    m.lines.push_back("%k : float = " + op + "(%s)");
    m.lines.push_back("%z : " + f.x() + " = aten::add.Scalar(%y, %k)");
    m.outputs.push_back("%z");
    m.variant += ", another one read";
  }
  return m;
}

// Forward layer, a loss, and backward nodes reading forward values (AC motifs).
std::string ac_meta(const std::string& phase, const std::string& fqn, const std::string& recompute = "") {
  return "  #{phase=" + phase + ", fqn=\"" + fqn + "\"" + (recompute.empty() ? "" : ", recompute=" + recompute) + "}";
}

Motif disjoint_backward_regions(Draw& d) {
  Motif m;
  m.decision = "remat guard disjoint-backward-regions";
  m.pipeline = "remat{rng=replay}";
  const std::string n = std::to_string(d.pick(2, 4)), k = std::to_string(d.pick(2, 5));
  const std::string x = "f32[" + n + ", " + k + "]", w = "f32[" + k + ", " + k + "]";
  const std::string layer = "layers." + std::to_string(d.pick(0, 3));
  const std::string tag = d.coin() ? "prefer_recompute" : "must_recompute";
  const std::string op = d.one_of<std::string>({"aten::relu(%x)", "aten::gelu(%x, \"none\")", "aten::sigmoid(%x)"});
  const bool optimizer_between = d.coin();
  m.variant = op + " tagged " + tag + ", backward split by " + (optimizer_between ? "an optimizer node" : "a forward node");
  m.inputs = {"param %w : " + w, "arg %x : " + x};
  m.lines = {"%a : " + x + " = " + op + ac_meta("forward", layer, tag),
             "%b : " + x + " = aten::mm(%a, %w)" + ac_meta("forward", layer, "must_save"),
             "%l : f32[] = aten::sum(%b)" + ac_meta("loss", "loss"),
             "%g1 : " + x + " = aten::mul.Tensor(%a, %x)" + ac_meta("backward", layer),
             optimizer_between ? "%o : " + w + " = aten::neg(%w)  #{phase=optimizer}"
                               : "%o : " + w + " = aten::neg(%w)" + ac_meta("forward", "head"),
             "%g2 : " + x + " = aten::mul.Tensor(%a, %b)" + ac_meta("backward", layer)};
  m.outputs = {"%l", "%g1", "%o", "%g2"};
  return m;
}

// The sac-tag motifs: a forward layer whose nodes sac-tag decides, a loss, a backward.
Motif sac_tag_motif(Draw& d, const std::string& decision, bool collective) {
  Motif m;
  m.decision = decision;
  m.refusal = false;
  const std::string policy = d.one_of<std::string>({"default", "eager", "full", "op"});
  m.pipeline = "ac-regions,sac-tag{policy=" + policy + "},remat{rng=replay}";
  const std::string n = std::to_string(d.pick(2, 4)), k = std::to_string(d.pick(2, 5));
  const std::string x = "f32[" + n + ", " + k + "]";
  const std::string layer = "layers." + std::to_string(d.pick(0, 3));
  m.inputs = {"param %w : f32[" + k + ", " + k + "]", "arg %x : " + x};
  m.lines = {"%a : " + x + " = aten::mm(%x, %w)" + ac_meta("forward", layer),
             "%h : " + x + " = aten::relu(%a)" + ac_meta("forward", layer)};
  if (collective) {
    m.executable = false;
    const std::string c = d.one_of<std::string>({"_c10d_functional::all_reduce(%h, \"sum\", \"dp\")",
                                                 "_c10d_functional::all_reduce(%h, \"max\", \"dp\")"});
    const std::string wait = "_c10d_functional::wait_tensor(%c)";
    m.variant = "policy " + policy + ", " + c;
    m.lines.push_back("%c : " + x + " = " + c + ac_meta("forward", layer));
    m.lines.push_back("%r : " + x + " = " + wait + ac_meta("forward", layer));
  } else {
    const std::string op = d.one_of<std::string>({"aten::_local_scalar_dense", "aten::item"});
    m.variant = "policy " + policy + ", " + op + " of a count";
    m.lines.push_back("%s : i64[] = aten::count_nonzero(%h)" + ac_meta("forward", layer));
    m.lines.push_back("%v : int = " + op + "(%s)" + ac_meta("forward", layer));
    m.lines.push_back("%r : " + x + " = aten::mul.Scalar(%h, %v)" + ac_meta("forward", layer));
  }
  m.lines.push_back("%l : f32[] = aten::sum(%r)" + ac_meta("loss", "loss"));
  m.lines.push_back("%g : " + x + " = aten::mul.Tensor(%h, %a)" + ac_meta("backward", layer));
  m.outputs = {"%l", "%g"};
  return m;
}

using MotifFn = std::function<Motif(Draw&)>;

const std::vector<std::pair<std::string, MotifFn>>& motifs() {
  static const std::vector<std::pair<std::string, MotifFn>> all = {
      {"multi-dim-live-in", multi_dim_live_in},
      {"multi-dim-live-out", multi_dim_live_out},
      {"baked-reshape-size", baked_reshape_size},
      {"forward-reads-backward", forward_reads_backward},
      {"static-input-split", static_input_split},
      {"live-out-without-meta", live_out_without_meta},
      {"scalar-body-output", scalar_body_output},
      {"state-updated-twice", state_updated_twice},
      {"read-after-update", read_after_update},
      {"read-before-update", read_before_update},
      {"update-runs-once", update_runs_once},
      {"second-random-op", second_random_op},
      {"unsupported-in-place", unsupported_in_place},
      {"not-a-partial-sum", not_a_partial_sum},
      {"seq-through-attention", seq_through_attention},
      {"erase-scalar-plumbing", erase_scalar_plumbing},
      {"disjoint-backward-regions", disjoint_backward_regions},
      // wait_tensor takes the tag sac-tag gave the collective it waits for.
      {"wait-after-collective", [](Draw& d) { return sac_tag_motif(d, "sac-tag rule copy-wait-tag", true); }},
      {"symbolic-int", [](Draw& d) { return sac_tag_motif(d, "sac-tag guard symbolic-int", false); }},
  };
  return all;
}

}  // namespace

const std::vector<std::string>& decision_motifs() {
  static const std::vector<std::string> names = names_of(motifs());
  return names;
}

DecisionSituation generate_decision_situation(uint64_t seed, size_t motif) {
  if (motif >= motifs().size()) throw std::out_of_range("decision motif " + std::to_string(motif) + " out of range");
  Draw d(seed);
  const Motif m = motifs()[motif].second(d);
  DecisionSituation c;
  c.motif = motifs()[motif].first;
  c.decision = m.decision;
  c.text = m.text();
  c.pipeline = m.pipeline;
  c.refusal_expected = m.refusal;
  if (m.refusal) {
    const std::string pass = m.decision.substr(0, m.decision.find(' '));
    const std::vector<check::PassInvocation> passes = check::parse_pipeline(c.pipeline, check::PassRegistry::global());
    for (size_t i = 0; i < passes.size(); ++i)
      if (passes[i].name == pass) c.refusing_step = i;
  }
  c.executable = m.executable;
  c.input_seed = seed;
  c.description = c.motif + " (" + m.variant + ")";
  c.graph = std::shared_ptr<ir::Graph>(ir::parse_graph(c.text, "decision-situation-" + std::to_string(seed)).release());
  return c;
}

namespace {

// Substitutes every symbol by its hint with the real concretize pass.
void concretize(ir::Graph& graph) {
  if (graph.symbols().empty() && graph.claims().empty()) return;
  const check::RegisteredPass& pass = check::PassRegistry::global().get("concretize");
  pass.run(graph, check::PassOptions(pass.info, {}));
}

std::vector<c10::IValue> run(const ir::Graph& graph, const std::vector<c10::IValue>& inputs) {
  exec::ExecutorOptions options;
  options.check_metadata = true;
  at::manual_seed(0);
  return exec::Executor(graph, options).run(inputs);
}

// The outputs of `result` against those of `input`, bit for bit; empty when equal or
// when the input graph itself cannot run.
std::vector<std::string> same_outputs(const ir::Graph& input, const ir::Graph& result, uint64_t seed) {
  std::unique_ptr<ir::Graph> reference = input.clone();
  std::vector<c10::IValue> inputs, expected;
  try {
    concretize(*reference);
    exec::InputOptions in;
    in.seed = seed;
    inputs = exec::make_inputs(*reference, in);
    expected = run(*reference, inputs);
  } catch (const std::exception&) {
    return {};  // not a program: nothing to compare with
  }
  std::unique_ptr<ir::Graph> candidate = result.clone();
  std::vector<c10::IValue> actual;
  try {
    concretize(*candidate);
    actual = run(*candidate, inputs);
  } catch (const std::exception& e) {
    return {std::string("the rewritten graph does not run where the input does: ") + e.what()};
  }
  if (actual.size() != expected.size())
    return {"the rewritten graph returns " + std::to_string(actual.size()) + " values, the input " +
            std::to_string(expected.size())};
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!expected[i].isTensor() || !actual[i].isTensor()) {
      if (expected[i].isTensor() != actual[i].isTensor() || !(expected[i] == actual[i]))
        return {"output " + std::to_string(i) + " differs from the input graph's"};
      continue;
    }
    const check::TensorComparison cmp =
        check::compare_bitwise("output " + std::to_string(i), expected[i].toTensor(), actual[i].toTensor());
    if (!cmp.equal) return {"output " + std::to_string(i) + " differs from the input graph's: " + cmp.describe()};
  }
  return {};
}

}  // namespace

std::vector<std::string> decision_situation_violations(const DecisionSituation& situation,
                                                       const std::string& pipeline,
                                                       const check::PassRegistry& registry) {
  std::unique_ptr<ir::Graph> g = situation.graph->clone();
  const std::vector<check::PassInvocation> passes = check::parse_pipeline(pipeline, registry);
  for (size_t step = 0; step < passes.size(); ++step) {
    const check::PassInvocation& p = passes[step];
    const check::RegisteredPass& pass = registry.get(p.name);
    try {
      pass.run(*g, check::PassOptions(pass.info, p.options));
      check::verify_or_throw(*g, "after " + p.name);
    } catch (const check::RefusedInput& e) {
      if (situation.refusal_expected && step == situation.refusing_step) return {};
      // A refusal that moves to a later pass (concretize finding a claim false) means the
      // earlier pass let through what it must refuse.
      return {p.name + " refused a situation the real passes " +
              (situation.refusal_expected ? "refuse at step " + std::to_string(situation.refusing_step) : "accept") +
              ": " + e.what()};
    } catch (const std::exception& e) {
      return {p.name + " failed with an error that is not a clear refusal: " + e.what()};
    }
  }
  if (!situation.executable) return {};
  const bool symbolic = !situation.graph->symbols().empty();
  if (!symbolic) return check::check_case(*situation.graph, pipeline, situation.input_seed, 2, registry).violations;
  return same_outputs(*situation.graph, *g, situation.input_seed);
}

DecisionSituation generate_decision_situation(uint64_t seed) {
  return generate_decision_situation(seed, static_cast<size_t>(seed % motifs().size()));
}

}  // namespace passcheck::gen
