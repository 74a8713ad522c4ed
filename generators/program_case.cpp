// generate_case: one seed -> one random program, traced on the CPU into its joint graph.
// The RapidCheck generator is sampled directly (no property run), so the case depends
// on the seed alone; the same seed also seeds the parameters and the input seed.
#include "generators/program_case.h"

#include "framework/check/chunk_properties.h"
#include "generators/program.h"
#include "oracles/chunked_training.h"
#include "oracles/symbolic_trace.h"
#include "oracles/training_driver.h"

#include <chrono>
#include <sstream>
#include <stdexcept>

namespace passcheck::gen {

namespace {

// The program's joint graph on the CPU. On meta tensors the step records the same graph
// (the vocabulary has no operation whose output shape depends on data;
// ProgramProperties.MetaTraceEqualsCpuTrace compares both traces) without computing
// anything or initializing parameters, which was a third of the time to make a case. A
// meta trace that throws (an operation without a meta kernel) is redone on the CPU, which
// reports any error that is not about meta tensors.
trace::TracedProgram trace_program(const ProgramSpec& spec, uint64_t seed, TraceOn on) {
  const c10::Device cpu(c10::DeviceType::CPU), meta(c10::DeviceType::Meta);
  if (on == TraceOn::Meta) {
    try {
      auto subject = make_program_subject(spec, seed, meta);
      trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), /*on_meta=*/false);
      ir::retarget_device(program.mutable_graph(), meta, cpu);
      return program;
    } catch (const std::exception&) {
      // traced on the CPU below
    }
  }
  auto subject = make_program_subject(spec, seed, cpu);
  return oracles::trace_subject(*subject, subject->batch(0), /*on_meta=*/false);
}

GeneratedCase case_of_spec(const ProgramSpec& spec, uint64_t seed, TraceOn on) {
  trace::TracedProgram program = trace_program(spec, seed, on);
  GeneratedCase c;
  c.graph = program.shared_graph();
  c.input_seed = seed ^ 0x9e3779b97f4a7c15ULL;
  c.int_high = spec.int_high();
  c.description = spec.describe();
  return c;
}

}  // namespace

GeneratedCase generate_case(uint64_t seed, const ProgramGenOptions& options, TraceOn on) {
  // Sizes cycle through RapidCheck's range so that small and large programs both occur.
  int size = static_cast<int>(seed % 101);
  return case_of_spec(program_for_seed(seed, options, size), seed, on);
}

GeneratedCase generate_repeated_layer_case(uint64_t seed, int copies, TraceOn on) {
  ProgramSpec spec = program_for_seed(seed, ac_coverage_options(), static_cast<int>(seed % 101));
  // Every width-changing op of the first layer keeps the input width, so the layer maps
  // in_dim to in_dim and its copies chain.
  LayerSpec layer = spec.layers.empty() ? LayerSpec{} : spec.layers.front();
  for (OpSpec& op : layer.ops)
    if (changes_width(op.kind)) op.out = spec.in_dim;
  spec.layers.assign(static_cast<size_t>(copies), layer);
  return case_of_spec(spec, seed, on);
}

void tag_randomly(ir::Graph& graph, uint64_t seed) {
  static const ir::RecomputePolicy policies[] = {ir::RecomputePolicy::MustSave, ir::RecomputePolicy::PreferSave,
                                                 ir::RecomputePolicy::MustRecompute,
                                                 ir::RecomputePolicy::PreferRecompute};
  uint64_t x = seed;
  for (ir::Node* n : graph.nodes()) {
    if (n->meta().phase != ir::Phase::Forward) continue;
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    n->mutable_meta().recompute = policies[(x >> 33) % 4];
  }
}

std::string ChunkConfig::str() const {
  std::ostringstream os;
  os << "mode=" << mode << " modules=" << modules << " early-accumulation=" << (early_accumulation ? "true" : "false")
     << " steps=" << steps << " optimizer=" << optimizer;
  if (refusal_allowed) os << " refusal-allowed=true";
  return os.str();
}

ChunkConfig ChunkConfig::parse(const std::string& text) {
  ChunkConfig c;
  std::istringstream in(text);
  for (std::string kv; in >> kv;) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("chunk configuration: expected key=value, got '" + kv + "'");
    std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "mode") {
      oracles::parse_symbolic_dim(v);  // throws on an unknown mode
      c.mode = v;
    } else if (k == "modules") {
      if (v.empty()) throw std::invalid_argument("chunk configuration: empty modules");
      c.modules = v;
    } else if (k == "early-accumulation") {
      if (v != "true" && v != "false") throw std::invalid_argument("chunk configuration: early-accumulation must be true or false");
      c.early_accumulation = v == "true";
    } else if (k == "steps") {
      try {
        c.steps = std::stoi(v);
      } catch (const std::exception&) {
        throw std::invalid_argument("chunk configuration: steps must be an integer, got '" + v + "'");
      }
      if (c.steps < 1) throw std::invalid_argument("chunk configuration: steps must be at least 1");
    } else if (k == "refusal-allowed") {
      if (v != "true" && v != "false") throw std::invalid_argument("chunk configuration: refusal-allowed must be true or false");
      c.refusal_allowed = v == "true";
    } else if (k == "optimizer") {
      oracles::parse_optimizer(v);
      c.optimizer = v;
    } else {
      throw std::invalid_argument("chunk configuration: unknown key '" + k + "'");
    }
  }
  return c;
}

namespace {
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
// Runs a pass; a clear refusal (check::RefusedInput) is noted in `refused` and rethrown.
check::PassResult run_noting_refusal(const check::PassFunction& run, ir::Graph& g, const check::PassOptions& o,
                                     std::string& refused) {
  try {
    return run(g, o);
  } catch (const check::RefusedInput& e) {
    refused = e.what();
    throw;
  }
}

}  // namespace

ChunkCase generate_chunk_case(uint64_t seed, const ProgramGenOptions& options) {
  ProgramGenOptions o = options;
  o.chunkable = true;
  ProgramSpec spec = program_for_seed(seed, o, static_cast<int>(seed % 101));
  ChunkCase c;
  c.program = encode_spec(spec);
  c.seed = seed;
  c.description = spec.describe();
  const uint64_t h = mix(seed);
  const size_t n = spec.layers.size();
  // Half the cases chunk every layer; the others one layer, or the first and the last.
  switch (h % 4) {
    case 2: c.config.modules = "layers." + std::to_string((h >> 8) % n); break;
    case 3: c.config.modules = n >= 2 ? "layers.0,layers." + std::to_string(n - 1) : "layers.*"; break;
    default: break;
  }
  c.config.optimizer = (h >> 16) % 2 ? "adam" : "sgd";
  if (o.decision_coverage) {
    // Coverage cases may be refused. (Early accumulation stays off: the oracle compares
    // with eager chunking bit for bit; the coverage campaign runs the pass both ways.)
    c.config.refusal_allowed = true;
    // Half the programs that pad a row chunk only the first layer that pads: its body
    // then records a claim false at the hint (the cat of two padded halves), which
    // concretize must refuse.
    for (size_t l = 0; l < n && (h >> 32) % 2 == 1; ++l) {
      bool pads = false;
      for (const OpSpec& op : spec.layers[l].ops) pads |= op.kind == OpKind::PadRow || op.kind == OpKind::PadTwoRows;
      if (!pads) continue;
      c.config.modules = "layers." + std::to_string(l);
      break;
    }
  }
  return c;
}

std::shared_ptr<ir::Graph> trace_chunk_case(const ChunkCase& c) {
  oracles::SymbolicTraceOptions t;
  t.model = "program";
  t.subject.seed = c.seed;
  const ProgramSpec spec = decode_spec(c.program);
  t.make_subject = [spec](const models::SubjectOptions& o) { return make_program_subject(spec, o); };
  t.trace_on_meta = false;  // a factory's subject cannot be rebuilt on the meta device
  t.dim = oracles::parse_symbolic_dim(c.config.mode);
  return oracles::trace_symbolic(t).graph;
}

ChunkCaseResult run_chunk_case(const ChunkCase& c, const check::PassRegistry& registry, const std::string& chunk_pass,
                               const std::string& concretize_pass) {
  const auto t0 = std::chrono::steady_clock::now();
  ChunkCaseResult result;
  auto done = [&] {
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return result;
  };
  try {
    ProgramSpec spec = decode_spec(c.program);
    // The passes under test, wrapped to observe the graph they leave: the chunked graph
    // before concretize (the invariants need its chunk metadata and symbols) and the
    // concretized one.
    struct Observed {
      bool chunked = false, concretized = false;
      std::string refused;  // a check::RefusedInput from either pass
      std::vector<std::string> invariants, symbols;
      sym::ProofReport proofs;  // proved here too, so a concretize that throws does not hide them
    };
    auto observed = std::make_shared<Observed>();
    check::PassRegistry wrapped = registry;
    {
      check::RegisteredPass chunk = registry.get(chunk_pass);
      check::PassInfo info = chunk.info;
      info.name = "observed-" + chunk_pass;
      wrapped.add(info, [run = chunk.run, observed](ir::Graph& g, const check::PassOptions& o) {
        check::PassResult r = run_noting_refusal(run, g, o, observed->refused);
        observed->chunked = true;
        observed->invariants = check::check_chunk_invariants(g);
        return r;
      });
      check::RegisteredPass concretize = registry.get(concretize_pass);
      info = concretize.info;
      info.name = "observed-" + concretize_pass;
      wrapped.add(info, [run = concretize.run, observed](ir::Graph& g, const check::PassOptions& o) {
        observed->proofs = sym::prove_all(g.claims(), g.symbols());
        check::PassResult r = run_noting_refusal(run, g, o, observed->refused);
        observed->concretized = true;
        observed->symbols = check::find_symbols(g);
        return r;
      });
    }
    oracles::ChunkedTrainingOptions options;
    options.model = "program";
    options.subject.seed = c.seed;
    options.make_subject = [spec](const models::SubjectOptions& o) { return make_program_subject(spec, o); };
    options.steps = c.config.steps;
    options.dim = oracles::parse_symbolic_dim(c.config.mode);
    options.modules = c.config.modules;
    options.early_accumulation = c.config.early_accumulation;
    options.registry = &wrapped;
    options.chunk_pass = "observed-" + chunk_pass;
    options.concretize_pass = "observed-" + concretize_pass;
    options.require_proofs = false;  // reported below, with the training still run
    options.optimizer = oracles::parse_optimizer(c.config.optimizer);
    std::string error;
    oracles::ChunkedTrainingReport report;
    try {
      report = oracles::run_graph_chunked_vs_eager_chunked(options);
      result.report = report.format();
    } catch (const c10::Error& e) {
      error = e.what_without_backtrace();
    } catch (const std::exception& e) {
      error = e.what();
    }
    // An allowed refusal is the expected outcome of a refusal case: the claims concretize
    // refused on are not violations, nor is the error.
    const bool refused = c.config.refusal_allowed && !error.empty() && !observed->refused.empty();
    if (refused) result.refusal = observed->refused;
    for (const sym::ClaimResult& r : observed->proofs.results)
      if (r.verdict != sym::Verdict::Proved && !refused)
        result.violations.push_back("chunk claim not proved: " + r.format());
    for (const std::string& v : observed->invariants) result.violations.push_back("chunk invariant violated: " + v);
    for (const std::string& v : observed->symbols) result.violations.push_back("symbol left after concretize: " + v);
    if (!error.empty() && !refused) {
      std::string where = !observed->chunked ? "before or in " + chunk_pass
                          : !observed->concretized ? "between " + chunk_pass + " and " + concretize_pass
                                                   : "after " + concretize_pass;
      result.violations.push_back("chunked training failed (" + where + "): " + error);
    } else if (!refused) {
      for (const oracles::StepReport& step : report.driver.steps) {
        for (const std::string& p : step.problems)
          result.violations.push_back("graph chunking differs from eager chunking: step " + std::to_string(step.step) + ": " + p);
        for (const check::TensorComparison& t : step.comparisons)
          if (!t.equal)
            result.violations.push_back("graph chunking differs from eager chunking: step " + std::to_string(step.step) +
                                        " `" + t.name + "`: " + t.problem);
      }
    }
  } catch (const std::exception& e) {
    result.violations.push_back(std::string("chunk case setup failed: ") + e.what());
  }
  return done();
}

}  // namespace passcheck::gen
