// The passcheck subcommands. Each returns the process exit code: 0 success, 1 a
// verification failed (mismatch), 2 bad input or usage (the message says what and where).
#pragma once

#include "framework/exec/memory.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace passcheck::ir {
class Graph;
}

namespace CLI {
class App;
}

namespace passcheck::models {
struct SubjectOptions;
}

namespace passcheck::cli {

/// Runs a subcommand's body under the exit-code contract: a pass failing the gate
/// (check::PassFailure) is a verification failure, 1; a malformed repro file and every
/// other error are bad input, 2; each is printed as "passcheck <command>: ...".
int guarded(const char* command, const std::function<int()>& body);
/// `message` with every word longer than a screen line cut to its ends and the whole
/// cut to a few screens: what guarded prints.
std::string clip_message(const std::string& message);

struct TraceArgs {
  std::string model = "llama3";
  std::string out;
  bool meta = false;
  uint64_t seed = 0;
  int64_t batch_size = 0;
  int64_t seq_len = 0;
  /// "batch" or "seq": trace with that dimension symbolic (differential symbolization).
  std::string symbolic;
  /// Trace one rank of a parallelized model (on meta): plan, mesh and rank.
  std::string parallel;
  std::string mesh;
  int64_t rank = -1;
  /// Model variant: blocks (0: default), parameter dtype, deepseek_v3 attention.
  int64_t n_layers = 0;
  std::string dtype = "float32";
  std::string attention;
  /// Named model configuration (oracles/models/configs.h): "debug" or e.g. llama3 "405b".
  std::string config = "debug";
  /// Deduplicate repeated layers into shared subgraphs (ir::outline_repeated_layers).
  bool dedup = false;
};

/// Sets the model-variant options every model command shares: --layers, --dtype
/// (float32 or bfloat16), --attention (deepseek_v3: mla or mha) and --config (a named
/// configuration, configs.h).
void apply_model_variant(models::SubjectOptions& options, int64_t n_layers, const std::string& dtype,
                         const std::string& attention, const std::string& config = "");
/// The per-rank form of `trace` (run_trace calls it when --parallel is given).
std::shared_ptr<ir::Graph> trace_rank_graph(const TraceArgs& args);
int run_trace(const TraceArgs& args);

struct RunArgs {
  std::string file;
  uint64_t seed = 0;
  int64_t int_high = 2;
  bool check_metadata = true;
  /// Run on this device ("cpu", "cuda"): the file's types and device arguments are
  /// moved there first (a graph traced with --meta runs this way).
  std::string device;
  /// Memory budget in bytes for the inputs and the run (exec::ExecutorOptions::max_bytes).
  int64_t memory_budget = exec::kDefaultMemoryBudget;
  /// Run on the values of this torch.save archive (python/passcheck_fx save_inputs)
  /// instead of generated inputs; the default generator is seeded with `seed` first.
  std::string inputs_file;
  /// Write the outputs here as a torch.save-compatible archive of a list.
  std::string save_outputs;
  /// Intra-op threads (at::set_num_threads; 0: LibTorch's default). Some kernels split
  /// reductions by thread, so a bitwise comparison with Python needs Python's count.
  int threads = 0;
};
int run_graph_file(const RunArgs& args);

/// `passcheck opt FILE --pipeline P`: the pipeline behind the gate, the result's text
/// out. 0 done, 1 a pass broke the gate, 2 a malformed file or pipeline.
struct OptArgs {
  std::string file;
  std::string pipeline;
  std::string out;  ///< write the result here instead of stdout
  bool mutants = false;  ///< the known-buggy passes may be named too
};
int run_opt(const OptArgs& args);

/// `passcheck equiv A B`: both graphs on the same inputs (matched by name), outputs
/// compared bit for bit. 0 all equal, 1 any difference, 2 the inputs differ or bad input.
struct EquivArgs {
  std::string a;
  std::string b;         ///< or empty with `pipeline`: B is A after it
  std::string pipeline;
  uint64_t seed = 0;
  int64_t int_high = 2;
  std::string device;    ///< move both graphs to this device first (empty: as written)
  bool mutants = false;  ///< --pipeline may name the known-buggy passes
  int64_t memory_budget = exec::kDefaultMemoryBudget;  ///< for the inputs and each run
  /// Write the HTML report of the run here (framework/report/report.h; docs/reports.md).
  std::string report;
  std::string inputs_file;  ///< a torch.save archive of A's inputs instead of generated ones
  int threads = 0;          ///< intra-op threads of both runs (0: LibTorch's default)
};
int run_equiv(const EquivArgs& args);

/// `passcheck capturable FILE`: which nodes a CUDA graph on --device could capture (the
/// cudagraph pass's predicate, passes/cudagraph/capturable.h) and which inputs the wrapper
/// keeps static (the module state); one line per refused node with the guard that refuses
/// it. Nothing runs. 0 done, 2 a malformed file or device.
struct CapturableArgs {
  std::string file;
  std::string device = "cuda";
};
int run_capturable(const CapturableArgs& args);

/// The default --memory-budget of the training commands (check, chunk, bench): they hold
/// two or three models with gradients and optimizer state (qwen3_moe's debug size needs
/// about 7 GiB), so their default is larger than a graph run's; what it stops is a size
/// no machine has (llama3 at --batch 65536: 2.7 TiB).
inline constexpr int64_t kDefaultTrainingMemoryBudget = int64_t{16} << 30;

/// What a training command holds at once, for the memory estimate before it runs.
struct FootprintShape {
  int copies = 2;            ///< models trained side by side (eager and traced)
  int optimizer_states = 1;  ///< state tensors per parameter (SGD momentum 1, Adam 2)
  int64_t ranks = 1;         ///< processes (or simulated ranks) on this machine
  int64_t budget = kDefaultTrainingMemoryBudget;  ///< 0: no limit
};
/// The estimate: parameter bytes, the traced step's peak (framework/check/memory_estimate.h)
/// and the total over copies and ranks. Built and traced on meta: nothing is allocated.
struct TrainingFootprint {
  int64_t parameter_bytes = 0;
  int64_t step_peak_bytes = 0;
  int64_t total_bytes = 0;
};
TrainingFootprint estimate_training_footprint(const std::string& model, const models::SubjectOptions& options,
                                              const FootprintShape& shape);
/// Throws std::invalid_argument naming --memory-budget, the estimate and the budget when
/// the estimate is over it (memory_preflight.cpp).
void check_training_memory(const std::string& model, const models::SubjectOptions& options,
                           const FootprintShape& shape);

struct CheckArgs {
  std::string model = "llama3";
  int steps = 5;
  std::string optimizer = "sgd";
  double learning_rate = 1e-2;
  bool meta = false;
  bool verbose = false;
  uint64_t seed = 0;
  int64_t batch_size = 0;
  int64_t seq_len = 0;
  std::string device = "cpu";
  /// Passes applied to the traced graph before training, e.g. "sac-tag{policy=eager},remat".
  std::string pipeline;
  /// Write the graph before and after every pass into this directory.
  std::string dump_dir;
  /// Eager oracle checkpointing: "auto" (mirror the pipeline's AC), "none", or a policy.
  std::string eager_ac = "auto";
  /// Distributed runs (docs/distributed.md): the parallelisms ("fsdp", "tp", "ep",
  /// comma-separated), the mesh ("dp=2,tp=2"), the backend ("sim" or "gloo") and how
  /// long a collective may wait for the other ranks.
  std::string parallel;
  std::string mesh;
  std::string backend = "sim";
  int64_t timeout_ms = 60000;
  /// Transformer blocks of the language models (0: the model's default), parameter
  /// dtype, deepseek_v3's attention (apply_model_variant).
  int64_t n_layers = 0;
  std::string dtype = "float32";
  std::string attention;
  /// Named model configuration (oracles/models/configs.h): "debug" or e.g. llama3 "405b".
  std::string config = "debug";
  /// deepseek_v3's per-expert capacity factor (oracles/models/deepseek_v3.h); 0 keeps
  /// dense dispatch, except under ep, which needs capacity dispatch and takes 1.
  /// Also train the sharded model against the single-rank model on the global batch
  /// (within oracles::kShardedTolerance, relative).
  bool compare_single_rank = false;
  double moe_capacity_factor = 0;
  /// Write the HTML report of the run here (framework/report/report.h; docs/reports.md).
  std::string report;
  /// Most bytes the run may take, estimated before anything is allocated (0: no limit).
  int64_t memory_budget = kDefaultTrainingMemoryBudget;
};
int run_check(const CheckArgs& args);
/// The distributed form of `check` (run_check calls it when --parallel or --mesh is given).
int run_distributed_check(const CheckArgs& args);

/// `passcheck chunk`: graph chunking (symbolic trace, chunk, Z3, concretize) trained
/// against the eager-chunked oracle.
struct ChunkArgs {
  std::string model = "deepseek_v3";
  std::string mode = "batch";
  std::string modules = "layers.*";
  bool early_accumulation = false;
  /// Passes run between chunk and concretize (e.g. a scheduler under test).
  std::string between;
  int steps = 5;
  uint64_t seed = 0;
  int64_t batch_size = 0;
  int64_t seq_len = 0;
  unsigned timeout_ms = 5000;
  /// Write the chunked graph (before concretization, claims included) here.
  std::string out_graph;
  /// With early accumulation on: the largest ULP distance accepted.
  uint64_t tolerance_ulp = 64;
  /// Write the HTML report of the run here (framework/report/report.h; docs/reports.md).
  std::string report;
  /// Most bytes the run may take, estimated before anything is allocated (0: no limit).
  int64_t memory_budget = kDefaultTrainingMemoryBudget;
};
int run_chunk(const ChunkArgs& args);

/// `passcheck prove`: every claim of a graph file through Z3.
struct ProveArgs {
  std::string file;
  unsigned timeout_ms = 5000;
  bool verbose = false;
};
int run_prove(const ProveArgs& args);

/// `passcheck passes`: the pass catalogue; with `mutants`, then the known-buggy variants
/// of suites/mutants (name, pass corrupted, historical bug, description).
/// With `pipeline`: validates that pipeline text (exit 2 naming the column of an error)
/// and prints each pass with its non-default options, named pipelines expanded.
int run_passes(bool mutants = false, const std::optional<std::string>& pipeline = std::nullopt);

struct BenchArgs {
  std::string model = "llama3";
  int warmup = 2;
  int repeats = 10;
  int threads = 1;
  std::string json;
  /// Distributed bench (docs/performance.md): a parallelized model's per-rank step on a
  /// backend against the same number of single-rank steps of the unsharded model.
  std::string parallel;
  std::string mesh;
  std::string backend = "sim";
  int64_t batch_size = 0;
  int64_t seq_len = 0;
  /// CUDA-graph bench (replay or cuda): the traced step with and without the wrapper.
  std::string cudagraph;
  std::string device = "cpu";
  /// Pipeline of the wrapped program (default: cudagraph{backend=<cudagraph>}).
  std::string pipeline;
  /// Model variant (apply_model_variant).
  int64_t n_layers = 0;
  std::string dtype = "float32";
  std::string attention;
  /// Named model configuration (oracles/models/configs.h): "debug" or e.g. llama3 "405b".
  std::string config = "debug";
  /// Also measure the step's peak memory under each AC policy: traced graph + remat
  /// against eager with the same checkpointing, and the traced graph without AC.
  bool ac_memory = false;
  /// Production shapes on meta (production_bench.cpp): MODEL:CONFIG list (empty: all),
  /// tracing only (no pass), per-pass time limit, the per-rank plan's rank (plan and
  /// mesh: `parallel`, `mesh`; default fsdp over dp=128).
  bool production = false;
  std::string production_configs;
  bool production_trace_only = false;
  double pass_limit_s = 60;
  int64_t rank = 0;
  /// Most bytes the run may take, estimated before anything is allocated (0: no limit).
  int64_t memory_budget = kDefaultTrainingMemoryBudget;
};
int run_bench(const BenchArgs& args);
/// The production-shapes form of `bench` (run_bench calls it when --production is given).
int run_production_bench(const BenchArgs& args);
/// The CUDA-graph form of `bench` (run_bench calls it when --cudagraph is given).
int run_cudagraph_bench(const BenchArgs& args);
/// The distributed form of `bench` (run_bench calls it when --parallel is given).
int run_distributed_bench(const BenchArgs& args);

int run_models();

/// `passcheck fuzz`: generated cases through a pipeline, each in its own process.
struct FuzzArgs {
  std::string pipeline;   ///< explicit pipeline, or
  std::string pass;       ///< one registered pass, run after the passes it needs
  int64_t cases = 0;      ///< stop after this many cases (0: no limit unless --seconds is 0 too: 100)
  double seconds = 0;     ///< stop starting cases after this long (0: no limit)
  uint64_t seed = 1;
  int jobs = 1;
  std::string out = "repros";
  int64_t timeout_ms = 20000;
  bool mutants = false;
  bool test_passes = false;
  /// Stop after this many failures (0: run every case).
  int64_t max_failures = 0;
  /// Draw cases from the debug models instead of the program generator.
  bool models = false;
  /// Draw cases from the cleanup situations generator (graphs built around the traps of
  /// the cleanup passes: generators/cleanup_situations.h).
  bool situations = false;
  bool minimize = true;
  double minimize_seconds = 60;
  /// Differential mode (mutation score): a case counts as a failure only when the same
  /// pipeline with this pass in place of --pass passes it.
  std::string baseline_pass;
  /// Chunk fuzzing (chunk mode, "batch"): cases are chunkable programs run through
  /// gen::run_chunk_case; the pipeline is "<chunk pass>,<concretize pass>".
  std::string chunk;
  /// Write the HTML report of the run here (framework/report/report.h; docs/reports.md).
  std::string report;
  /// A Python pass to fuzz ("MODULE:FUNCTION", workflows/python_bridge/python_pass.h) and the
  /// directory it is imported from.
  std::string python_pass;
  std::string python_path;
  /// What the Python pass is handed: "caller" (what its real caller gives: meta["val"]
  /// FakeTensors, the caller's context) or "bare" (tensor_meta only, no context).
  std::string python_hand_over = "caller";
  /// A declared tolerance for the Python pass, in ULP (0: bit for bit).
  int64_t python_tolerance_ulp = 0;
  /// Generator features added to each case ("all", "none" or a list; gen::feature_names).
  std::string features = "none";
  /// Exit 1 when a pass under test changed no case's graph.
  bool require_change = false;
  /// Case isolation: "persistent" (warm workers run the cases, replaced after a crash or
  /// timeout), "fork-server" (warm workers fork a process per case) or "per-case" (one
  /// child per case from the campaign process).
  std::string isolation = "persistent";
  /// A mixed campaign: the kinds of case to cycle through ("programs,sim-mesh,chunk").
  std::string mix;
  /// In a mix: the pass of the sim-mesh cases, and the chunk or concretize pass of the chunk cases.
  std::string sim_mesh_pass = "fuse-chained-allgathers";
  std::string chunk_pass;
};
int run_fuzz(const FuzzArgs& args);

/// `passcheck repro FILE`: 0 passes, 1 still fails, 2 malformed file or bad options.
struct ReproArgs {
  std::string file;
  std::string pipeline;  ///< replay with this pipeline instead of the file's
  /// Replay time limit (0: none; -1: the one a timeout repro records, else none).
  int64_t timeout_ms = -1;
};
int run_repro(const ReproArgs& args);

/// `passcheck minimize FILE`: shrinks the repro's graph further.
struct MinimizeArgs {
  std::string file;
  std::string out;  ///< "" rewrites FILE
  double seconds = 120;
  int64_t timeout_ms = 20000;
  bool force = false;  ///< replace an existing --out
};
int run_minimize(const MinimizeArgs& args);

/// `passcheck capture`: a repro file from a traced debug model (checking in regressions).
struct CaptureArgs {
  std::string model = "llama3";
  std::string pipeline;
  std::string out;  ///< "" : <model>-<pipeline>.repro in the current directory, never replaced
  uint64_t seed = 0;
  bool mutants = false;
  bool test_passes = false;
  int64_t timeout_ms = 20000;  ///< the replay runs in a child process killed after this long
  bool force = false;          ///< replace an existing --out
};
int run_capture(const CaptureArgs& args);

/// Adds the fuzz, repro, minimize and capture subcommands with their options to `app`.
/// After parsing, the returned function runs the one the command line named and returns
/// its exit code (std::nullopt when it named another subcommand).
std::function<std::optional<int>()> add_campaign_commands(CLI::App& app);

/// Adds `passcheck gate` (workflows/gate/gate.h: the pass families touched since a git
/// ref, checked with their text cases, the properties on every traced subject, their
/// mutants and a fuzz budget) to `app`; the returned function runs it when the command
/// line named it (std::nullopt otherwise).
std::function<std::optional<int>()> add_gate_command(CLI::App& app);

/// `passcheck export-python FILE`: the graph as a Python file (workflows/python_bridge/python_writer.h).
struct ExportPythonArgs {
  std::string file;          ///< a graph file, or
  int64_t generated = -1;    ///< the seed of a generated fuzz case (gen::generate_case)
  std::string graph_out;     ///< also write the graph's text here ("" : none)
  std::string out;           ///< "" : standard output
  std::string save_inputs;   ///< torch.save archive of the generated inputs ("" : none)
  std::string save_outputs;  ///< torch.save archive of the executor's outputs ("" : none)
  uint64_t seed = 0;
  int64_t int_high = 2;
};
int run_export_python(const ExportPythonArgs& args);
/// Adds export-python (tools/passcheck/python_commands.cpp); same contract as add_campaign_commands.
std::function<std::optional<int>()> add_python_commands(CLI::App& app);

}  // namespace passcheck::cli
