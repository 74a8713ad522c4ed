// The memory a training command will need, estimated on the meta device before anything
// is allocated (commands.h, check_training_memory). A command-line size inside its
// documented range (--batch 65536) can still need more memory than the machine has; the
// estimate refuses it with exit 2 instead of letting the kernel's OOM killer end the run.
#include "tools/passcheck/commands.h"

#include "framework/check/memory_estimate.h"
#include "oracles/models/subject.h"
#include "oracles/training_driver.h"

#include <stdexcept>
#include <string>

namespace passcheck::cli {

namespace {

std::string gib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / double(int64_t{1} << 30));
  return text;
}

int64_t saturating_mul(int64_t a, int64_t b) { return b != 0 && a > INT64_MAX / b ? INT64_MAX : a * b; }

}  // namespace

TrainingFootprint estimate_training_footprint(const std::string& model, const models::SubjectOptions& options,
                                              const FootprintShape& shape) {
  models::SubjectOptions meta = options;
  meta.device = c10::Device(c10::DeviceType::Meta);
  auto subject = models::make_subject(model, meta);
  TrainingFootprint footprint;
  for (const at::Tensor& p : oracles::optimizer_parameters(*subject->module()))
    footprint.parameter_bytes += p.numel() * static_cast<int64_t>(p.element_size());
  // Parameters, their gradients and the optimizer's state per parameter, per model copy.
  const int64_t state_bytes = saturating_mul(footprint.parameter_bytes, 2 + shape.optimizer_states);
  const int64_t per_rank_state = saturating_mul(state_bytes, shape.copies);
  // Tracing on meta allocates nothing; skip it when the state alone is over the budget.
  if (shape.budget == 0 || per_rank_state < shape.budget) {
    trace::TracedProgram traced = oracles::trace_subject(*subject, subject->batch(0), /*on_meta=*/false);
    footprint.step_peak_bytes = check::estimate_memory(traced.graph()).peak_bytes;
  }
  const int64_t per_rank = per_rank_state > INT64_MAX - saturating_mul(footprint.step_peak_bytes, shape.copies)
                               ? INT64_MAX
                               : per_rank_state + saturating_mul(footprint.step_peak_bytes, shape.copies);
  footprint.total_bytes = saturating_mul(per_rank, std::max<int64_t>(1, shape.ranks));
  return footprint;
}

void check_training_memory(const std::string& model, const models::SubjectOptions& options,
                           const FootprintShape& shape) {
  if (shape.budget == 0) return;
  const TrainingFootprint f = estimate_training_footprint(model, options, shape);
  if (f.total_bytes <= shape.budget) return;
  throw std::invalid_argument(
      "--memory-budget: " + model + " at these sizes needs about " + gib(f.total_bytes) + " (parameters " +
      gib(f.parameter_bytes) + ", step peak " + gib(f.step_peak_bytes) + ", x" + std::to_string(shape.copies) +
      " models" + (shape.ranks > 1 ? ", x" + std::to_string(shape.ranks) + " ranks" : "") + "), over the budget of " +
      gib(shape.budget) + "; lower --batch/--seq/--layers, or raise --memory-budget (0: no limit)");
}

}  // namespace passcheck::cli
