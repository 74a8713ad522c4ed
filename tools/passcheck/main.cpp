// The passcheck command line: argument parsing and dispatch to the subcommands.
#include "tools/passcheck/commands.h"
#include "tools/passcheck/option_checks.h"
#include "tools/passcheck/pass_scaling_bench.h"
#include "framework/version.h"

#include <CLI/CLI.hpp>
#include <c10/util/Logging.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>

namespace {

// A CLI11 parse error as a usage error (exit 2) naming the subcommand and what was wrong.
int report_usage_error(const CLI::App& app, int argc, char** argv, const CLI::ParseError& error) {
  std::string first = argc > 1 ? argv[1] : "";
  if (!first.empty() && first[0] != '-') {
    bool known = false;
    std::string names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      known |= sub->get_name() == first;
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::cerr << "passcheck: unknown subcommand '" << first << "' (subcommands: " << names << ")\n";
      return 2;
    }
    std::cerr << "passcheck " << first << ": usage error: " << error.what() << "\nRun 'passcheck " << first
              << " --help' for its options.\n";
    return 2;
  }
  std::cerr << "passcheck: usage error: " << error.what() << "\nRun 'passcheck --help' for the subcommands.\n";
  return 2;
}

// Limits of numeric options (README "Options and limits"): each rejects, with exit 2,
// a value that cannot be meant (0 steps, a NaN learning rate) or would exhaust the
// machine (100,000 threads, a batch of a billion).
constexpr int kMaxThreads = 256;
const CLI::Range kSteps(1, 100000);
const CLI::Range kModelExtent(0, 1 << 16);
const CLI::Range kIntHigh(int64_t(1), int64_t(1) << 40);
const CLI::Range kProverTimeout(1u, 3600u * 1000u);
// A learning rate beyond this overflows a float32 parameter update on the first step.
constexpr double kMaxLearningRate = 1e3;
const CLI::Validator kLearningRate = passcheck::cli::number_in(0, /*low_inclusive=*/false, kMaxLearningRate);
// A seed is a plain decimal integer that fits 64 bits: "1e23" is not clamped to one.
const CLI::Validator kSeed = passcheck::cli::whole_number(0, UINT64_MAX);

}  // namespace

namespace {

// --memory-budget of every command that allocates: sizes with units, 0 for no limit,
// never negative.
void add_memory_budget_option(CLI::App* cmd, int64_t& budget, const std::string& what) {
  cmd->add_option("--memory-budget", budget, what + " (2GiB, 512MiB, 0: none)")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 50))
      ->capture_default_str();
}

void add_model_variant_options(CLI::App* cmd, int64_t& n_layers, std::string& dtype, std::string& attention,
                               std::string& config) {
  cmd->add_option("--config", config,
                  "Named model configuration: debug, or a production shape such as llama3 8b/70b/405b, "
                  "deepseek_v3 16b, qwen3 32b (see `passcheck models`; trace those with --meta)")
      ->capture_default_str();
  cmd->add_option("--layers", n_layers, "Transformer blocks of the language models (0: the model's default)")
      ->check(CLI::Range(int64_t{0}, int64_t{1024}));
  cmd->add_option("--dtype", dtype, "Parameter dtype: float32, or bfloat16 (the zoo models)")
      ->check(CLI::IsMember({"float32", "bfloat16"}))
      ->capture_default_str();
  cmd->add_option("--attention", attention,
                  "deepseek_v3 attention: mla (default) or mha; llama3: flex (FlexAttention, annotated)")
      ->check(CLI::IsMember({"mla", "mha", "flex"}));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace passcheck::cli;
  // LibTorch's own log lines (c10d's socket retries, deprecation notices) are not
  // passcheck's output: every failure they describe reaches the user as passcheck's error.
  if (!std::getenv("PASSCHECK_TORCH_LOG")) FLAGS_caffe2_log_level = std::max(FLAGS_caffe2_log_level, 2);
  CLI::App app{"passcheck: verify graph passes over PyTorch training graphs bit for bit"};
  app.set_version_flag("--version", std::string("passcheck ") + PASSCHECK_VERSION + " (torch " +
                                        PASSCHECK_BUILT_WITH_TORCH + ", CUDA " + PASSCHECK_BUILT_WITH_CUDA + ", NCCL " +
                                        PASSCHECK_BUILT_WITH_NCCL + ")");
  app.require_subcommand(1);

  TraceArgs trace;
  auto* trace_cmd = app.add_subcommand("trace", "Trace a model's training step into a joint graph and print it");
  trace_cmd->add_option("--model", trace.model, "Debug model (see `passcheck models`)")->capture_default_str();
  trace_cmd->add_option("--out", trace.out, "Write the graph text to this file instead of stdout");
  trace_cmd->add_flag("--meta", trace.meta, "Trace on the meta device (no computation)");
  trace_cmd->add_option("--seed", trace.seed, "Initialisation and data seed")->check(kSeed)->capture_default_str();
  trace_cmd->add_option("--batch", trace.batch_size, "Batch size (0: the model's default)")->check(kModelExtent);
  trace_cmd->add_option("--seq", trace.seq_len, "Sequence length (0: the model's default)")->check(kModelExtent);
  trace_cmd->add_option("--symbolic", trace.symbolic, "Make this dimension symbolic: batch or seq")
      ->check(CLI::IsMember({"batch", "seq"}));
  trace_cmd->add_option("--parallel", trace.parallel, "Trace one rank of the model parallelized this way: fsdp, tp, ep or a comma list");
  trace_cmd->add_option("--mesh", trace.mesh, "Device mesh of --parallel, e.g. dp=2,tp=2");
  trace_cmd->add_option("--rank", trace.rank, "The rank whose graph to trace (default 0)")->check(CLI::Range(0, 1 << 20));
  add_model_variant_options(trace_cmd, trace.n_layers, trace.dtype, trace.attention, trace.config);
  trace_cmd->add_flag("--dedup", trace.dedup,
                      "Deduplicate repeated layers: identical blocks become one subgraph called per layer");

  RunArgs run;
  auto* run_cmd = app.add_subcommand("run", "Execute a graph file on generated inputs (or a torch.save archive: --inputs)");
  run_cmd->add_option("file", run.file, "Graph text file")->required();
  run_cmd->add_option("--seed", run.seed, "Input generation seed")->check(kSeed)->capture_default_str();
  run_cmd->add_option("--int-high", run.int_high, "Integer inputs are drawn from [0, N)")->check(kIntHigh)->capture_default_str();
  run_cmd->add_flag("!--no-check-meta", run.check_metadata, "Do not compare outputs with their recorded types");

  run_cmd->add_option("--device", run.device, "Move the graph to this device first: cpu, cuda (runs a trace --meta file)");
  add_memory_budget_option(run_cmd, run.memory_budget, "Most bytes the inputs and the run may take");
  run_cmd->add_option("--inputs", run.inputs_file, "Run on the inputs of this torch.save archive (passcheck_fx.save_inputs)");
  run_cmd->add_option("--save-outputs", run.save_outputs, "Write the outputs to this torch.save-compatible archive");
  run_cmd->add_option("--threads", run.threads, "Intra-op threads (0: LibTorch's default; match Python's for bitwise compares)")
      ->check(CLI::Range(0, kMaxThreads));

  OptArgs opt;
  auto* opt_cmd = app.add_subcommand("opt", "Run a pipeline on a graph file behind the gate and print the resulting graph");
  opt_cmd->add_option("file", opt.file, "Graph text file")->required();
  opt_cmd->add_option("--pipeline", opt.pipeline, "Passes to run, e.g. \"dce,canonicalize,cse\"")->required();
  opt_cmd->add_option("-o,--out", opt.out, "Write the resulting graph here instead of stdout");
  opt_cmd->add_flag("--mutants", opt.mutants, "Also register the known-buggy passes (mutant-...)");

  EquivArgs equiv;
  auto* equiv_cmd = app.add_subcommand("equiv", "Run two graph files on the same inputs and compare every output bit for bit");
  equiv_cmd->add_option("a", equiv.a, "Graph text file A")->required();
  equiv_cmd->add_option("b", equiv.b, "Graph text file B (or --pipeline: B is A after it)");
  equiv_cmd->add_option("--pipeline", equiv.pipeline, "Compare A against A after these passes");
  equiv_cmd->add_option("--seed", equiv.seed, "Input and generator seed")->check(kSeed)->capture_default_str();
  equiv_cmd->add_option("--int-high", equiv.int_high, "Integer inputs are drawn from [0, N)")->check(kIntHigh)->capture_default_str();
  equiv_cmd->add_option("--device", equiv.device, "Move both graphs to this device first: cpu, cuda");
  equiv_cmd->add_flag("--mutants", equiv.mutants, "Also register the known-buggy passes (mutant-...)");
  add_memory_budget_option(equiv_cmd, equiv.memory_budget, "Most bytes the inputs and each run may take");
  equiv_cmd->add_option("--report", equiv.report, "Also write an HTML report of the run here (docs/reports.md)");
  equiv_cmd->add_option("--inputs", equiv.inputs_file, "A's inputs from this torch.save archive (passcheck_fx.save_inputs)");
  equiv_cmd->add_option("--threads", equiv.threads, "Intra-op threads of both runs (0: LibTorch's default)")
      ->check(CLI::Range(0, kMaxThreads));

  CapturableArgs capturable;
  auto* capturable_cmd = app.add_subcommand(
      "capturable", "List the nodes of a graph file a CUDA graph could not capture, and the static inputs");
  capturable_cmd->add_option("file", capturable.file, "Graph text file")->required();
  capturable_cmd->add_option("--device", capturable.device, "Capture device the graph's types are moved to (nothing runs)")
      ->capture_default_str();

  CheckArgs check;
  auto* check_cmd = app.add_subcommand("check", "Train traced and eager side by side and compare bit for bit");
  check_cmd->add_option("--model", check.model, "Debug model (see `passcheck models`)")->capture_default_str();
  check_cmd->add_option("--steps", check.steps, "Optimizer steps")->check(kSteps)->capture_default_str();
  check_cmd->add_option("--optimizer", check.optimizer, "sgd or adam")->capture_default_str();
  check_cmd->add_option("--lr", check.learning_rate, "Learning rate")->check(kLearningRate)->capture_default_str();
  check_cmd->add_flag("--meta", check.meta, "Trace on the meta device, then run on the real one");
  check_cmd->add_flag("--verbose", check.verbose, "Print every compared tensor");
  check_cmd->add_option("--seed", check.seed, "Initialisation and data seed")->check(kSeed)->capture_default_str();
  check_cmd->add_option("--batch", check.batch_size, "Batch size (0: the model's default)")->check(kModelExtent);
  check_cmd->add_option("--seq", check.seq_len, "Sequence length (0: the model's default)")->check(kModelExtent);
  check_cmd->add_option("--device", check.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  check_cmd->add_option("--pipeline", check.pipeline, "Passes to apply to the traced graph, e.g. \"sac-tag{policy=eager},remat\"");
  check_cmd->add_option("--dump-dir", check.dump_dir, "Write the graph before and after every pass here");
  check_cmd->add_option("--eager-ac", check.eager_ac,
                        "Checkpointing of the eager oracle: auto (mirror the pipeline), none, default, eager, full, op")
      ->capture_default_str();
  check_cmd->add_option("--parallel", check.parallel, "Train the model parallelized: fsdp, tp, ep or a comma list (docs/distributed.md)");
  check_cmd->add_option("--mesh", check.mesh, "Device mesh of --parallel, e.g. dp=4 or dp=2,tp=2");
  check_cmd->add_option("--backend", check.backend, "Mesh backend: sim (ranks as threads) or gloo (a process per rank)")
      ->check(CLI::IsMember({"sim", "gloo"}))
      ->capture_default_str();
  add_model_variant_options(check_cmd, check.n_layers, check.dtype, check.attention, check.config);
  check_cmd->add_option("--capacity-factor", check.moe_capacity_factor,
                        "deepseek_v3 per-expert capacity factor (0: dense dispatch; ep takes 1)")
      ->check(CLI::Range(0.0, 64.0));
  check_cmd->add_flag("--compare-single-rank", check.compare_single_rank,
                      "With --parallel: also compare sharded training with single-rank training on the global batch");
  check_cmd->add_option("--timeout-ms", check.timeout_ms, "How long a collective waits for the other ranks")
      ->check(CLI::Range(int64_t{1}, int64_t{3600000}))
      ->capture_default_str();
  check_cmd->add_option("--report", check.report, "Also write an HTML report of the run here (docs/reports.md)");
  add_memory_budget_option(check_cmd, check.memory_budget, "Most bytes the run may take, estimated before it allocates");

  BenchArgs bench;
  auto* bench_cmd = app.add_subcommand("bench", "Measure eager vs traced step time, tracing time and executor overhead");
  bench_cmd->add_option("--model", bench.model, "Debug model")->capture_default_str();
  bench_cmd->add_option("--warmup", bench.warmup, "Untimed runs before measuring")->check(CLI::Range(0, 1000))->capture_default_str();
  bench_cmd->add_option("--repeats", bench.repeats, "Timed runs of each measurement")->check(CLI::Range(1, 100000))->capture_default_str();
  bench_cmd->add_option("--threads", bench.threads, "Intra-op threads (at most " + std::to_string(kMaxThreads) + ")")
      ->check(CLI::Range(1, kMaxThreads))
      ->capture_default_str();
  bench_cmd->add_option("--json", bench.json, "Also write the figures as JSON to this file");
  add_memory_budget_option(bench_cmd, bench.memory_budget, "Most bytes the run may take, estimated before it allocates");
  bench_cmd->add_option("--parallel", bench.parallel, "Bench the model parallelized: fsdp, tp, ep or a comma list");
  bench_cmd->add_option("--mesh", bench.mesh, "Device mesh of --parallel, e.g. dp=4");
  bench_cmd->add_option("--backend", bench.backend, "Mesh backend: sim or gloo")
      ->check(CLI::IsMember({"sim", "gloo"}))
      ->capture_default_str();
  bench_cmd->add_option("--batch", bench.batch_size, "Per-rank batch size (0: the model's default)")->check(kModelExtent);
  bench_cmd->add_option("--seq", bench.seq_len, "Sequence length (0: the model's default)")->check(kModelExtent);
  bench_cmd->add_option("--cudagraph", bench.cudagraph, "Bench the traced step under the CUDA-graph wrapper: replay or cuda")
      ->check(CLI::IsMember({"replay", "cuda"}));
  bench_cmd->add_option("--device", bench.device, "Device of --cudagraph: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  bench_cmd->add_option("--pipeline", bench.pipeline, "Pipeline of the wrapped program for --cudagraph (default: cudagraph{backend=...})");
  add_model_variant_options(bench_cmd, bench.n_layers, bench.dtype, bench.attention, bench.config);
  bench_cmd->add_flag("--ac-memory", bench.ac_memory,
                      "Also measure peak memory per AC policy: traced+remat against eager with the same AC");
  bench_cmd->add_flag("--production", bench.production,
                      "Trace the production configurations on meta and time every pass and the default and "
                      "autoparallel pipelines on them (docs/performance.md, \"Production scale\")");
  bench_cmd->add_option("--configs", bench.production_configs,
                        "With --production: MODEL:CONFIG list, e.g. llama3:8b,llama3:405b (default: all)");
  bench_cmd->add_flag("--trace-only", bench.production_trace_only, "With --production: trace only, run no pass");
  bench_cmd->add_option("--pass-limit", bench.pass_limit_s, "With --production: seconds a pass may take before it is skipped")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bench_cmd->add_option("--rank", bench.rank, "With --production: the rank whose per-rank graph is traced")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
      ->capture_default_str();
  PassScalingArgs scaling;
  bench_cmd->add_flag("--passes", scaling.passes, "Time every pass, the parser, printer and verifier at growing graph sizes; "
                                                "fit the exponent (docs/performance.md)");
  bench_cmd->add_option("--sizes", scaling.sizes, "--passes: graph sizes in nodes, comma-separated")->capture_default_str();
  bench_cmd->add_option("--pass", scaling.pass_names, "--passes: time only these subjects: passes, parse, print, verify, pipeline:default, pipeline:default-ungated (repeat or comma-separate)")
      ->delimiter(',');
  bench_cmd->add_option("--families", scaling.families,
                        "--passes: graph families, comma-separated: synthetic, llama3, llama3-fsdp, llama3-symbolic (default all)");
  bench_cmd->add_option("--max-seconds", scaling.max_seconds, "--passes: skip a measurement predicted to take longer")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
  bench_cmd->add_option("--baseline", scaling.baseline,
                        "--passes: another passcheck binary (the code before a change), measured first with the same "
                        "options; prints both side by side")
      ->check(CLI::ExistingFile);
  bench_cmd->add_option("--joint-layers", scaling.joint_layers,
                        "--passes: also time the default pipeline on llama3 at this many layers (126: the 405B shape; 0: no)")
      ->check(CLI::Range(int64_t{0}, int64_t{100000}))
      ->capture_default_str();

  ChunkArgs chunk;
  auto* chunk_cmd =
      app.add_subcommand("chunk", "Chunk a model's graph (symbolic trace, chunk, Z3, concretize) and train it "
                                  "against the eager-chunked oracle");
  chunk_cmd->add_option("--model", chunk.model, "Debug model")->capture_default_str();
  chunk_cmd->add_option("--mode", chunk.mode, "Chunked dimension")->check(CLI::IsMember({"batch", "seq"}))->capture_default_str();
  chunk_cmd->add_option("--modules", chunk.modules, "Module patterns ('*' is one FQN component)")->capture_default_str();
  chunk_cmd->add_flag("--early-accumulation", chunk.early_accumulation,
                      "Add parameter-gradient partials early (may change numerics; checked against --tolerance-ulp)");
  chunk_cmd->add_option("--between", chunk.between, "Passes to run between chunk and concretize");
  chunk_cmd->add_option("--steps", chunk.steps, "Optimizer steps")->check(kSteps)->capture_default_str();
  chunk_cmd->add_option("--seed", chunk.seed, "Initialisation and data seed")->check(kSeed)->capture_default_str();
  chunk_cmd->add_option("--batch", chunk.batch_size, "Batch size (0: the model's default)")->check(kModelExtent);
  chunk_cmd->add_option("--seq", chunk.seq_len, "Sequence length (0: the model's default)")->check(kModelExtent);
  chunk_cmd->add_option("--timeout-ms", chunk.timeout_ms, "Z3 time limit per claim")->check(kProverTimeout)->capture_default_str();
  chunk_cmd->add_option("--out-graph", chunk.out_graph,
                        "Write the chunked graph before concretization (symbols and claims; `passcheck prove` reads it)");
  chunk_cmd->add_option("--tolerance-ulp", chunk.tolerance_ulp, "Early accumulation: largest ULP distance accepted")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  chunk_cmd->add_option("--report", chunk.report, "Also write an HTML report of the run here (docs/reports.md)");
  add_memory_budget_option(chunk_cmd, chunk.memory_budget, "Most bytes the run may take, estimated before it allocates");

  ProveArgs prove;
  auto* prove_cmd = app.add_subcommand("prove", "Prove every claim (guard) a graph file records with Z3");
  prove_cmd->add_option("file", prove.file, "Graph text file")->required();
  prove_cmd->add_option("--timeout-ms", prove.timeout_ms, "Z3 time limit per claim")->check(kProverTimeout)->capture_default_str();
  prove_cmd->add_flag("--verbose", prove.verbose, "Print every claim's verdict");

  app.add_subcommand("models", "List the debug models and the production configurations (--config)");
  auto* passes_cmd = app.add_subcommand("passes", "List the registered passes with their options and properties");
  bool passes_mutants = false;
  std::string passes_pipeline;
  auto* passes_pipeline_opt = passes_cmd->add_option(
      "--pipeline", passes_pipeline, "Validate this pipeline text and print it expanded, one pass per line (runs nothing)");
  passes_cmd->add_flag("--mutants", passes_mutants, "Also list the known-buggy passes (mutant-...) after the real ones");

  auto run_campaign_command = add_campaign_commands(app);
  auto run_gate_command = add_gate_command(app);
  auto run_python_command = add_python_commands(app);

  // No option takes an empty value: "--pipeline ''" or "--out ''" is a mistake in a
  // script, never a request for the default, so it is a usage error naming the option.
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    for (CLI::Option* option : sub->get_options([](CLI::Option* o) { return o->get_expected_min() > 0; }))
      option->check(passcheck::cli::kNonEmpty);

  // One exit-code contract (README "Exit codes"): --help and --version are 0, every
  // usage error (unknown subcommand or option, a missing or malformed value) is 2.
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return report_usage_error(app, argc, argv, e);
  }
  if (std::optional<int> code = run_campaign_command()) return *code;
  if (std::optional<int> code = run_gate_command()) return *code;
  if (std::optional<int> code = run_python_command()) return *code;
  if (*trace_cmd) return run_trace(trace);
  if (*run_cmd) return run_graph_file(run);
  if (*opt_cmd) return run_opt(opt);
  if (*equiv_cmd) return run_equiv(equiv);
  if (*capturable_cmd) return run_capturable(capturable);
  if (*check_cmd) return run_check(check);
  if (*chunk_cmd) return run_chunk(chunk);
  if (*prove_cmd) return run_prove(prove);
  if (*bench_cmd) return scaling.passes ? run_pass_scaling_bench(scaling, bench.json) : run_bench(bench);
  if (*passes_cmd)
    return run_passes(passes_mutants, passes_pipeline_opt->count() ? std::optional<std::string>(passes_pipeline)
                                                                     : std::nullopt);
  return run_models();
}
