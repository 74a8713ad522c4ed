// Memory instruments shared by the executor, the eager oracle and the benchmarks:
// live bytes of the values a graph execution holds (each storage counted once, any
// device, meta included), a process-wide counting CPU allocator so eager code can be
// measured with the same instrument, and a peak-memory scope over either.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <unordered_map>

namespace at {
class Tensor;
}
namespace c10 {
struct StorageImpl;
}

namespace passcheck::exec {

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
