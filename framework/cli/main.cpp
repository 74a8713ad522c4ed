// The passcheck command line: argument parsing and dispatch to the subcommands.
#include "framework/cli/commands.h"
#include "framework/version.h"

#include <CLI/CLI.hpp>

#include <iostream>

int main(int argc, char** argv) {
  using namespace passcheck::cli;
  CLI::App app{"passcheck: verify graph passes over PyTorch training graphs bit for bit"};
  app.set_version_flag("--version", std::string("passcheck ") + PASSCHECK_VERSION);
  app.require_subcommand(1);

  TraceArgs trace;
  auto* trace_cmd = app.add_subcommand("trace", "Trace a model's training step into a joint graph and print it");
  trace_cmd->add_option("--model", trace.model, "Debug model (see `passcheck models`)")->capture_default_str();
  trace_cmd->add_option("--out", trace.out, "Write the graph text to this file instead of stdout");
  trace_cmd->add_flag("--meta", trace.meta, "Trace on the meta device (no computation)");
  trace_cmd->add_option("--seed", trace.seed, "Initialisation and data seed")->capture_default_str();
  trace_cmd->add_option("--batch", trace.batch_size, "Batch size (0: the model's default)");
  trace_cmd->add_option("--seq", trace.seq_len, "Sequence length (0: the model's default)");
  trace_cmd->add_option("--symbolic", trace.symbolic, "Make this dimension symbolic: batch or seq")
      ->check(CLI::IsMember({"batch", "seq"}));

  RunArgs run;
  auto* run_cmd = app.add_subcommand("run", "Execute a graph file on generated inputs");
  run_cmd->add_option("file", run.file, "Graph text file")->required();
  run_cmd->add_option("--seed", run.seed, "Input generation seed")->capture_default_str();
  run_cmd->add_option("--int-high", run.int_high, "Integer inputs are drawn from [0, N)")->capture_default_str();
  run_cmd->add_flag("!--no-check-meta", run.check_metadata, "Do not compare outputs with their recorded types");

  run_cmd->add_option("--device", run.device, "Move the graph to this device first: cpu, cuda (runs a trace --meta file)");
  run_cmd->add_option("--memory-budget", run.memory_budget, "Most bytes the inputs and the run may take (2GiB, 512MiB, 0: none)")
      ->transform(CLI::AsSizeValue(false))->capture_default_str();

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
  equiv_cmd->add_option("--seed", equiv.seed, "Input and generator seed")->capture_default_str();
  equiv_cmd->add_option("--int-high", equiv.int_high, "Integer inputs are drawn from [0, N)")->capture_default_str();
  equiv_cmd->add_option("--device", equiv.device, "Move both graphs to this device first: cpu, cuda");
  equiv_cmd->add_flag("--mutants", equiv.mutants, "Also register the known-buggy passes (mutant-...)");
  equiv_cmd->add_option("--memory-budget", equiv.memory_budget, "Most bytes the inputs and each run may take (2GiB, 512MiB, 0: none)")
      ->transform(CLI::AsSizeValue(false))->capture_default_str();

  CheckArgs check;
  auto* check_cmd = app.add_subcommand("check", "Train traced and eager side by side and compare bit for bit");
  check_cmd->add_option("--model", check.model, "Debug model (see `passcheck models`)")->capture_default_str();
  check_cmd->add_option("--steps", check.steps, "Optimizer steps")->capture_default_str();
  check_cmd->add_option("--optimizer", check.optimizer, "sgd or adam")->capture_default_str();
  check_cmd->add_option("--lr", check.learning_rate, "Learning rate")->capture_default_str();
  check_cmd->add_flag("--meta", check.meta, "Trace on the meta device, then run on the real one");
  check_cmd->add_flag("--verbose", check.verbose, "Print every compared tensor");
  check_cmd->add_option("--seed", check.seed, "Initialisation and data seed")->capture_default_str();
  check_cmd->add_option("--batch", check.batch_size, "Batch size (0: the model's default)");
  check_cmd->add_option("--seq", check.seq_len, "Sequence length (0: the model's default)");
  check_cmd->add_option("--device", check.device, "cpu or cuda")->capture_default_str();
  check_cmd->add_option("--pipeline", check.pipeline, "Passes to apply to the traced graph, e.g. \"sac-tag{policy=eager},remat\"");
  check_cmd->add_option("--dump-dir", check.dump_dir, "Write the graph before and after every pass here");
  check_cmd->add_option("--eager-ac", check.eager_ac,
                        "Checkpointing of the eager oracle: auto (mirror the pipeline), none, default, eager, full, op")
      ->capture_default_str();

  BenchArgs bench;
  auto* bench_cmd = app.add_subcommand("bench", "Measure eager vs traced step time, tracing time and executor overhead");
  bench_cmd->add_option("--model", bench.model, "Debug model")->capture_default_str();
  bench_cmd->add_option("--warmup", bench.warmup, "Untimed runs before measuring")->capture_default_str();
  bench_cmd->add_option("--repeats", bench.repeats, "Timed runs of each measurement")->capture_default_str();
  bench_cmd->add_option("--threads", bench.threads, "Intra-op threads")->capture_default_str();
  bench_cmd->add_option("--json", bench.json, "Also write the figures as JSON to this file");

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
  chunk_cmd->add_option("--steps", chunk.steps, "Optimizer steps")->capture_default_str();
  chunk_cmd->add_option("--seed", chunk.seed, "Initialisation and data seed")->capture_default_str();
  chunk_cmd->add_option("--batch", chunk.batch_size, "Batch size (0: the model's default)");
  chunk_cmd->add_option("--seq", chunk.seq_len, "Sequence length (0: the model's default)");
  chunk_cmd->add_option("--timeout-ms", chunk.timeout_ms, "Z3 time limit per claim")->capture_default_str();
  chunk_cmd->add_option("--out-graph", chunk.out_graph,
                        "Write the chunked graph before concretization (symbols and claims; `passcheck prove` reads it)");
  chunk_cmd->add_option("--tolerance-ulp", chunk.tolerance_ulp, "Early accumulation: largest ULP distance accepted")
      ->capture_default_str();

  ProveArgs prove;
  auto* prove_cmd = app.add_subcommand("prove", "Prove every claim (guard) a graph file records with Z3");
  prove_cmd->add_option("file", prove.file, "Graph text file")->required();
  prove_cmd->add_option("--timeout-ms", prove.timeout_ms, "Z3 time limit per claim")->capture_default_str();
  prove_cmd->add_flag("--verbose", prove.verbose, "Print every claim's verdict");

  app.add_subcommand("models", "List the debug models");
  auto* passes_cmd = app.add_subcommand("passes", "List the registered passes with their options and properties");

  FuzzArgs fuzz;
  auto* fuzz_cmd = app.add_subcommand("fuzz", "Run generated cases through a pipeline, one process each; write repro files");
  fuzz_cmd->add_option("--pipeline", fuzz.pipeline, "Pipeline to check, e.g. \"dce,canonicalize,cse,dce\"");
  fuzz_cmd->add_option("--pass", fuzz.pass, "One pass, run after the passes it needs (remat: ac-regions,sac-tag first)");
  fuzz_cmd->add_option("--cases", fuzz.cases, "Number of cases (default 100 when --seconds is not given)");
  fuzz_cmd->add_option("--seconds", fuzz.seconds, "Stop starting cases after this many seconds");
  fuzz_cmd->add_option("--seed", fuzz.seed, "Campaign seed; case i uses a seed derived from it and i")->capture_default_str();
  fuzz_cmd->add_option("--jobs", fuzz.jobs, "Cases run in parallel (one process each)")->capture_default_str();
  fuzz_cmd->add_option("--out", fuzz.out, "Directory for repro files")->capture_default_str();
  fuzz_cmd->add_option("--timeout-ms", fuzz.timeout_ms, "Kill a case after this long (reported as a timeout)")
      ->capture_default_str();
  fuzz_cmd->add_flag("--mutants", fuzz.mutants, "Also register the known-buggy AC mutants (mutant-remat-...)");
  fuzz_cmd->add_flag("--test-passes", fuzz.test_passes, "Also register the test-only passes crash-on-odd and hang");
  fuzz_cmd->add_option("--max-failures", fuzz.max_failures, "Stop after this many failures (0: never)")
      ->capture_default_str();
  fuzz_cmd->add_option("--baseline-pass", fuzz.baseline_pass,
                       "Count a failure only when this pass, in place of --pass, passes the case (e.g. remat for a mutant)");
  fuzz_cmd->add_flag("--models", fuzz.models, "Draw cases from the debug models instead of the program generator");
  fuzz_cmd->add_flag("--situations", fuzz.situations,
                     "Draw cases from the cleanup situations generator (the traps of the cleanup passes)");
  fuzz_cmd->add_option("--chunk", fuzz.chunk,
                       "Fuzz the chunking passes in this mode (batch): chunkable programs, graph chunking against eager "
                       "chunking; --pass/--pipeline name the chunk and concretize passes (default chunk,concretize)");
  fuzz_cmd->add_flag("!--no-minimize", fuzz.minimize, "Keep failing repros at their original size");
  fuzz_cmd->add_option("--minimize-seconds", fuzz.minimize_seconds, "Time limit of each minimization")
      ->capture_default_str();

  ReproArgs repro;
  auto* repro_cmd = app.add_subcommand("repro", "Replay a repro file: exit 1 while the failure is present, 0 once fixed");
  repro_cmd->add_option("file", repro.file, "Repro file")->required();
  repro_cmd->add_option("--pipeline", repro.pipeline, "Replay with this pipeline instead of the file's");
  repro_cmd->add_option("--timeout-ms", repro.timeout_ms, "Kill the replay after this long (0: no limit)")
      ->capture_default_str();

  MinimizeArgs minimize;
  auto* minimize_cmd = app.add_subcommand("minimize", "Shrink a repro file's graph while the failure persists");
  minimize_cmd->add_option("file", minimize.file, "Repro file")->required();
  minimize_cmd->add_option("--out", minimize.out, "Write here instead of rewriting FILE");
  minimize_cmd->add_option("--seconds", minimize.seconds, "Time limit")->capture_default_str();
  minimize_cmd->add_option("--timeout-ms", minimize.timeout_ms, "Per-candidate limit for crash repros")
      ->capture_default_str();

  CaptureArgs capture;
  auto* capture_cmd = app.add_subcommand("capture", "Write a repro file for a debug model and a pipeline (regressions)");
  capture_cmd->add_option("--model", capture.model, "Debug model")->capture_default_str();
  capture_cmd->add_option("--pipeline", capture.pipeline, "Pipeline")->required();
  capture_cmd->add_option("--out", capture.out, "Repro file to write")->required();
  capture_cmd->add_option("--seed", capture.seed, "Model and input seed")->capture_default_str();
  capture_cmd->add_flag("--mutants", capture.mutants, "Also register the AC mutants");
  capture_cmd->add_flag("--test-passes", capture.test_passes, "Also register the test-only passes");

  CLI11_PARSE(app, argc, argv);
  if (*fuzz_cmd) return run_fuzz(fuzz);
  if (*repro_cmd) return run_repro(repro);
  if (*minimize_cmd) return run_minimize(minimize);
  if (*capture_cmd) return run_capture(capture);
  if (*trace_cmd) return run_trace(trace);
  if (*run_cmd) return run_graph_file(run);
  if (*opt_cmd) return run_opt(opt);
  if (*equiv_cmd) return run_equiv(equiv);
  if (*check_cmd) return run_check(check);
  if (*chunk_cmd) return run_chunk(chunk);
  if (*prove_cmd) return run_prove(prove);
  if (*bench_cmd) return run_bench(bench);
  if (*passes_cmd) return run_passes();
  return run_models();
}
