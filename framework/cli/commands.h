// The passcheck subcommands. Each returns the process exit code: 0 success, 1 a
// verification failed (mismatch), 2 bad input or usage (the message says what and where).
#pragma once

#include <cstdint>
#include <string>

namespace passcheck::cli {

struct TraceArgs {
  std::string model = "llama3";
  std::string out;
  bool meta = false;
  uint64_t seed = 0;
  int64_t batch_size = 0;
  int64_t seq_len = 0;
};
int run_trace(const TraceArgs& args);

struct RunArgs {
  std::string file;
  uint64_t seed = 0;
  int64_t int_high = 2;
  bool check_metadata = true;
};
int run_graph_file(const RunArgs& args);

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
};
int run_check(const CheckArgs& args);

/// `passcheck passes`: the pass catalogue.
int run_passes();

struct BenchArgs {
  std::string model = "llama3";
  int warmup = 2;
  int repeats = 10;
  int threads = 1;
  std::string json;
};
int run_bench(const BenchArgs& args);

int run_models();

}  // namespace passcheck::cli
