// Memory instruments: the live-bytes tracker the executor feeds with the values it
// holds, the process-wide counting CPU allocator (a c10::Allocator installed over the
// CPU allocator that was current, forwarding every allocation to it and counting bytes
// in flight), and the peak-memory scope that reads either the counter (CPU) or the CUDA
// caching allocator's statistics (CUDA builds only).
#include "framework/exec/memory.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>

#ifdef PASSCHECK_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace passcheck::exec {

// ---------------------------------------------------------------------------------
// LiveBytesTracker

namespace {

// Storage-less tensors (sparse, mkldnn) and tensors whose storage access throws
// (functorch wrappers) have no single storage to count; the tracker skips them.
const c10::StorageImpl* storage_of(const at::TensorBase& t, int64_t* nbytes) {
  if (!t.defined()) return nullptr;
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (!impl->has_storage()) return nullptr;
  const c10::Storage& storage = impl->unsafe_storage();
  const c10::StorageImpl* storage_impl = storage.unsafeGetStorageImpl();
  if (storage_impl == nullptr) return nullptr;
  *nbytes = static_cast<int64_t>(storage_impl->nbytes());
  return storage_impl;
}

}  // namespace

void LiveBytesTracker::acquire(const at::Tensor& t) {
  int64_t nbytes = 0;
  const c10::StorageImpl* key = storage_of(t, &nbytes);
  if (key == nullptr) return;
  Entry& entry = live_[key];
  // A storage can be resized in place while live (resize_, out= ops); re-reading
  // its size on every acquire keeps current_ equal to the sum of live storage sizes.
  current_ += nbytes - entry.bytes;
  entry.bytes = nbytes;
  ++entry.holders;
  if (current_ > peak_) peak_ = current_;
}

void LiveBytesTracker::release(const at::Tensor& t) {
  int64_t nbytes = 0;
  const c10::StorageImpl* key = storage_of(t, &nbytes);
  if (key == nullptr) return;
  auto it = live_.find(key);
  if (it == live_.end()) {
    // An unbalanced release means the executor's liveness bookkeeping is wrong; a
    // silent no-op would turn that bug into a plausible-looking memory number.
    throw std::logic_error("LiveBytesTracker::release: storage was never acquired");
  }
  Entry& entry = it->second;
  current_ += nbytes - entry.bytes;
  entry.bytes = nbytes;
  if (current_ > peak_) peak_ = current_;
  if (--entry.holders == 0) {
    current_ -= entry.bytes;
    live_.erase(it);
  }
}

// ---------------------------------------------------------------------------------
// CpuAllocationCounter
//
// Layout of what the counter hands out. The obvious design (a DataPtr whose context
// owns the original DataPtr) breaks LibTorch: Allocator::raw_allocate is non-virtual
// and asserts that data == context, and LibTorch 1.13 calls it on the CPU allocator
// (ideep/oneDNN's engine allocator, aten/src/ATen/native/mkldnn/IDeepRegistration.cpp,
// allocates through GetAllocator(CPU)->raw_allocate and frees through
// raw_deallocate, i.e. raw_deleter()(ptr)). So every counted DataPtr has
// context == data and the same static deleter, and the original DataPtr plus the size
// live in a pointer-keyed side table; raw_deleter() returns that deleter, which makes
// the raw interface valid (allocate() always returns a DataPtr carrying it).

namespace {

// Above REGISTER_ALLOCATOR's default priority 0, so a default-priority registration
// running later (a lazily loaded library) cannot displace the counter, while leaving
// room above for an allocator that must win.
constexpr uint8_t kCounterPriority = 100;

// Striped locks keep concurrent intra-op threads from serialising on one mutex.
constexpr size_t kShards = 64;

struct Record {
  c10::DataPtr original;
  int64_t bytes = 0;
};

struct Shard {
  std::mutex mutex;
  std::unordered_map<void*, Record> records;
};

void counted_delete(void* data);

class CountingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override;
  c10::DeleterFnPtr raw_deleter() const override { return &counted_delete; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

// Leaked on purpose: tensors freed during static destruction still run
// counted_delete, which must find the table and the original allocator alive.
struct CounterState {
  CountingCpuAllocator allocator;
  std::atomic<c10::Allocator*> original{nullptr};
  std::atomic<int64_t> current{0};
  std::atomic<int64_t> peak{0};
  std::array<Shard, kShards> shards;
  std::mutex install_mutex;
  // AllocationBudgetScope: the byte count allocations may not exceed, and the budget
  // that ceiling came from (for the message).
  std::atomic<int64_t> ceiling{std::numeric_limits<int64_t>::max()};
  std::atomic<int64_t> budget{0};
};

CounterState& state() {
  static CounterState* s = new CounterState();
  return *s;
}

Shard& shard_for(void* data) {
  // Allocations are at least 16-byte aligned; mix the higher bits so neighbouring
  // blocks land on different shards.
  auto bits = reinterpret_cast<uintptr_t>(data) >> 4;
  bits ^= bits >> 7;
  bits *= 0x9E3779B97F4A7C15ull;
  return state().shards[(bits >> 32) % kShards];
}

void add_bytes(int64_t n) {
  CounterState& s = state();
  int64_t now = s.current.fetch_add(n, std::memory_order_relaxed) + n;
  int64_t seen = s.peak.load(std::memory_order_relaxed);
  while (now > seen && !s.peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
}

// Refused before the original allocator is asked: with overcommit, a huge request
// would succeed and the process would die later, when the memory is touched.
void refuse_over_budget(size_t n) {
  CounterState& s = state();
  const int64_t ceiling = s.ceiling.load(std::memory_order_relaxed);
  if (ceiling == std::numeric_limits<int64_t>::max() || n == 0) return;
  const int64_t current = s.current.load(std::memory_order_relaxed);
  const int64_t budget = s.budget.load(std::memory_order_relaxed);
  const bool too_big = n > static_cast<size_t>(std::numeric_limits<int64_t>::max() - current) ||
                       current + static_cast<int64_t>(n) > ceiling;
  if (!too_big) return;
  TORCH_CHECK(false, "memory budget exceeded: allocating ", format_bytes(static_cast<int64_t>(std::min<size_t>(
                         n, static_cast<size_t>(std::numeric_limits<int64_t>::max())))),
              " would bring this run over its memory budget of ", format_bytes(budget), " (",
              format_bytes(budget - (ceiling - current)), " already held; raise it with --memory-budget)");
}

c10::DataPtr CountingCpuAllocator::allocate(size_t n) {
  c10::Allocator* original = state().original.load(std::memory_order_acquire);
  refuse_over_budget(n);
  c10::DataPtr inner = original->allocate(n);
  void* data = inner.get();
  if (data == nullptr) {
    // Zero-byte allocations: nothing to count. Keep the raw_deleter() promise (every
    // DataPtr from allocate() carries counted_delete) when the original has nothing
    // to free either, which is what the default CPU allocator returns.
    if (inner.get_context() == nullptr) return {nullptr, nullptr, &counted_delete, inner.device()};
    return inner;
  }
  const c10::Device device = inner.device();
  const auto bytes = static_cast<int64_t>(n);
  {
    Shard& shard = shard_for(data);
    std::lock_guard<std::mutex> lock(shard.mutex);
    shard.records.emplace(data, Record{std::move(inner), bytes});
  }
  add_bytes(bytes);
  return {data, data, &counted_delete, device};
}

void counted_delete(void* data) {
  if (data == nullptr) return;
  Record record;
  bool found = false;
  {
    Shard& shard = shard_for(data);
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto it = shard.records.find(data);
    if (it != shard.records.end()) {
      record = std::move(it->second);
      shard.records.erase(it);
      found = true;
    }
  }
  if (found) {
    state().current.fetch_sub(record.bytes, std::memory_order_relaxed);
    return;  // record.original is destroyed here: the memory goes back to its allocator
  }
  // Not ours: a raw_deallocate of memory the original allocator handed out through
  // raw_allocate before install() (ideep caches such blocks). Its raw deleter owns it.
  c10::Allocator* original = state().original.load(std::memory_order_acquire);
  c10::DeleterFnPtr deleter = original != nullptr ? original->raw_deleter() : nullptr;
  if (deleter != nullptr) {
    deleter(data);
  } else {
    TORCH_WARN("CpuAllocationCounter: raw_deallocate of an unknown pointer; leaking it");
  }
}

}  // namespace

void CpuAllocationCounter::install() {
  CounterState& s = state();
  std::lock_guard<std::mutex> lock(s.install_mutex);
  c10::Allocator* current = c10::GetAllocator(c10::DeviceType::CPU);
  if (current == &s.allocator) return;
  // Only the first install captures the original: wrapping something that itself
  // forwards to us (after a foreign allocator displaced the counter) would recurse.
  if (s.original.load(std::memory_order_acquire) == nullptr) {
    s.original.store(current, std::memory_order_release);
  }
  c10::SetAllocator(c10::DeviceType::CPU, &s.allocator, kCounterPriority);
  if (c10::GetAllocator(c10::DeviceType::CPU) != &s.allocator) {
    throw std::runtime_error(
        "CpuAllocationCounter::install: another CPU allocator is registered with a "
        "priority above " +
        std::to_string(kCounterPriority) + "; CPU allocations cannot be counted");
  }
}

bool CpuAllocationCounter::installed() {
  return c10::GetAllocator(c10::DeviceType::CPU) == &state().allocator;
}

int64_t CpuAllocationCounter::current_bytes() {
  return state().current.load(std::memory_order_relaxed);
}

int64_t CpuAllocationCounter::peak_bytes() { return state().peak.load(std::memory_order_relaxed); }

void CpuAllocationCounter::reset_peak() {
  CounterState& s = state();
  s.peak.store(s.current.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------------
// Budgets

int64_t storage_extent_bytes(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                             int64_t element_size) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (int64_t size : sizes)
    if (size == 0) return 0;
  // Last addressed element: sum of (size - 1) * stride, in elements.
  int64_t last = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    const int64_t stride = d < strides.size() ? strides[d] : 1;
    if (sizes[d] < 0 || stride < 0) return kMax;
    int64_t span = 0;
    if (__builtin_mul_overflow(sizes[d] - 1, stride, &span) || __builtin_add_overflow(last, span, &last)) return kMax;
  }
  int64_t bytes = 0;
  if (__builtin_add_overflow(last, int64_t{1}, &last) || __builtin_mul_overflow(last, element_size, &bytes)) return kMax;
  return bytes;
}

std::string format_bytes(int64_t bytes) {
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  std::string text = std::to_string(bytes) + " bytes";
  if (bytes < 1024) return text;
  double scaled = static_cast<double>(bytes);
  size_t unit = 0;
  for (scaled /= 1024; scaled >= 1024 && unit + 1 < std::size(units); scaled /= 1024) ++unit;
  char buf[32];
  std::snprintf(buf, sizeof buf, " (%.2f %s)", scaled, units[unit]);
  return text + buf;
}

AllocationBudgetScope::AllocationBudgetScope(int64_t max_bytes) {
  CpuAllocationCounter::install();
  CounterState& s = state();
  previous_ceiling_ = s.ceiling.load();
  previous_budget_ = s.budget.load();
  const int64_t current = s.current.load();
  int64_t ceiling = 0;
  if (__builtin_add_overflow(current, max_bytes, &ceiling)) ceiling = std::numeric_limits<int64_t>::max() - 1;
  s.ceiling.store(ceiling);
  s.budget.store(max_bytes);
}

AllocationBudgetScope::~AllocationBudgetScope() {
  state().ceiling.store(previous_ceiling_);
  state().budget.store(previous_budget_);
}

// ---------------------------------------------------------------------------------
// PeakMemoryScope
//
// Both instruments keep one process-wide peak per device, and a scope resets it when
// it begins: scopes on the same device must not nest or overlap, or the outer one
// only sees the peak since the inner one began.

#ifdef PASSCHECK_WITH_CUDA
namespace {
const c10::CachingDeviceAllocator::Stat& cuda_allocated(const c10::CachingDeviceAllocator::DeviceStats& stats) {
  return stats.allocated_bytes[static_cast<size_t>(c10::CachingDeviceAllocator::StatType::AGGREGATE)];
}
}  // namespace
#endif

PeakMemoryScope::PeakMemoryScope(c10::Device device) : device_(device) {
  if (device.is_cpu()) {
    CpuAllocationCounter::install();
    CpuAllocationCounter::reset_peak();
    start_ = CpuAllocationCounter::current_bytes();
    return;
  }
  if (device.is_cuda()) {
#ifdef PASSCHECK_WITH_CUDA
    const int index = device.has_index() ? device.index() : c10::cuda::current_device();
    device_ = c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index));
    c10::cuda::CUDACachingAllocator::resetPeakStats(index);
    start_ = cuda_allocated(c10::cuda::CUDACachingAllocator::getDeviceStats(index)).current;
    return;
#else
    throw std::invalid_argument("PeakMemoryScope: device " + device.str() +
                                " needs a CUDA build of passcheck (this build is CPU-only)");
#endif
  }
  throw std::invalid_argument("PeakMemoryScope: no memory instrument for device " +
                              device.str() +
                              " (supported: cpu, cuda); meta tensors allocate no memory, "
                              "use LiveBytesTracker for their byte counts");
}

int64_t PeakMemoryScope::peak_above_start() const {
#ifdef PASSCHECK_WITH_CUDA
  if (device_.is_cuda()) {
    return cuda_allocated(c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index())).peak -
           start_;
  }
#endif
  return CpuAllocationCounter::peak_bytes() - start_;
}

int64_t PeakMemoryScope::current_above_start() const {
#ifdef PASSCHECK_WITH_CUDA
  if (device_.is_cuda()) {
    return cuda_allocated(c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index()))
               .current -
           start_;
  }
#endif
  return CpuAllocationCounter::current_bytes() - start_;
}

}  // namespace passcheck::exec
