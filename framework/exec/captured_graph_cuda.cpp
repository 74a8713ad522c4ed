// The `cuda` backend of the CUDA-graph wrapper (captured_graph.h), compiled only in CUDA
// builds (LibTorch 2.x). Like torchtitan's wrapper: one graph pool and one capture stream
// shared by every wrapper, the pool kept alive by an empty captured graph; warm-up runs on
// the capture stream allocating from the pool; capture records the executor's run into a
// CUDAGraph on that stream, then replays it once so the call returns this call's values.
#include "framework/exec/captured_graph.h"

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

namespace passcheck::exec {

namespace {

namespace allocator = c10::cuda::CUDACachingAllocator;

int64_t reserved_bytes(c10::DeviceIndex device) {
  return allocator::getDeviceStats(device)
      .reserved_bytes[static_cast<size_t>(c10::CachingDeviceAllocator::StatType::AGGREGATE)]
      .current;
}

class CudaPoolResources : public CapturePool::DeviceResources {
 public:
  CudaPoolResources()
      : device_(c10::cuda::current_device()),
        pool_(at::cuda::graph_pool_handle()),
        stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device_)) {
    reserved_at_start_ = reserved_bytes(device_);
    // An empty capture into the pool keeps the pool alive between the wrappers' captures.
    keep_alive_ = std::make_unique<at::cuda::CUDAGraph>();
    c10::cuda::CUDAStreamGuard on_capture_stream(stream_);
    keep_alive_->capture_begin(pool_, cudaStreamCaptureModeThreadLocal);
    keep_alive_->capture_end();
  }
  void release() override {
    if (!keep_alive_) return;
    c10::cuda::device_synchronize();
    keep_alive_.reset();
    allocator::releasePool(device_, pool_);
  }
  int64_t reserved_growth() const override { return reserved_bytes(device_) - reserved_at_start_; }

  c10::DeviceIndex device() const { return device_; }
  at::cuda::MempoolId_t pool() const { return pool_; }
  c10::cuda::CUDAStream stream() const { return stream_; }

 private:
  c10::DeviceIndex device_;
  at::cuda::MempoolId_t pool_;
  c10::cuda::CUDAStream stream_;
  std::unique_ptr<at::cuda::CUDAGraph> keep_alive_;
  int64_t reserved_at_start_ = 0;
};

// Runs `work` on the capture stream, ordered after everything already queued on the
// current stream and before anything queued on it afterwards.
template <class Work>
auto on_stream(const c10::cuda::CUDAStream& stream, Work&& work) {
  c10::cuda::CUDAStream caller = c10::cuda::getCurrentCUDAStream(stream.device_index());
  at::cuda::CUDAEvent ready;
  ready.record(caller);
  ready.block(stream);
  struct Rejoin {
    const c10::cuda::CUDAStream& stream;
    c10::cuda::CUDAStream caller;
    ~Rejoin() {
      at::cuda::CUDAEvent done;
      done.record(stream);
      done.block(caller);
    }
  } rejoin{stream, caller};
  c10::cuda::CUDAStreamGuard guard(stream);
  return work();
}

class CudaCapture : public GraphCapture {
 public:
  explicit CudaCapture(CudaPoolResources& resources) : resources_(resources) {}

  std::vector<c10::IValue> warm_up(Executor& executor, std::vector<c10::IValue> args) override {
    // Warm-up allocates from the graph pool, not the eager one, so the two do not both
    // keep the warm-up's blocks (the seed measured 7 GiB of Llama 3.1 70B this way).
    const auto stream = resources_.stream();
    return on_stream(stream, [&] {
      allocator::beginAllocateToPool(resources_.device(), resources_.pool(),
                                     [s = stream.stream()](cudaStream_t current) { return current == s; });
      struct End {
        CudaPoolResources& r;
        ~End() { allocator::endAllocateToPool(r.device(), r.pool()); }
      } end{resources_};
      return executor.run(std::move(args));
    });
  }

  std::vector<c10::IValue> capture(Executor& executor, const std::vector<c10::IValue>& buffers) override {
    graph_ = std::make_unique<at::cuda::CUDAGraph>();
    std::vector<c10::IValue> outputs = on_stream(resources_.stream(), [&] {
      graph_->capture_begin(resources_.pool(), cudaStreamCaptureModeThreadLocal);
      try {
        std::vector<c10::IValue> out = executor.run(buffers);
        graph_->capture_end();
        return out;
      } catch (...) {
        try {
          graph_->capture_end();
        } catch (...) {
        }
        graph_.reset();
        throw;
      }
    });
    // Capture only recorded the kernels: replay once so the outputs hold this call's values.
    graph_->replay();
    return outputs;
  }

  void replay(Executor&, const std::vector<c10::IValue>&, const std::vector<c10::IValue>&) override {
    if (!graph_) throw ExecError("cudagraph: replay without a captured graph");
    graph_->replay();
  }

  void release() override { graph_.reset(); }

 private:
  CudaPoolResources& resources_;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
};

}  // namespace

std::unique_ptr<CapturePool::DeviceResources> make_cuda_pool_resources() {
  if (c10::cuda::device_count() == 0) throw ExecError("cudagraph backend 'cuda': no CUDA device is available");
  return std::make_unique<CudaPoolResources>();
}

std::unique_ptr<GraphCapture> make_cuda_capture(CapturePool& pool) {
  auto* resources = dynamic_cast<CudaPoolResources*>(pool.device_resources());
  if (!resources) throw ExecError("cudagraph backend 'cuda': the shared pool has no CUDA resources");
  return std::make_unique<CudaCapture>(*resources);
}

}  // namespace passcheck::exec
