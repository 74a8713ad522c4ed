// Memory instruments shared by the executor, the eager oracle and the benchmarks:
// live bytes of the values a graph execution holds (each storage counted once, any
// device, meta included), a process-wide counting CPU allocator so eager code can be
// measured with the same instrument, and a peak-memory scope over either.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace at {
class Tensor;
}
namespace c10 {
struct StorageImpl;
}

namespace passcheck::exec {

/// Default memory budget for running a graph file (ExecutorOptions::max_bytes,
/// InputOptions::max_bytes, `--memory-budget`): 2 GiB, far above any debug model's
/// graph and far below what a hostile size argument asks for.
constexpr int64_t kDefaultMemoryBudget = int64_t{2} << 30;

/// Bytes a tensor with these sizes and strides addresses from its first element (the
/// storage it needs): 0 when a size is 0, saturating at INT64_MAX; sizes or strides
/// that are negative count as INT64_MAX.
int64_t storage_extent_bytes(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                             int64_t element_size);

/// "3600000000 bytes (3.35 GiB)".
std::string format_bytes(int64_t bytes);

/// While alive, a CPU allocation through c10's allocator that would bring the bytes
/// allocated since the scope began above `max_bytes` fails, before any memory is
/// taken, with a c10::Error naming the bytes and the budget (installs
/// CpuAllocationCounter). Scopes nest; the innermost budget applies.
class AllocationBudgetScope {
 public:
  explicit AllocationBudgetScope(int64_t max_bytes);
  ~AllocationBudgetScope();
  AllocationBudgetScope(const AllocationBudgetScope&) = delete;
  AllocationBudgetScope& operator=(const AllocationBudgetScope&) = delete;

 private:
  int64_t previous_ceiling_;
  int64_t previous_budget_;
};

/// Bytes of the tensors an execution keeps alive. A storage shared by several live
/// values (views, aliases) is counted once, by its full size in bytes.
class LiveBytesTracker {
 public:
  /// A value holding `t` became live (undefined tensors are ignored).
  void acquire(const at::Tensor& t);
  /// A value holding `t` was released.
  void release(const at::Tensor& t);
  int64_t current() const { return current_; }
  int64_t peak() const { return peak_; }
  void reset_peak() { peak_ = current_; }

 private:
  struct Entry {
    int64_t holders = 0;
    int64_t bytes = 0;
  };
  std::unordered_map<const c10::StorageImpl*, Entry> live_;
  int64_t current_ = 0;
  int64_t peak_ = 0;
};

/// Process-wide counting wrapper around the CPU allocator: every CPU allocation made
/// through c10's allocator after install() is counted (current and peak bytes).
class CpuAllocationCounter {
 public:
  /// Installs the counting allocator; idempotent and thread-safe.
  static void install();
  static bool installed();
  static int64_t current_bytes();
  static int64_t peak_bytes();
  /// Makes the peak equal to the current byte count.
  static void reset_peak();
};

/// Peak bytes allocated on a device during the scope's lifetime, above what was
/// allocated when it began. CPU uses CpuAllocationCounter (installed on demand); CUDA
/// uses the caching allocator's statistics (only in CUDA builds).
class PeakMemoryScope {
 public:
  explicit PeakMemoryScope(c10::Device device);
  /// Peak bytes above the starting level so far.
  int64_t peak_above_start() const;
  /// Current bytes above the starting level.
  int64_t current_above_start() const;

 private:
  c10::Device device_;
  int64_t start_ = 0;
};

}  // namespace passcheck::exec
