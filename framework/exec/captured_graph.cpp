// The CUDA-graph wrapper, its shared pool and the `replay` backend (captured_graph.h). The
// `cuda` backend lives in captured_graph_cuda.cpp, compiled only in CUDA builds; without
// CUDA, its two factories below refuse with a clear error.
#include "framework/exec/captured_graph.h"

#include "framework/exec/op_properties.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace passcheck::exec {

namespace injected_wrapper_bugs {
const std::vector<std::string>& all() {
  static const std::vector<std::string> names{kSkipNonStaticCopy, kUncheckedStaticAddresses, kSelfComparedAddressCheck};
  return names;
}
}  // namespace injected_wrapper_bugs

const char* to_string(CaptureCall::Phase phase) {
  switch (phase) {
    case CaptureCall::Phase::WarmUp: return "warm-up";
    case CaptureCall::Phase::Capture: return "capture";
    case CaptureCall::Phase::Replay: return "replay";
  }
  return "?";
}

namespace {

std::string address(const void* p) {
  std::ostringstream s;
  s << p;
  return s.str();
}

// Bytes of the distinct storages of the defined tensors in `values`, leaving out those in
// `excluded`.
int64_t storage_bytes(const std::vector<c10::IValue>& values, const std::set<const c10::StorageImpl*>& excluded = {}) {
  std::set<const c10::StorageImpl*> seen = excluded;
  int64_t bytes = 0;
  for (const c10::IValue& v : values) {
    if (!v.isTensor() || !v.toTensor().defined()) continue;
    const c10::Storage& s = v.toTensor().storage();
    if (seen.insert(s.unsafeGetStorageImpl()).second) bytes += static_cast<int64_t>(s.nbytes());
  }
  return bytes;
}

std::string describe_tensor(const at::Tensor& t) {
  std::ostringstream s;
  s << c10::toString(t.scalar_type()) << t.sizes() << " on " << t.device();
  return s.str();
}

std::string scalar_text(const c10::IValue& v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::set<const c10::StorageImpl*> storages_of(const std::vector<c10::IValue>& values) {
  std::set<const c10::StorageImpl*> out;
  for (const c10::IValue& v : values)
    if (v.isTensor() && v.toTensor().defined()) out.insert(v.toTensor().storage().unsafeGetStorageImpl());
  return out;
}

// The CPU model of a CUDA graph. Capture is the plan's run on the kept buffers; a replay
// runs the plan again on those buffers and copies each result storage into the output
// storage the capture left, so whoever holds an output sees it change, as on a GPU.
class ReplayCapture : public GraphCapture {
 public:
  std::vector<c10::IValue> warm_up(Executor& executor, std::vector<c10::IValue> args) override {
    return executor.run(std::move(args));
  }
  std::vector<c10::IValue> capture(Executor& executor, const std::vector<c10::IValue>& buffers) override {
    return executor.run(buffers);
  }
  void replay(Executor& executor, const std::vector<c10::IValue>& buffers,
              const std::vector<c10::IValue>& outputs) override {
    std::vector<c10::IValue> results = executor.run(buffers);
    std::map<c10::StorageImpl*, c10::StorageImpl*> written;  // captured storage -> result storage
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (!outputs[k].isTensor() || !outputs[k].toTensor().defined()) continue;
      const at::Tensor& out = outputs[k].toTensor();
      if (!results[k].isTensor() || !results[k].toTensor().defined())
        throw ExecError("replay: output " + std::to_string(k) + " was a tensor at capture but not now");
      const at::Tensor& res = results[k].toTensor();
      if (out.sizes() != res.sizes() || out.strides() != res.strides() || out.storage_offset() != res.storage_offset() ||
          out.dtype() != res.dtype())
        throw ExecError("replay: output " + std::to_string(k) + " has another layout than at capture");
      c10::StorageImpl* dst = out.storage().unsafeGetStorageImpl();
      c10::StorageImpl* src = res.storage().unsafeGetStorageImpl();
      if (dst == src) continue;  // an alias of a kept buffer: written in place already
      auto [it, fresh] = written.emplace(dst, src);
      if (!fresh) {
        if (it->second != src) throw ExecError("replay: outputs share storage differently than at capture");
        continue;
      }
      if (dst->nbytes() != src->nbytes())
        throw ExecError("replay: output " + std::to_string(k) + "'s storage has another size than at capture");
      if (dst->nbytes() > 0) std::memcpy(dst->mutable_data(), src->data(), dst->nbytes());
    }
  }
  void release() override {}
};

}  // namespace

#ifndef PASSCHECK_WITH_CUDA
std::unique_ptr<GraphCapture> make_cuda_capture(CapturePool&) {
  throw ExecError("cudagraph backend 'cuda' needs a CUDA build of passcheck; this build has none (use backend=replay)");
}
std::unique_ptr<CapturePool::DeviceResources> make_cuda_pool_resources() {
  throw ExecError("cudagraph backend 'cuda' needs a CUDA build of passcheck; this build has none (use backend=replay)");
}
#endif

// ---------------------------------------------------------------------------------------
// CapturePool

CapturePool::CapturePool(ir::CaptureSpec::Backend backend) : backend_(backend) {
  if (backend == ir::CaptureSpec::Backend::Cuda) device_ = make_cuda_pool_resources();
}

CapturePool::~CapturePool() {
  if (!torn_down_) teardown();
}

std::optional<std::string> CapturePool::teardown() {
  if (torn_down_)
    return std::string("cudagraph: the capture pool was already torn down; nothing is released twice");
  torn_down_ = true;
  // Graphs first: they hold blocks of the pool.
  for (CapturedGraph* w : wrappers_) w->release();
  wrappers_.clear();
  if (device_) device_->release();
  return std::nullopt;
}

int64_t CapturePool::pool_bytes() const { return device_ ? device_->reserved_growth() : modelled_bytes_; }

void CapturePool::record_capture(int64_t output_bytes, int64_t peak_bytes, int64_t kept_input_bytes) {
  modelled_bytes_ = std::max(modelled_bytes_, outputs_so_far_ + std::max(peak_bytes, output_bytes));
  outputs_so_far_ += output_bytes;
  unshared_bytes_ += std::max(peak_bytes, output_bytes);
  kept_input_bytes_ += kept_input_bytes;
}

void CapturePool::enroll(CapturedGraph* wrapper) { wrappers_.push_back(wrapper); }

void CapturePool::withdraw(CapturedGraph* wrapper) {
  wrappers_.erase(std::remove(wrappers_.begin(), wrappers_.end(), wrapper), wrappers_.end());
}

// ---------------------------------------------------------------------------------------
// CapturedGraph

CapturedGraph::CapturedGraph(std::string name, Executor& executor, const ir::Graph& graph, ir::CaptureSpec spec,
                             std::shared_ptr<CapturePool> pool)
    : name_(std::move(name)), executor_(executor), graph_(graph), spec_(std::move(spec)), pool_(std::move(pool)) {
  const auto& known = injected_wrapper_bugs::all();
  for (const std::string& bug : spec_.injected_bugs)
    if (std::find(known.begin(), known.end(), bug) == known.end())
      throw ExecError("cudagraph '" + name_ + "': unknown injected wrapper bug '" + bug + "'");
  if (!pool_ || pool_->backend() != spec_.backend)
    throw ExecError("cudagraph '" + name_ + "': the shared pool is for another backend");
  if (pool_->torn_down()) throw ExecError("cudagraph '" + name_ + "': the shared pool was torn down");
  is_static_.assign(graph.inputs().size(), false);
  for (size_t i : spec_.static_inputs) {
    if (i >= is_static_.size())
      throw ExecError("cudagraph '" + name_ + "': static input " + std::to_string(i) + " is out of range (" +
                      std::to_string(is_static_.size()) + " inputs)");
    is_static_[i] = true;
  }
  capture_ = spec_.backend == ir::CaptureSpec::Backend::Cuda ? make_cuda_capture(*pool_)
                                                             : std::unique_ptr<GraphCapture>(new ReplayCapture());
  pool_->enroll(this);
}

CapturedGraph::~CapturedGraph() {
  if (pool_) pool_->withdraw(this);
}

void CapturedGraph::release() {
  if (capture_) capture_->release();
  buffers_.clear();
  outputs_.clear();
  recorded_addresses_.clear();
}

bool CapturedGraph::injected(const char* bug) const {
  return std::find(spec_.injected_bugs.begin(), spec_.injected_bugs.end(), bug) != spec_.injected_bugs.end();
}

void CapturedGraph::check_argument_kinds(const std::vector<c10::IValue>& args) const {
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& a = args[i];
    const std::string what = "cudagraph '" + name_ + "': input " + std::to_string(i) + " (%" +
                             graph_.inputs()[i]->name() + ")";
    if (a.isTensor()) {
      if (!a.toTensor().defined()) throw ExecError(what + " is an undefined tensor; a captured graph needs its buffer");
      if (spec_.backend == ir::CaptureSpec::Backend::Replay && !a.toTensor().device().is_cpu())
        throw ExecError(what + " is on " + a.toTensor().device().str() +
                        "; the replay backend models CUDA graphs on CPU tensors (use backend=cuda on a GPU)");
      continue;
    }
    if (a.isInt() || a.isDouble() || a.isGenerator()) continue;
    throw ExecError(what + " is a " + a.tagKind() +
                    "; a captured graph takes tensors, ints, floats and generators only");
  }
}

void CapturedGraph::check_replayable(const std::vector<c10::IValue>& args) const {
  const bool check_addresses = spec_.check_static_addresses && !injected(injected_wrapper_bugs::kUncheckedStaticAddresses);
  const bool self_compared = injected(injected_wrapper_bugs::kSelfComparedAddressCheck);
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& now = args[i];
    const c10::IValue& kept = buffers_[i];
    const std::string what = "cudagraph '" + name_ + "': input " + std::to_string(i) + " (%" +
                             graph_.inputs()[i]->name() + ")";
    if (kept.isTensor()) {
      if (!now.isTensor() || !now.toTensor().defined())
        throw ReplayHazard(what + " was a tensor at capture and is a " + now.tagKind() + " now");
      const at::Tensor& t = now.toTensor();
      const at::Tensor& b = kept.toTensor();
      if (t.sizes() != b.sizes() || t.dtype() != b.dtype() || t.device() != b.device())
        throw ReplayHazard(what + " is " + describe_tensor(t) + " but was captured as " + describe_tensor(b) +
                           "; a captured graph replays only the shapes it captured");
      if (!is_static_[i] || !check_addresses) continue;
      const void* actual = self_compared ? b.data_ptr() : t.data_ptr();
      if (actual != recorded_addresses_[i])
        throw ReplayHazard(what + " is static but moved from " + address(recorded_addresses_[i]) + " to " +
                           address(actual) + " since capture; the replay would read the stale buffer at " +
                           address(recorded_addresses_[i]));
    } else if (kept.isInt() || kept.isDouble()) {
      bool same = kept.isInt() ? now.isInt() && now.toInt() == kept.toInt()
                               : now.isDouble() && same_bits(now.toDouble(), kept.toDouble());
      if (!same)
        throw ReplayHazard(what + " was " + scalar_text(kept) + " at capture and is " + scalar_text(now) +
                           " now; the captured graph would replay " + scalar_text(kept));
    }
  }
}

std::vector<c10::IValue> CapturedGraph::operator()(std::vector<c10::IValue> args) {
  if (pool_->torn_down()) throw ExecError("cudagraph '" + name_ + "': called after teardown");
  if (args.size() != graph_.inputs().size())
    throw ExecError("cudagraph '" + name_ + "': given " + std::to_string(args.size()) + " inputs, the graph takes " +
                    std::to_string(graph_.inputs().size()));
  ++calls_;
  last_call_ = CaptureCall{};
  if (calls_ == 1) {
    last_call_.phase = CaptureCall::Phase::WarmUp;
    return capture_->warm_up(executor_, std::move(args));
  }
  if (calls_ == 2) {
    check_argument_kinds(args);
    // A capturing CUDA stream refuses a host read of device data; so does the model.
    for (const ir::Node* n : graph_.nodes())
      if (reads_device_data_on_host(n->op_name()) || has_data_dependent_output_shape(n->op_name()))
        throw ExecError("cudagraph '" + name_ + "': " + describe_node(*n) + " reads tensor data on the host (" +
                        n->op_name() + "), which a capturing CUDA stream refuses: the part cannot be captured");
    last_call_.phase = CaptureCall::Phase::Capture;
    // The kept buffers alias the call-2 arguments' storages, not their tensor objects: a
    // caller re-pointing a tensor at new memory leaves the capture reading the old one.
    buffers_.clear();
    recorded_addresses_.clear();
    for (const c10::IValue& a : args) {
      if (a.isTensor()) {
        at::Tensor alias = a.toTensor().alias();
        recorded_addresses_.push_back(alias.data_ptr());
        buffers_.emplace_back(std::move(alias));
      } else {
        recorded_addresses_.push_back(nullptr);
        buffers_.push_back(a);
      }
    }
    outputs_ = capture_->capture(executor_, buffers_);
    std::vector<c10::IValue> non_static;
    for (size_t i = 0; i < buffers_.size(); ++i)
      if (!is_static_[i]) non_static.push_back(buffers_[i]);
    int64_t peak = executor_.last_stats().peak_bytes_above_inputs();
    pool_->record_capture(storage_bytes(outputs_, storages_of(buffers_)), peak, storage_bytes(non_static));
    return outputs_;
  }
  check_replayable(args);
  last_call_.phase = CaptureCall::Phase::Replay;
  bool skipped_one = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (is_static_[i] || !args[i].isTensor()) continue;
    if (injected(injected_wrapper_bugs::kSkipNonStaticCopy) && !skipped_one) {
      skipped_one = true;
      continue;
    }
    at::Tensor buffer = buffers_[i].toTensor();
    const at::Tensor& arg = args[i].toTensor();
    if (buffer.data_ptr() == arg.data_ptr() && buffer.strides() == arg.strides()) continue;  // already there
    buffer.copy_(arg);
    ++last_call_.copies;
    last_call_.copy_bytes += static_cast<int64_t>(arg.nbytes());
  }
  if (spec_.backend == ir::CaptureSpec::Backend::Replay) poison_freed_static_buffers();
  capture_->replay(executor_, buffers_, outputs_);
  return outputs_;
}

void CapturedGraph::poison_freed_static_buffers() {
  // The replay model keeps a static input's captured storage alive through its alias, so
  // a value wrongly marked static would be read back intact, or, if its producer wrote
  // the next value to the same place, read fresh by luck. On a GPU its producer freed the
  // block and the caching allocator may have handed it to anything. When nobody but this
  // wrapper holds the storage any more, it is filled with poison (NaN, or the dtype's
  // largest value) so the replay reads garbage whatever an allocator would have done.
  for (size_t i = 0; i < buffers_.size(); ++i) {
    if (!is_static_[i] || !buffers_[i].isTensor()) continue;
    const at::Tensor& alias = buffers_[i].toTensor();
    if (!alias.defined() || alias.storage().use_count() > 1) continue;
    ++last_call_.poisoned;
    at::NoGradGuard no_grad;  // the alias of a parameter requires grad; the poison is not part of any graph
    at::Tensor kept = alias.detach();
    if (at::isFloatingType(kept.scalar_type()) || at::isComplexType(kept.scalar_type()))
      kept.fill_(std::numeric_limits<double>::quiet_NaN());
    else if (kept.scalar_type() == at::kBool)
      kept.fill_(true);
    else
      kept.fill_(c10::Scalar(int64_t{-1}));
  }
}

}  // namespace passcheck::exec
