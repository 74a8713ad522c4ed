// The CUDA-graph benchmark (`passcheck bench --cudagraph BACKEND`): the traced training
// step with and without the CUDA-graph wrapper, side by side in one process (calls
// alternate so drift hits both), with the eager step for reference, and what the wrapper
// holds: its pool against the eager step's peak and the inputs each replay copies.
#pragma once

#include "framework/exec/module_executor.h"

#include <cstdint>
#include <string>

namespace passcheck::bench {

struct CudagraphBenchOptions {
  std::string model = "llama3";
  std::string backend = "replay";  ///< the wrapper's backend: replay (CPU) or cuda
  std::string device = "cpu";
  std::string pipeline;            ///< "" : cudagraph{backend=BACKEND}
  int repeats = 10;
  int warmup = 2;
  int64_t batch_size = 0;
  int64_t seq_len = 0;
};

/// Medians of the timed runs, in seconds, and the wrapper's statistics of the last run.
struct CudagraphBenchResult {
  std::string pipeline;
  double eager_s = 0, traced_s = 0, captured_s = 0;
  int64_t eager_peak_bytes = 0;
  exec::ModuleRunStats captured_stats;
};

/// Validates the options (std::invalid_argument naming the one at fault) and measures.
CudagraphBenchResult measure_cudagraph_step(const CudagraphBenchOptions& options);

}  // namespace passcheck::bench
