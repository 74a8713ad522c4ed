// The CUDA-graph wrapper: runs a part's Executor the way torchtitan's CUDAGraphWrapper runs
// a graph module. Call 1 warms up (an ordinary run, allocating from the shared pool). Call
// 2 checks the argument kinds (tensor, int, float, generator), keeps the argument buffers,
// records their addresses and captures; that capture's outputs are the call's results.
// Every later call copies only the inputs that are not static into the kept buffers,
// replays, and returns the same output tensors, which the next replay overwrites. One
// CapturePool (one memory pool and one capture stream) is shared by every wrapper of a
// run, forward and backward; its teardown releases graphs, pool and stream.
//
// Two backends behind one wrapper. `cuda` captures real CUDA graphs (CUDA builds only).
// `replay` is the CPU model of what a replay reads and writes, in every build: capture
// binds the plan to the storages of the call-2 arguments and outputs; a replay runs the plan
// again on those storages only and writes its results into the captured output storages.
// So, as on a GPU, an input that is not copied is read stale, a static input whose storage
// moved is read from the old storage, and outputs of replay k change at replay k+1. The
// model is adversarial where a GPU's allocator decides: a static input whose producer has
// freed its captured storage (only the wrapper still holds it) is filled with poison (NaN,
// -1, true) before a replay, so a per-call value wrongly marked static always changes the
// result instead of depending on where an allocator puts the next one.
//
// What the wrapper refuses (ReplayHazard, naming the input and the addresses): a static
// input no longer at its recorded address (upstream's check compares the captured
// arguments with themselves and never fires: historical bug 15), an int or float that
// differs from the captured value, a copied input whose shape, strides or dtype changed.
#pragma once

#include "framework/exec/executor.h"
#include "framework/ir/module.h"

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace passcheck::exec {

/// A call the captured graph cannot replay correctly (a moved static input, a changed
/// scalar, a reshaped input); the message names the wrapper, the input and the addresses.
class ReplayHazard : public ExecError {
 public:
  using ExecError::ExecError;
};

/// Known-buggy wrapper behaviours a CaptureSpec may ask for (mutants only).
namespace injected_wrapper_bugs {
/// Historical bug 11: the first input that is not static is never copied into its buffer.
inline constexpr const char* kSkipNonStaticCopy = "skip-non-static-copy";
/// Historical bug 11: the static-address check is skipped although the spec asks for it.
inline constexpr const char* kUncheckedStaticAddresses = "unchecked-static-addresses";
/// Historical bug 15 (upstream's check): compares the kept buffers' addresses with the
/// addresses recorded from those same buffers, so it never fires.
inline constexpr const char* kSelfComparedAddressCheck = "self-compared-address-check";
/// Every name above.
const std::vector<std::string>& all();
}  // namespace injected_wrapper_bugs

/// What one call of a wrapper did.
struct CaptureCall {
  enum class Phase : uint8_t { WarmUp, Capture, Replay };
  Phase phase = Phase::WarmUp;
  /// Inputs copied into their kept buffers (replays only) and the bytes copied.
  int64_t copies = 0;
  int64_t copy_bytes = 0;
  /// Static inputs whose captured storage only the wrapper still held (its producer freed
  /// it), filled with poison before the replay (`replay` backend).
  int64_t poisoned = 0;
};
const char* to_string(CaptureCall::Phase phase);

/// The memory pool and capture stream every wrapper of one run shares, kept alive until
/// teardown. On `replay` it models the pool's size: a capture's working memory can reuse
/// what earlier captures freed, their outputs stay allocated.
class CapturePool {
 public:
  /// Throws ExecError for `cuda` in a build without CUDA or when no CUDA device exists.
  explicit CapturePool(ir::CaptureSpec::Backend backend);
  ~CapturePool();
  CapturePool(const CapturePool&) = delete;
  CapturePool& operator=(const CapturePool&) = delete;

  ir::CaptureSpec::Backend backend() const { return backend_; }
  /// Releases every graph captured into the pool, the buffers and outputs the wrappers
  /// keep, the pool and the stream. Returns a warning (and releases nothing) when the pool
  /// was already torn down.
  std::optional<std::string> teardown();
  bool torn_down() const { return torn_down_; }

  /// Bytes the pool holds: on `replay`, the modelled size (the largest of: outputs of the
  /// captures before it plus a capture's own peak, taken over every capture); on `cuda`,
  /// the growth of the caching allocator's reserved bytes since the pool was made.
  int64_t pool_bytes() const;
  /// The same model with one pool per wrapper (what sharing saves).
  int64_t unshared_pool_bytes() const { return unshared_bytes_; }
  /// Bytes of argument buffers the wrappers keep between calls (not in the pool).
  int64_t kept_input_bytes() const { return kept_input_bytes_; }

  /// Called by a wrapper when it has captured: its outputs' bytes and its capture peak.
  void record_capture(int64_t output_bytes, int64_t peak_bytes, int64_t kept_input_bytes);

  /// The device side of a `cuda` pool (captured_graph_cuda.cpp): the pool handle, the
  /// capture stream and the graph that keeps the pool alive.
  struct DeviceResources {
    virtual ~DeviceResources() = default;
    virtual void release() = 0;
    virtual int64_t reserved_growth() const = 0;
  };
  /// Null on `replay`.
  DeviceResources* device_resources() { return device_.get(); }

 private:
  friend class CapturedGraph;
  void enroll(class CapturedGraph* wrapper);
  void withdraw(class CapturedGraph* wrapper);

  ir::CaptureSpec::Backend backend_;
  bool torn_down_ = false;
  std::vector<CapturedGraph*> wrappers_;
  int64_t outputs_so_far_ = 0;
  int64_t modelled_bytes_ = 0;
  int64_t unshared_bytes_ = 0;
  int64_t kept_input_bytes_ = 0;
  std::unique_ptr<DeviceResources> device_;
};

/// The capture of one backend (captured_graph.cpp holds `replay`, captured_graph_cuda.cpp
/// holds `cuda`).
class GraphCapture {
 public:
  virtual ~GraphCapture() = default;
  /// Call 1: run `executor` on `args` (on `cuda`, allocating from the pool on its stream).
  virtual std::vector<c10::IValue> warm_up(Executor& executor, std::vector<c10::IValue> args) = 0;
  /// Call 2: capture `executor` on `buffers` (the kept arguments) and return the outputs
  /// the capture leaves, with the values of this call.
  virtual std::vector<c10::IValue> capture(Executor& executor, const std::vector<c10::IValue>& buffers) = 0;
  /// Later calls: run the captured work again on the kept buffers, writing into `outputs`
  /// (the captured outputs).
  virtual void replay(Executor& executor, const std::vector<c10::IValue>& buffers,
                      const std::vector<c10::IValue>& outputs) = 0;
  /// Drops the captured graph.
  virtual void release() = 0;
};

class CapturedGraph {
 public:
  /// `name` names the wrapper in messages (the module part). Throws ExecError for an
  /// injected bug it does not know or a pool of another backend.
  CapturedGraph(std::string name, Executor& executor, const ir::Graph& graph, ir::CaptureSpec spec,
                std::shared_ptr<CapturePool> pool);
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  /// One call: warm-up, capture or replay (see the file comment). Throws ReplayHazard for
  /// a call that cannot be replayed, ExecError for an argument kind it cannot capture or a
  /// call after teardown.
  std::vector<c10::IValue> operator()(std::vector<c10::IValue> args);

  const std::string& name() const { return name_; }
  const ir::CaptureSpec& spec() const { return spec_; }
  const CaptureCall& last_call() const { return last_call_; }
  int64_t calls() const { return calls_; }

 private:
  friend class CapturePool;
  void release();
  void check_argument_kinds(const std::vector<c10::IValue>& args) const;
  void check_replayable(const std::vector<c10::IValue>& args) const;
  void poison_freed_static_buffers();
  bool injected(const char* bug) const;

  std::string name_;
  Executor& executor_;
  const ir::Graph& graph_;
  ir::CaptureSpec spec_;
  std::shared_ptr<CapturePool> pool_;
  std::unique_ptr<GraphCapture> capture_;
  std::vector<bool> is_static_;
  int64_t calls_ = 0;
  CaptureCall last_call_;
  /// From call 2 on: the kept argument buffers (storage aliases of the call-2 arguments),
  /// the addresses recorded then, and the captured outputs.
  std::vector<c10::IValue> buffers_;
  std::vector<const void*> recorded_addresses_;
  std::vector<c10::IValue> outputs_;
};

/// A `cuda` GraphCapture sharing `pool`'s memory pool and stream, and the pool's device
/// resources (captured_graph_cuda.cpp); both throw ExecError in a build without CUDA.
std::unique_ptr<GraphCapture> make_cuda_capture(CapturePool& pool);
std::unique_ptr<CapturePool::DeviceResources> make_cuda_pool_resources();

}  // namespace passcheck::exec
