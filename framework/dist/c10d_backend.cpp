// The c10d backend over a rank's Communicator, and the registration of a rank's groups
// (c10d_backend.h).
#include "framework/dist/c10d_backend.h"

#include "framework/exec/passcheck_ops.h"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/GroupRegistry.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <mutex>
#include <optional>
#include <set>

namespace passcheck::dist {

// What a rank's backends and their pending work share: the communicator, cleared when
// the rank's scope ends.
struct RankGroups::State {
  std::mutex mutex;
  Communicator* communicator = nullptr;
  int64_t rank = 0;
  /// The names this rank registered, with the group each replaced (restored at the end).
  std::vector<std::pair<std::string, std::optional<c10::intrusive_ptr<c10d::ProcessGroup>>>> registered;
  /// c10d's registry holds its groups weakly: the rank owns them.
  std::vector<c10::intrusive_ptr<c10d::ProcessGroup>> groups;

  Communicator& get(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!communicator)
      throw CollectiveError(what + " on rank " + std::to_string(rank) +
                            " after the rank's run ended (its mesh backend is gone)");
    return *communicator;
  }
};

namespace {

ReduceOp from_c10d(const c10d::ReduceOp& op, const std::string& collective) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return ReduceOp::Sum;
    case c10d::ReduceOp::AVG: return ReduceOp::Avg;
    case c10d::ReduceOp::PRODUCT: return ReduceOp::Product;
    case c10d::ReduceOp::MIN: return ReduceOp::Min;
    case c10d::ReduceOp::MAX: return ReduceOp::Max;
    default: break;
  }
  throw std::invalid_argument(collective + ": reduce_op " + std::to_string(static_cast<int>(op.op_)) +
                              " is not supported by passcheck's mesh backends (sum, avg, product, min, max are)");
}

std::string shape(const at::Tensor& t) {
  std::string out = "[";
  for (int64_t d = 0; d < t.dim(); ++d) out += (d ? ", " : "") + std::to_string(t.size(d));
  return out + "]";
}

// A collective in flight: its wait completes every output through the communicator.
class CommunicatorWork : public c10d::Work {
 public:
  CommunicatorWork(std::shared_ptr<RankGroups::State> state, std::vector<at::Tensor> outputs, std::string what)
      : c10d::Work(static_cast<int>(state->rank)), state_(std::move(state)), outputs_(std::move(outputs)),
        what_(std::move(what)) {}

  bool wait(std::chrono::milliseconds /*timeout: the communicator applies the mesh's own*/) override {
    complete();
    return true;
  }
  void synchronize() override { complete(); }
  void blockCurrentStream() override { complete(); }
  bool isCompleted() override { return done_; }
  bool isSuccess() const override { return done_; }
  std::vector<at::Tensor> result() override { return outputs_; }

 private:
  void complete() {
    if (done_) return;
    Communicator& comm = state_->get("waiting for " + what_);
    for (const at::Tensor& out : outputs_) comm.wait(out);
    done_ = true;
  }

  std::shared_ptr<RankGroups::State> state_;
  std::vector<at::Tensor> outputs_;
  std::string what_;
  bool done_ = false;
};

// One group of one rank. Checks what PyTorch's kernels leave to the backend (the group
// size a collective names against the group's), then issues through the communicator.
class CommunicatorBackend : public c10d::Backend {
 public:
  CommunicatorBackend(std::shared_ptr<RankGroups::State> state, Group group)
      : c10d::Backend(static_cast<int>(group.index), static_cast<int>(group.size())), state_(std::move(state)),
        group_(std::move(group)) {}

  const std::string getBackendName() const override { return "passcheck"; }

  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                  std::vector<at::Tensor>& inputs,
                                                                  const c10d::AllgatherOptions&) override {
    const std::string op = "all_gather_into_tensor";
    for (size_t i = 0; i < inputs.size(); ++i) {
      expect_rows(op, outputs[i], inputs[i].dim() ? inputs[i].size(0) * group_.size() : group_.size(), inputs[i]);
      comm(op).all_gather(inputs[i], outputs[i], group_);
    }
    return work(outputs, op);
  }
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& options) override {
    std::vector<at::Tensor> outputs{output}, inputs{input};
    return allgather_into_tensor_coalesced(outputs, inputs, options);
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                  std::vector<at::Tensor>& inputs,
                                                                  const c10d::ReduceScatterOptions& options) override {
    const std::string op = "reduce_scatter_tensor";
    ReduceOp reduce = from_c10d(options.reduceOp, op);
    for (size_t i = 0; i < inputs.size(); ++i) {
      exec::reduce_scatter_result_sizes(inputs[i].sizes().vec(), group_.size());
      expect_rows(op, outputs[i], inputs[i].size(0) / group_.size(), inputs[i]);
      comm(op).reduce_scatter(inputs[i], outputs[i], reduce, group_);
    }
    return work(outputs, op);
  }
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& options) override {
    std::vector<at::Tensor> outputs{output}, inputs{input};
    return reduce_scatter_tensor_coalesced(outputs, inputs, options);
  }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& options) override {
    const std::string op = "all_reduce";
    ReduceOp reduce = from_c10d(options.reduceOp, op);
    for (at::Tensor& t : tensors) comm(op).all_reduce(t, t, reduce, group_);
    return work(tensors, op);
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits, std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions&) override {
    const std::string op = "all_to_all_single";
    for (const auto* splits : {&output_splits, &input_splits})
      if (!splits->empty() && static_cast<int64_t>(splits->size()) != group_.size())
        throw std::invalid_argument("_c10d_functional::" + op + ": " + std::to_string(splits->size()) +
                                    " split sizes for group '" + group_.name + "' of " +
                                    std::to_string(group_.size()) + " members");
    if (input_splits.empty() && (input.dim() == 0 || input.size(0) % group_.size() != 0))
      throw std::invalid_argument("_c10d_functional::" + op + ": equal splits need dim 0 of the input (" +
                                  (input.dim() ? std::to_string(input.size(0)) : std::string("a scalar")) +
                                  ") divisible by the group size " + std::to_string(group_.size()));
    std::vector<int64_t> expected = exec::all_to_all_result_sizes(input.sizes().vec(), output_splits, input_splits);
    if (output.sizes().vec() != expected)
      throw std::invalid_argument("_c10d_functional::" + op + " on group '" + group_.name + "': output " +
                                  shape(output) + " does not match the split sizes");
    comm(op).all_to_all(input, output, output_splits, input_splits, group_);
    std::vector<at::Tensor> outputs{output};
    return work(outputs, op);
  }

 private:
  Communicator& comm(const std::string& op) { return state_->get("_c10d_functional::" + op + " on group '" + group_.name + "'"); }

  // The output PyTorch allocated from the collective's group_size argument must have the
  // rows this group gives: otherwise the graph names a group size the mesh disagrees with.
  void expect_rows(const std::string& op, const at::Tensor& output, int64_t rows, const at::Tensor& input) const {
    int64_t got = output.dim() ? output.size(0) : 1;
    if (got == rows && output.is_contiguous() && input.is_contiguous()) return;
    // PyTorch's kernel sized the output from the group_size argument: name it.
    const int64_t in_rows = input.dim() ? input.size(0) : 1;
    const int64_t said = op == "all_gather_into_tensor" ? (in_rows ? got / in_rows : 0) : (got ? in_rows / got : 0);
    throw std::invalid_argument("_c10d_functional::" + op + ": group '" + group_.name + "' has " +
                                std::to_string(group_.size()) + " members but the collective says group_size " +
                                std::to_string(said) + " (input " + shape(input) + ", output " + shape(output) + ")");
  }

  c10::intrusive_ptr<c10d::Work> work(const std::vector<at::Tensor>& outputs, const std::string& op) {
    return c10::make_intrusive<CommunicatorWork>(state_, outputs, "_c10d_functional::" + op + " on group '" +
                                                                      group_.name + "'");
  }

  std::shared_ptr<RankGroups::State> state_;
  Group group_;
};

// Every group name a mesh defines: each ordered selection of its dims joined by '_'.
void group_names(const DeviceMesh& mesh, std::vector<std::string>& prefix, std::vector<bool>& used,
                 std::vector<std::string>& out) {
  for (size_t d = 0; d < mesh.ndim(); ++d) {
    if (used[d]) continue;
    used[d] = true;
    prefix.push_back(mesh.dims()[d].first);
    std::string name;
    for (const std::string& p : prefix) name += (name.empty() ? "" : "_") + p;
    out.push_back(name);
    group_names(mesh, prefix, used, out);
    prefix.pop_back();
    used[d] = false;
  }
}

std::optional<c10::intrusive_ptr<c10d::ProcessGroup>> registered(const std::string& name) {
  try {
    return c10d::resolve_process_group(name);
  } catch (const c10::Error&) {
    return std::nullopt;
  }
}

}  // namespace

void use_thread_local_group_registry() {
  static std::once_flag once;
  std::call_once(once, [] { c10d::set_thread_isolation_mode(true); });
}

RankGroups::RankGroups(const RankContext& context) : state_(std::make_shared<State>()) {
  use_thread_local_group_registry();
  state_->communicator = context.communicator;
  state_->rank = context.rank;
  if (!context.mesh) return;
  std::vector<std::string> names, prefix;
  std::vector<bool> used(context.mesh->ndim(), false);
  group_names(*context.mesh, prefix, used, names);
  for (const std::string& name : names) {
    Group g = context.resolve(name);
    auto pg = c10::make_intrusive<c10d::ProcessGroup>(static_cast<int>(g.index), static_cast<int>(g.size()));
    auto backend = c10::make_intrusive<CommunicatorBackend>(state_, g);
    for (c10::DeviceType device : {c10::DeviceType::CPU, c10::DeviceType::CUDA})
      pg->setBackend(device, c10d::ProcessGroup::BackendType::CUSTOM, backend);
    pg->setDefaultBackend(c10d::ProcessGroup::BackendType::CUSTOM);
    pg->setGroupName(name);
    state_->registered.emplace_back(name, registered(name));
    if (state_->registered.back().second) c10d::unregister_process_group(name);
    c10d::register_process_group(name, pg);
    state_->groups.push_back(pg);
  }
}

RankGroups::~RankGroups() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->communicator = nullptr;
  }
  for (auto it = state_->registered.rbegin(); it != state_->registered.rend(); ++it) {
    c10d::unregister_process_group(it->first);
    if (it->second) c10d::register_process_group(it->first, *it->second);
  }
  state_->groups.clear();
}

}  // namespace passcheck::dist
