// Unit tests for the memory instruments: the live-bytes tracker (one count per storage,
// meta tensors, release order, peak), the process-wide counting CPU allocator (eager
// allocations, autograd, the raw allocation interface oneDNN uses, threads) and the
// peak-memory scope, including its refusal of devices it cannot measure.
#include "framework/exec/memory.h"

#include <ATen/ATen.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <torch/nn/module.h>
#include <torch/types.h>

#include <stdexcept>
#include <thread>
#include <vector>

namespace passcheck::exec {
namespace {

constexpr int64_t kMiB = 1 << 20;

TEST(LiveBytesTracker, StorageSharedByTwoViewsCountsOnce) {
  LiveBytesTracker tracker;
  at::Tensor t = at::empty({256}, at::kFloat);  // 1024 bytes
  at::Tensor view = t.view({16, 16});
  at::Tensor slice = t.slice(0, 0, 10);  // a view of 40 bytes still pins the whole storage
  tracker.acquire(t);
  EXPECT_EQ(tracker.current(), 1024);
  tracker.acquire(view);
  tracker.acquire(slice);
  EXPECT_EQ(tracker.current(), 1024);
  tracker.release(t);
  EXPECT_EQ(tracker.current(), 1024);  // views still hold the storage
  tracker.release(view);
  EXPECT_EQ(tracker.current(), 1024);
  tracker.release(slice);
  EXPECT_EQ(tracker.current(), 0);
  EXPECT_EQ(tracker.peak(), 1024);
}

TEST(LiveBytesTracker, SameTensorHeldTwiceCountsOnce) {
  LiveBytesTracker tracker;
  at::Tensor t = at::empty({8}, at::kDouble);
  tracker.acquire(t);
  tracker.acquire(t);
  EXPECT_EQ(tracker.current(), 64);
  tracker.release(t);
  EXPECT_EQ(tracker.current(), 64);
  tracker.release(t);
  EXPECT_EQ(tracker.current(), 0);
}

TEST(LiveBytesTracker, ReleaseOrderAndPeak) {
  LiveBytesTracker tracker;
  at::Tensor a = at::empty({256}, at::kFloat);   // 1024
  at::Tensor b = at::empty({1024}, at::kFloat);  // 4096
  at::Tensor c = at::empty({512}, at::kFloat);   // 2048
  tracker.acquire(a);
  tracker.acquire(b);
  EXPECT_EQ(tracker.current(), 5120);
  tracker.release(a);
  EXPECT_EQ(tracker.current(), 4096);
  tracker.acquire(c);
  EXPECT_EQ(tracker.current(), 6144);
  EXPECT_EQ(tracker.peak(), 6144);
  tracker.release(b);
  EXPECT_EQ(tracker.current(), 2048);
  EXPECT_EQ(tracker.peak(), 6144);
  tracker.reset_peak();
  EXPECT_EQ(tracker.peak(), 2048);
  tracker.acquire(a);
  EXPECT_EQ(tracker.peak(), 3072);
  tracker.release(c);
  tracker.release(a);
  EXPECT_EQ(tracker.current(), 0);
  EXPECT_EQ(tracker.peak(), 3072);
}

TEST(LiveBytesTracker, MetaTensorsAreCountedBySize) {
  LiveBytesTracker tracker;
  const auto meta = at::TensorOptions().device(at::kMeta);
  at::Tensor m = at::empty({8, 8}, meta.dtype(at::kDouble));  // 512 bytes, no data
  at::Tensor mt = m.t();
  at::Tensor h = at::empty({3, 5}, meta.dtype(at::kHalf));  // 30 bytes
  tracker.acquire(m);
  tracker.acquire(mt);
  EXPECT_EQ(tracker.current(), 512);
  tracker.acquire(h);
  EXPECT_EQ(tracker.current(), 542);
  tracker.release(m);
  tracker.release(mt);
  EXPECT_EQ(tracker.current(), 30);
  tracker.release(h);
  EXPECT_EQ(tracker.current(), 0);
  EXPECT_EQ(tracker.peak(), 542);
}

TEST(LiveBytesTracker, UndefinedIgnoredAndUnbalancedReleaseRejected) {
  LiveBytesTracker tracker;
  tracker.acquire(at::Tensor());
  tracker.release(at::Tensor());
  EXPECT_EQ(tracker.current(), 0);
  EXPECT_EQ(tracker.peak(), 0);
  at::Tensor t = at::empty({4});
  EXPECT_THROW(tracker.release(t), std::logic_error);
}

TEST(LiveBytesTracker, InPlaceResizeIsFollowed) {
  LiveBytesTracker tracker;
  at::Tensor t = at::empty({4}, at::kFloat);
  tracker.acquire(t);
  EXPECT_EQ(tracker.current(), 16);
  t.resize_({64});  // grows the same storage
  tracker.acquire(t);
  EXPECT_EQ(tracker.current(), 256);
  tracker.release(t);
  tracker.release(t);
  EXPECT_EQ(tracker.current(), 0);
  EXPECT_EQ(tracker.peak(), 256);
}

TEST(CpuAllocationCounter, InstallIsIdempotent) {
  CpuAllocationCounter::install();
  EXPECT_TRUE(CpuAllocationCounter::installed());
  c10::Allocator* installed = c10::GetAllocator(c10::DeviceType::CPU);
  CpuAllocationCounter::install();
  EXPECT_EQ(c10::GetAllocator(c10::DeviceType::CPU), installed);
  EXPECT_EQ(c10::GetCPUAllocator(), installed);
}

TEST(CpuAllocationCounter, CountsAllocationAndFree) {
  CpuAllocationCounter::install();
  const int64_t before = CpuAllocationCounter::current_bytes();
  {
    at::Tensor t = at::empty({1024}, at::kFloat);
    EXPECT_GE(CpuAllocationCounter::current_bytes() - before, 4096);
    EXPECT_GE(CpuAllocationCounter::peak_bytes(), before + 4096);
    // Views allocate nothing.
    const int64_t with_t = CpuAllocationCounter::current_bytes();
    at::Tensor v = t.view({32, 32}).t();
    EXPECT_EQ(CpuAllocationCounter::current_bytes(), with_t);
  }
  EXPECT_EQ(CpuAllocationCounter::current_bytes(), before);
}

TEST(CpuAllocationCounter, ZeroByteAllocations) {
  CpuAllocationCounter::install();
  const int64_t before = CpuAllocationCounter::current_bytes();
  {
    at::Tensor t = at::empty({0}, at::kFloat);
    EXPECT_EQ(CpuAllocationCounter::current_bytes(), before);
    t.resize_({16});  // grows through the storage's allocator: the counter
    EXPECT_EQ(CpuAllocationCounter::current_bytes(), before + 64);
  }
  EXPECT_EQ(CpuAllocationCounter::current_bytes(), before);
}

TEST(CpuAllocationCounter, EagerAutogradIsCounted) {
  CpuAllocationCounter::install();
  const int64_t before = CpuAllocationCounter::current_bytes();
  {
    torch::Tensor x = torch::randn({64, 64}, torch::requires_grad());
    torch::Tensor w = torch::randn({64, 64}, torch::requires_grad());
    const int64_t leaves = CpuAllocationCounter::current_bytes();
    EXPECT_GE(leaves - before, 2 * 64 * 64 * 4);

    CpuAllocationCounter::reset_peak();
    torch::Tensor loss = torch::matmul(x, w).relu().sum();
    loss.backward();
    ASSERT_TRUE(x.grad().defined());
    ASSERT_TRUE(w.grad().defined());
    // Both gradients stay alive in .grad; the forward output and relu mask came and
    // went, so the peak is above what remains.
    EXPECT_GE(CpuAllocationCounter::current_bytes() - leaves, 2 * 64 * 64 * 4);
    EXPECT_GE(CpuAllocationCounter::peak_bytes() - leaves, 3 * 64 * 64 * 4);
  }
  EXPECT_EQ(CpuAllocationCounter::current_bytes(), before);
}

TEST(CpuAllocationCounter, RawInterfaceIsSupported) {
  // oneDNN (ideep) allocates through GetAllocator(CPU)->raw_allocate and frees through
  // raw_deallocate, which only works when context == data and raw_deleter is set.
  CpuAllocationCounter::install();
  c10::Allocator* allocator = c10::GetAllocator(c10::DeviceType::CPU);
  ASSERT_NE(allocator->raw_deleter(), nullptr);
  const int64_t before = CpuAllocationCounter::current_bytes();
  void* p = allocator->raw_allocate(1000);
  ASSERT_NE(p, nullptr);
  static_cast<char*>(p)[999] = 1;
  EXPECT_EQ(CpuAllocationCounter::current_bytes(), before + 1000);
  allocator->raw_deallocate(p);
  EXPECT_EQ(CpuAllocationCounter::current_bytes(), before);

  c10::DataPtr d = allocator->allocate(256);
  EXPECT_EQ(d.get(), d.get_context());
  EXPECT_EQ(d.get_deleter(), allocator->raw_deleter());
}

TEST(CpuAllocationCounter, OneDnnOperatorsWork) {
  CpuAllocationCounter::install();
  const int64_t before = CpuAllocationCounter::current_bytes();
  {
    at::Tensor x = at::randn({16, 3, 32, 32});
    at::Tensor w = at::randn({8, 3, 3, 3});
    at::Tensor y = at::conv2d(x, w);
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{16, 8, 30, 30}));
    if (at::hasMKLDNN()) {
      at::Tensor xm = x.to_mkldnn();  // ideep-owned buffer: raw_allocate
      EXPECT_TRUE(at::equal(xm.to_dense(), x));
    }
    EXPECT_GE(CpuAllocationCounter::current_bytes() - before, y.nbytes());
  }
  EXPECT_EQ(CpuAllocationCounter::current_bytes(), before);
}

TEST(CpuAllocationCounter, ThreadsInstallAndAllocateConcurrently) {
  const int64_t before = CpuAllocationCounter::current_bytes();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([i] {
      CpuAllocationCounter::install();
      std::vector<at::Tensor> keep;
      for (int k = 0; k < 500; ++k) {
        keep.push_back(at::empty({(k % 7 + 1) * 16 + i}, at::kFloat));
        if (keep.size() > 8) keep.erase(keep.begin());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(CpuAllocationCounter::installed());
  EXPECT_EQ(CpuAllocationCounter::current_bytes(), before);
}

TEST(PeakMemoryScope, MeasuresAKnownCpuAllocation) {
  PeakMemoryScope scope(c10::Device(c10::DeviceType::CPU));
  EXPECT_TRUE(CpuAllocationCounter::installed());
  EXPECT_EQ(scope.peak_above_start(), 0);
  {
    at::Tensor t = at::empty({kMiB / 4}, at::kFloat);  // 1 MiB
    EXPECT_GE(scope.current_above_start(), kMiB);
  }
  EXPECT_GE(scope.peak_above_start(), kMiB);
  EXPECT_LT(scope.peak_above_start(), kMiB + kMiB / 16);
  EXPECT_EQ(scope.current_above_start(), 0);
}

TEST(PeakMemoryScope, StartsFromTheCurrentLevel) {
  // Installed before `held` exists: memory allocated before install() is invisible to
  // the counter, and so is its eventual free.
  CpuAllocationCounter::install();
  at::Tensor held = at::empty({kMiB / 4}, at::kFloat);
  PeakMemoryScope scope(c10::Device(c10::DeviceType::CPU));
  // Memory allocated before the scope does not count against it.
  EXPECT_EQ(scope.peak_above_start(), 0);
  held = at::Tensor();
  EXPECT_EQ(scope.current_above_start(), -kMiB);
  EXPECT_EQ(scope.peak_above_start(), 0);
  at::Tensor small = at::empty({1024}, at::kByte);
  EXPECT_EQ(scope.peak_above_start(), 0);  // still below the starting level
}

TEST(PeakMemoryScope, RejectsDevicesWithoutAnInstrument) {
  try {
    PeakMemoryScope scope(c10::Device(c10::DeviceType::Meta));
    FAIL() << "meta accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("meta"), std::string::npos) << e.what();
  }
  try {
    PeakMemoryScope scope(c10::Device(c10::DeviceType::XLA, 0));
    FAIL() << "xla accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("xla:0"), std::string::npos) << e.what();
  }
#ifndef PASSCHECK_WITH_CUDA
  try {
    PeakMemoryScope scope(c10::Device(c10::DeviceType::CUDA, 0));
    FAIL() << "cuda accepted by a CPU-only build";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
#endif
}

}  // namespace
}  // namespace passcheck::exec
