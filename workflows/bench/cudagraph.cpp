// See cudagraph.h. On `cuda` the figure is the launch-overhead saving of replaying a
// captured graph; on `replay` (CPU) the wrapper only adds the copies and the output
// writes, so the figure there is the model's cost, not a speedup.
#include "workflows/bench/cudagraph.h"
#include "workflows/bench/timing.h"

#include "framework/check/pipeline.h"
#include "framework/exec/memory.h"
#include "oracles/models/subject.h"
#include "oracles/training_driver.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <vector>

namespace passcheck::bench {

namespace {

// One timed call; reading the loss back waits for the device.
template <class Step>
double timed(Step&& step) {
  auto t0 = Clock::now();
  std::vector<at::Tensor> out = step();
  (void)out.at(0).to(at::kCPU);
  return seconds_since(t0);
}

}  // namespace

CudagraphBenchResult measure_cudagraph_step(const CudagraphBenchOptions& o) {
  if (o.repeats < 1 || o.warmup < 0) throw std::invalid_argument("--repeats must be >= 1 and --warmup >= 0");
  if (o.backend != "replay" && o.backend != "cuda")
    throw std::invalid_argument("--cudagraph " + o.backend + ": expected replay or cuda");
  c10::Device device(o.device);
  if (device.is_cuda() && !at::hasCUDA()) throw std::invalid_argument("--device cuda: no CUDA device is available");
  if (o.backend == "cuda" && !device.is_cuda())
    throw std::invalid_argument("--cudagraph cuda captures CUDA graphs: give --device cuda");
  models::SubjectOptions options;
  options.device = device;
  options.batch_size = o.batch_size;
  options.seq_len = o.seq_len;
  auto eager = models::make_subject(o.model, options);
  auto plain_subject = models::make_subject(o.model, options);
  auto captured_subject = models::make_subject(o.model, options);
  trace::TracedProgram plain = oracles::trace_subject(*plain_subject, plain_subject->batch(0), false);
  trace::TracedProgram captured = oracles::trace_subject(*captured_subject, captured_subject->batch(0), false);
  CudagraphBenchResult result;
  result.pipeline = o.pipeline.empty() ? "cudagraph{backend=" + o.backend + "}" : o.pipeline;
  oracles::apply_pipeline(captured, check::Pipeline::parse(result.pipeline));

  std::vector<double> eager_times, plain_times, captured_times;
  for (int i = 0; i < o.warmup + 2 + o.repeats; ++i) {
    // A new batch every call, as in training: the wrapper copies it in.
    const std::vector<c10::IValue> batch = eager->batch(i);
    exec::PeakMemoryScope scope(device);
    double e = timed([&] { return oracles::eager_step(*eager, batch); });
    result.eager_peak_bytes = std::max(result.eager_peak_bytes, scope.peak_above_start());
    double p = timed([&] { return plain(batch).toTensorVector(); });
    double c = timed([&] { return captured(batch).toTensorVector(); });
    if (i < o.warmup + 2) continue;  // the wrapper's warm-up and capture calls
    eager_times.push_back(e);
    plain_times.push_back(p);
    captured_times.push_back(c);
  }
  result.captured_stats = captured.last_module_stats();
  result.eager_s = median(eager_times);
  result.traced_s = median(plain_times);
  result.captured_s = median(captured_times);
  return result;
}

}  // namespace passcheck::bench
