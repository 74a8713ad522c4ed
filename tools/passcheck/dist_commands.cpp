// passcheck check / trace on a device mesh (docs/distributed.md): every rank of a
// parallelized model traced on meta, its graph given the rank's placements, optionally
// rewritten by a pipeline, and trained against eager on the same rank for N steps, bit
// for bit. Backends: sim (ranks as threads of this process, the deterministic oracle)
// and gloo (one process per rank on c10d; `passcheck check` launches them itself, or
// runs as one rank when RANK is set, as under torchrun).
#include "framework/check/compare.h"
#include "framework/check/pipeline.h"
#include "tools/passcheck/check_common.h"
#include "tools/passcheck/commands.h"
#include "framework/dist/communicator.h"
#include "framework/dist/launcher.h"
#include "framework/dist/process_group.h"
#include "framework/dist/sim.h"
#include "framework/io/files.h"
#include "framework/ir/graph.h"
#include "oracles/distributed_driver.h"
#include "oracles/models/configs.h"
#include "oracles/models/subject.h"
#include "oracles/placements.h"
#include "oracles/training_driver.h"
#include "workflows/distributed/rank_check.h"

#include <ATen/Parallel.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <memory>
#include <sstream>

namespace passcheck::cli {

namespace {

using distributed::RankBench;
using distributed::RankCheck;

models::SubjectOptions subject_options(const CheckArgs& args) {
  models::SubjectOptions options;
  options.seed = args.seed;
  options.batch_size = args.batch_size;
  options.seq_len = args.seq_len;
  apply_model_variant(options, args.n_layers, args.dtype, args.attention, args.config);
  models::check_buildable_on_device(args.model, options);
  options.parallel.plan = args.parallel;
  options.parallel.mesh = args.mesh;
  options.moe_capacity_factor = args.moe_capacity_factor;
  // Expert parallelism exchanges tokens at a fixed capacity: the default factor 1.
  if (options.moe_capacity_factor == 0 && args.parallel.find("ep") != std::string::npos) options.moe_capacity_factor = 1;
  return options;
}

// Builds rank `rank`'s subject on meta, which validates the plan against the mesh
// without computing, and returns its placements.
std::map<std::string, std::vector<std::string>> meta_placements(const std::string& model,
                                                               models::SubjectOptions options) {
  options.device = c10::Device(c10::DeviceType::Meta);
  return models::make_subject(model, options)->placements();
}

// The rank check of `passcheck check --parallel` (workflows/distributed/rank_check.h).
RankCheck check_rank(const CheckArgs& args, int64_t rank) {
  distributed::RankCheckOptions options;
  options.driver.model = args.model;
  options.driver.steps = args.steps;
  options.driver.optimizer = oracles::parse_optimizer(args.optimizer);
  options.driver.learning_rate = args.learning_rate;
  options.driver.subject = subject_options(args);
  std::optional<check::Pipeline> pipeline;
  if (!args.pipeline.empty()) pipeline = check::Pipeline::parse(args.pipeline);
  options.driver.eager_checkpoint = eager_checkpoint_for(args.eager_ac, pipeline, check::PassRegistry::global());
  options.pipeline = args.pipeline;
  options.dump_dir = args.dump_dir;
  options.compare_single_rank = args.compare_single_rank;
  return distributed::check_rank(options, rank);
}

std::string coordinates_text(const dist::DeviceMesh& mesh, int64_t rank) {
  std::string out;
  std::vector<int64_t> c = mesh.coordinates(rank);
  for (size_t i = 0; i < c.size(); ++i) out += (i ? "," : "") + mesh.dims()[i].first + std::to_string(c[i]);
  return out;
}

std::string table_header() {
  char line[256];
  std::snprintf(line, sizeof line, "%-5s %-12s %6s %10s %14s %10s %10s %5s %9s %6s  %s\n", "rank", "coords", "nodes",
                "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "wait", "compared", "differ", "verdict");
  return line;
}

std::string table_row(const dist::DeviceMesh& mesh, const RankCheck& r) {
  size_t compared = 0, differ = 0;
  for (const auto& step : r.report.steps)
    for (const auto& c : step.comparisons) {
      ++compared;
      differ += !c.equal;
    }
  const char* verdict = !r.error.empty() ? "FAILED" : (r.report.equal() ? "BITWISE EQUAL" : "MISMATCH");
  char line[512];
  std::snprintf(line, sizeof line, "%-5lld %-12s %6zu %10lld %14lld %10lld %10lld %5lld %9zu %6zu  %s\n",
                static_cast<long long>(r.rank), coordinates_text(mesh, r.rank).c_str(), r.traced_nodes,
                static_cast<long long>(r.collectives.all_gather), static_cast<long long>(r.collectives.reduce_scatter),
                static_cast<long long>(r.collectives.all_reduce), static_cast<long long>(r.collectives.all_to_all),
                static_cast<long long>(r.collectives.wait), compared, differ, verdict);
  return line;
}

// Checks the plan and mesh before any rank starts, so bad input is one clear error
// (exit 2) rather than the same error from every rank.
dist::DeviceMesh validate(const CheckArgs& args) {
  if (args.parallel.empty()) throw std::invalid_argument("--mesh needs --parallel (fsdp, tp, ep, or a combination)");
  if (args.mesh.empty()) throw std::invalid_argument("--parallel needs --mesh (e.g. --mesh dp=4)");
  if (args.device != "cpu") throw std::invalid_argument("distributed check runs on --device cpu (gloo, sim); nccl "
                                                        "runs need the GPU build");
  if (args.meta) throw std::invalid_argument("--meta is implied by --parallel: every rank traces on meta");
  dist::DeviceMesh mesh = dist::DeviceMesh::parse(args.mesh);
  dist::MetaOnlyCommunicator communicator(0, mesh.world_size());
  dist::RankScope scope(dist::RankContext{std::make_shared<const dist::DeviceMesh>(mesh), 0, &communicator});
  meta_placements(args.model, subject_options(args));
  if (!args.pipeline.empty()) check::Pipeline::parse(args.pipeline);
  // Every rank on this machine holds at most the unsharded model: estimated once, by the
  // launching process (a gloo rank inherits the verdict).
  if (!std::getenv("RANK")) {
    models::SubjectOptions whole = subject_options(args);
    whole.parallel = {};
    check_training_memory(args.model, whole,
                          FootprintShape{args.compare_single_rank ? 3 : 2,
                                         oracles::parse_optimizer(args.optimizer) == oracles::OptimizerKind::Adam ? 2 : 1,
                                         mesh.world_size(), args.memory_budget});
  }
  if (!args.dump_dir.empty()) io::ensure_directory(args.dump_dir, "--dump-dir");
  return mesh;
}

// With a pipeline: what it left on each rank (collectives after fusion, the saved bytes
// of a partition).
std::string after_pipeline_rows(const std::vector<RankCheck>& ranks) {
  std::string out = "after the pipeline:\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-5s %6s %10s %14s %5s %12s\n", "rank", "nodes", "all_gather", "reduce_scatter",
                "wait", "saved_bytes");
  out += line;
  for (const RankCheck& r : ranks) {
    if (!r.nodes_after) continue;
    std::snprintf(line, sizeof line, "%-5lld %6zu %10lld %14lld %5lld %12lld\n", static_cast<long long>(r.rank),
                  *r.nodes_after, static_cast<long long>(r.collectives_after.all_gather),
                  static_cast<long long>(r.collectives_after.reduce_scatter),
                  static_cast<long long>(r.collectives_after.wait), static_cast<long long>(r.saved_bytes));
    out += line;
  }
  return out;
}

int report_ranks(const CheckArgs& args, const dist::DeviceMesh& mesh, const std::vector<RankCheck>& ranks,
                 const std::string& backend) {
  std::cout << "passcheck check: " << args.model << ", parallel " << args.parallel << " on mesh " << mesh.str()
            << " (" << mesh.world_size() << " ranks, backend " << backend << "), " << args.steps << " steps, optimizer "
            << args.optimizer << ", every rank traced on meta\n";
  if (!args.pipeline.empty()) std::cout << "pipeline: " << args.pipeline << "\n";
  std::cout << "per rank: traced graph == eager on the same rank, loss, every local gradient shard, parameter shard "
               "and buffer\n";
  std::cout << table_header();
  bool all_equal = true;
  for (const RankCheck& r : ranks) {
    std::cout << table_row(mesh, r);
    all_equal = all_equal && r.equal();
  }
  if (!args.pipeline.empty()) std::cout << after_pipeline_rows(ranks);
  for (const RankCheck& r : ranks) {
    if (!r.error.empty()) std::cout << "\nrank " << r.rank << " failed: " << r.error << "\n";
    else if (args.verbose || !r.report.equal()) std::cout << "\nrank " << r.rank << ":\n" << r.report.format();
    if (r.single_rank && !r.single_rank->parameters.empty())
      std::cout << "\nsharded training (rank " << r.rank << "'s gathered parameters) vs single-rank training on the "
                << "global batch, " << args.steps << " steps:\n" << r.single_rank->format();
  }
  std::cout << "verdict: " << (all_equal ? "BITWISE EQUAL on every rank" : "MISMATCH or FAILURE on some rank") << "\n";
  return all_equal ? 0 : 1;
}

int run_on_sim(const CheckArgs& args, const dist::DeviceMesh& mesh) {
  std::vector<RankCheck> ranks(static_cast<size_t>(mesh.world_size()));
  dist::SimOptions options;
  options.timeout = std::chrono::milliseconds(args.timeout_ms);
  // One intra-op thread per rank: the ranks are already the parallelism.
  int threads = at::get_num_threads();
  at::set_num_threads(1);
  dist::SimWorld world(mesh, options);
  std::vector<dist::RankOutcome> outcomes = world.run([&](int64_t rank) { ranks[rank] = check_rank(args, rank); });
  at::set_num_threads(threads);
  for (const dist::RankOutcome& o : outcomes) {
    ranks[o.rank].rank = o.rank;
    if (!o.ok) ranks[o.rank].error = o.error;
  }
  return report_ranks(args, mesh, ranks, "sim");
}

// This process's command line, to start the same command once per rank.
std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  std::string arg;
  while (std::getline(in, arg, '\0')) argv.push_back(arg);
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (argv.empty() || n <= 0) throw std::runtime_error("cannot read this process's command line to start the ranks");
  argv[0] = std::string(exe, static_cast<size_t>(n));
  return argv;
}

// One gloo rank of a run started by `passcheck check --backend gloo` or by torchrun: the
// rendezvous comes from RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT.
int run_as_gloo_rank(const CheckArgs& args, const dist::DeviceMesh& mesh) {
  at::set_num_threads(1);
  std::unique_ptr<dist::ProcessGroupCommunicator> communicator = dist::init_from_environment("gloo");
  dist::check_mesh_world_size(mesh, communicator->world_size());
  RankCheck result;
  result.rank = communicator->rank();
  try {
    dist::RankScope scope(
        dist::RankContext{std::make_shared<const dist::DeviceMesh>(mesh), communicator->rank(), communicator.get()});
    result = check_rank(args, communicator->rank());
    communicator->wait_all();
    communicator->mark_stopped("finished its run");
  } catch (const std::exception& e) {
    result.error = e.what();
    communicator->mark_stopped("failed (" + result.error + ")");
  }
  std::cout << table_header() << table_row(mesh, result);
  if (!args.pipeline.empty()) std::cout << after_pipeline_rows({result});
  if (!result.error.empty()) std::cout << "rank " << result.rank << " failed: " << result.error << "\n";
  else if (args.verbose || !result.report.equal()) std::cout << result.report.format();
  if (result.single_rank && !result.single_rank->parameters.empty())
    std::cout << "sharded training (gathered parameters) vs single-rank training on the global batch, " << args.steps
              << " steps:\n" << result.single_rank->format();
  std::cout << std::flush;
  // The c10d groups are left to the process exit: after a failure their destructors
  // would wait for collectives that can no longer complete.
  std::_Exit(result.equal() ? 0 : 1);
}

// Starts this same command once per rank with torchrun's variables and reports how
// each rank ended.
int launch_gloo_ranks(const CheckArgs& args, const dist::DeviceMesh& mesh) {
  dist::LaunchOptions options;
  options.timeout = std::chrono::milliseconds(args.timeout_ms);
  options.echo_output = false;
  std::vector<dist::LaunchOutcome> outcomes = dist::launch_local(own_command_line(), mesh.world_size(), options);
  std::cout << "passcheck check: " << args.model << ", parallel " << args.parallel << " on mesh " << mesh.str() << " ("
            << mesh.world_size() << " gloo processes on this machine), " << args.steps << " steps, optimizer "
            << args.optimizer << ", every rank traced on meta\n";
  if (!args.pipeline.empty()) std::cout << "pipeline: " << args.pipeline << "\n";
  bool header_printed = false;
  int code = 0;
  for (const dist::LaunchOutcome& o : outcomes) {
    std::istringstream lines(o.output);
    std::string line;
    bool first = true;
    while (std::getline(lines, line)) {
      // Every rank prints the table header first; print it once.
      if (first && line.rfind("rank  coords", 0) == 0) {
        if (!header_printed) std::cout << line << "\n";
        header_printed = true;
      } else {
        std::cout << line << "\n";
      }
      first = false;
    }
    if (!o.ok) std::cout << "rank " << o.rank << " " << o.how_ended << "\n";
    if (o.exit_code == 2 && code == 0) code = 2;
    else if (!o.ok) code = 1;
  }
  std::cout << "verdict: " << (code == 0 ? "BITWISE EQUAL on every rank" : "MISMATCH or FAILURE on some rank") << "\n";
  return code;
}

// ---- bench ------------------------------------------------------------------------------

models::SubjectOptions bench_subject_options(const BenchArgs& args, bool parallel) {
  models::SubjectOptions options;
  options.batch_size = args.batch_size;
  options.seq_len = args.seq_len;
  if (args.parallel.find("ep") != std::string::npos) options.moe_capacity_factor = 1;
  if (parallel) {
    options.parallel.plan = args.parallel;
    options.parallel.mesh = args.mesh;
  }
  return options;
}

// Meta-trace time and traced step time (medians) of one rank, or of the unsharded model
// when `parallel` is false (workflows/distributed/rank_check.h).
RankBench bench_steps(const BenchArgs& args, bool parallel) {
  return distributed::bench_rank_steps(args.model, bench_subject_options(args, parallel), args.warmup, args.repeats);
}

void print_bench(const BenchArgs& args, const dist::DeviceMesh& mesh, const std::vector<RankBench>& ranks,
                 const RankBench& single) {
  double slowest = 0, trace = 0;
  for (const RankBench& r : ranks) {
    slowest = std::max(slowest, r.step_ms);
    trace = std::max(trace, r.trace_meta_ms);
  }
  const double n = static_cast<double>(mesh.world_size());
  std::printf("passcheck bench --model %s --parallel %s --mesh %s --backend %s  (1 intra-op thread per rank, %d "
              "warm-up, %d timed steps, medians)\n",
              args.model.c_str(), args.parallel.c_str(), mesh.str().c_str(), args.backend.c_str(), args.warmup,
              args.repeats);
  for (size_t r = 0; r < ranks.size(); ++r)
    std::printf("  rank %-3zu traced step %10.2f ms   meta trace %8.2f ms   %zu nodes\n", r, ranks[r].step_ms,
                ranks[r].trace_meta_ms, ranks[r].nodes);
  std::printf("  %-52s %10.2f ms\n", "distributed step (slowest rank)", slowest);
  std::printf("  %-52s %10.2f ms\n", "single-rank step of the unsharded model", single.step_ms);
  std::printf("  %-52s %10.2f ms   (distributed step / this = %.3f)\n",
              (std::to_string(mesh.world_size()) + " single-rank steps, one after another").c_str(), n * single.step_ms,
              slowest / (n * single.step_ms));
  std::printf("  %-52s %10.2f ms   (%zu nodes; unsharded %.2f ms)\n", "meta trace of a rank's graph (slowest)", trace,
              ranks.empty() ? size_t{0} : ranks[0].nodes, single.trace_meta_ms);
}

}  // namespace

int run_distributed_bench(const BenchArgs& args) {
  return guarded("bench", [&] {
    if (args.parallel.empty() || args.mesh.empty())
      throw std::invalid_argument("a distributed bench needs both --parallel and --mesh");
    if (args.repeats < 1 || args.warmup < 0) throw std::invalid_argument("--repeats must be >= 1 and --warmup >= 0");
    dist::DeviceMesh mesh = dist::DeviceMesh::parse(args.mesh);
    if (!std::getenv("RANK"))
      check_training_memory(args.model, bench_subject_options(args, false),
                            FootprintShape{1, 1, mesh.world_size() + 1, args.memory_budget});
    at::set_num_threads(1);
    std::vector<RankBench> ranks(static_cast<size_t>(mesh.world_size()));
    if (args.backend == "gloo" && std::getenv("RANK")) {
      std::unique_ptr<dist::ProcessGroupCommunicator> communicator = dist::init_from_environment("gloo");
      dist::check_mesh_world_size(mesh, communicator->world_size());
      RankBench b;
      {
        dist::RankScope scope(dist::RankContext{std::make_shared<const dist::DeviceMesh>(mesh), communicator->rank(),
                                                communicator.get()});
        b = bench_steps(args, true);
      }
      communicator->mark_stopped("finished its run");
      std::printf("bench-rank %lld %.6f %.6f %zu\n", static_cast<long long>(communicator->rank()), b.step_ms,
                  b.trace_meta_ms, b.nodes);
      std::fflush(stdout);
      std::_Exit(0);
    }
    if (args.backend == "gloo") {
      dist::LaunchOptions options;
      options.echo_output = false;
      for (const dist::LaunchOutcome& o : dist::launch_local(own_command_line(), mesh.world_size(), options)) {
        size_t at = o.output.find("bench-rank ");
        long long rank = -1;
        RankBench b;
        if (!o.ok || at == std::string::npos ||
            std::sscanf(o.output.c_str() + at, "bench-rank %lld %lf %lf %zu", &rank, &b.step_ms, &b.trace_meta_ms,
                        &b.nodes) != 4 || rank != o.rank)
          throw std::runtime_error("rank " + std::to_string(o.rank) + " " + o.how_ended + ": " + o.output);
        ranks[o.rank] = b;
      }
    } else {
      dist::SimWorld world(mesh);
      for (const dist::RankOutcome& o : world.run([&](int64_t rank) { ranks[rank] = bench_steps(args, true); }))
        if (!o.ok) throw dist::CollectiveError("rank " + std::to_string(o.rank) + ": " + o.error);
    }
    RankBench single = bench_steps(args, false);
    print_bench(args, mesh, ranks, single);
    return 0;
  });
}

int run_distributed_check(const CheckArgs& args) {
  dist::DeviceMesh mesh = dist::DeviceMesh::one_dim("dp", 1);
  int code = guarded("check", [&] {
    mesh = validate(args);
    return 0;
  });
  if (code != 0) return code;
  return guarded("check", [&] {
    if (args.backend == "sim") return run_on_sim(args, mesh);
    if (args.backend == "gloo") return std::getenv("RANK") ? run_as_gloo_rank(args, mesh) : launch_gloo_ranks(args, mesh);
    throw std::invalid_argument("unknown --backend '" + args.backend + "' (valid: sim, gloo)");
  });
}

std::shared_ptr<ir::Graph> trace_rank_graph(const TraceArgs& args) {
  if (args.mesh.empty()) throw std::invalid_argument("--parallel needs --mesh (e.g. --mesh dp=4)");
  dist::DeviceMesh mesh = dist::DeviceMesh::parse(args.mesh);
  int64_t rank = args.rank < 0 ? 0 : args.rank;
  mesh.coordinates(rank);  // a rank outside the mesh is an error naming it
  models::SubjectOptions options;
  options.seed = args.seed;
  options.batch_size = args.batch_size;
  options.seq_len = args.seq_len;
  apply_model_variant(options, args.n_layers, args.dtype, args.attention, args.config);
  options.parallel.plan = args.parallel;
  std::shared_ptr<ir::Graph> graph = oracles::trace_rank_graph(args.model, options, mesh, rank);
  if (!args.meta) ir::retarget_device(*graph, c10::Device(c10::DeviceType::Meta), c10::Device(c10::DeviceType::CPU));
  return graph;
}

}  // namespace passcheck::cli
