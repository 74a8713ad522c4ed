// The one interface every mesh backend implements (sim: ranks as threads of one process;
// gloo / nccl: c10d process groups), and the per-thread rank context. A rank's model
// code and the executor call PyTorch's functional collectives (_c10d_functional::*),
// which resolve their group name in c10d's group registry; a RankScope registers there,
// for every group of the rank's mesh, a c10d process group whose backend hands the
// collective to the rank's Communicator (framework/dist/c10d_backend.h).
#pragma once

#include "framework/dist/mesh.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace passcheck::dist {

/// A collective that could not complete: ranks that disagree on the collective, a rank
/// that died or did not arrive within the timeout, a transport error. The message names
/// the rank(s) and the collective.
class CollectiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An exception's message, without the C++ backtrace LibTorch appends to its own errors
/// (a collective that fails inside LibTorch's kernels throws a c10::Error).
std::string exception_message(const std::exception& e);

/// Reduce operations of the functional collectives ("sum", "avg", "product", "min", "max").
enum class ReduceOp { Sum, Avg, Product, Min, Max };
/// Parses a reduce_op string; throws std::invalid_argument listing the valid names.
ReduceOp parse_reduce_op(const std::string& name);
const char* to_string(ReduceOp op);

/// A resolved group: its name, its members (global ranks, in group order) and the
/// caller's index among them.
struct Group {
  std::string name;
  std::vector<int64_t> members;
  int64_t index = 0;
  int64_t size() const { return static_cast<int64_t>(members.size()); }
};

/// What ranks must agree on for a collective to be matched: printed in mismatch errors.
struct CollectiveCall {
  std::string op;  ///< "all_gather_into_tensor", ...
  std::string group;
  std::string reduce_op;  ///< empty when the op has none
  std::vector<int64_t> sizes;
  std::string dtype;
  std::vector<int64_t> output_splits, input_splits;
  /// The call of `op` on `input` over `group` (reduce op and splits left empty).
  static CollectiveCall of(const char* op, const at::Tensor& input, const Group& group);
  /// "all_gather_into_tensor(f32[4, 8], group dp)".
  std::string str() const;
  /// The parts every member must agree on (op, group, reduce op, dtype; sizes for
  /// the gathers and reductions).
  bool matches(const CollectiveCall& other) const;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string backend() const = 0;
  virtual int64_t rank() const = 0;
  virtual int64_t world_size() const = 0;
  /// Each call starts a collective that writes `output` (contiguous, of the result's
  /// shape, allocated by the caller: PyTorch's functional collectives allocate it) and
  /// returns at once. `output` is defined only after wait(output): sim poisons it until
  /// then, so a graph that reads a result before its wait reads poison. `input` may be
  /// `output` itself (an in-place all_reduce); it is read at the call. Arguments are
  /// validated by the caller.
  virtual void all_gather(const at::Tensor& input, const at::Tensor& output, const Group& group) = 0;
  virtual void reduce_scatter(const at::Tensor& input, const at::Tensor& output, ReduceOp op, const Group& group) = 0;
  virtual void all_reduce(const at::Tensor& input, const at::Tensor& output, ReduceOp op, const Group& group) = 0;
  /// Empty split lists mean equal splits of dim 0 over the group.
  virtual void all_to_all(const at::Tensor& input, const at::Tensor& output, const std::vector<int64_t>& output_splits,
                          const std::vector<int64_t>& input_splits, const Group& group) = 0;
  /// Completes the collective writing `output` (no-op for a tensor that is not a
  /// pending output, so waiting twice is harmless).
  virtual void wait(const at::Tensor& output) = 0;
  /// Completes every collective still pending (end of a step).
  virtual void wait_all() = 0;
};

/// The communicator of a rank that is only traced on the meta device (`passcheck trace
/// --rank R`): meta tensors never reach a backend (the collectives' Meta kernels compute
/// shapes only), so any call is an error naming it.
class MetaOnlyCommunicator : public Communicator {
 public:
  MetaOnlyCommunicator(int64_t rank, int64_t world_size) : rank_(rank), world_size_(world_size) {}
  std::string backend() const override { return "meta"; }
  int64_t rank() const override { return rank_; }
  int64_t world_size() const override { return world_size_; }
  void all_gather(const at::Tensor& input, const at::Tensor& output, const Group& group) override;
  void reduce_scatter(const at::Tensor& input, const at::Tensor& output, ReduceOp op, const Group& group) override;
  void all_reduce(const at::Tensor& input, const at::Tensor& output, ReduceOp op, const Group& group) override;
  void all_to_all(const at::Tensor& input, const at::Tensor& output, const std::vector<int64_t>& output_splits,
                  const std::vector<int64_t>& input_splits, const Group& group) override;
  void wait(const at::Tensor&) override {}
  void wait_all() override {}

 private:
  [[noreturn]] void refuse(const char* op, const Group& group) const;
  int64_t rank_, world_size_;
};

/// The rank a thread runs as: its mesh, its rank and its communicator.
struct RankContext {
  std::shared_ptr<const DeviceMesh> mesh;
  int64_t rank = 0;
  Communicator* communicator = nullptr;
  /// Resolves `group_name` for this rank; when `expected_size` >= 0, checks the group
  /// has that many members. Throws std::invalid_argument naming the group.
  Group resolve(const std::string& group_name, int64_t expected_size = -1) const;
};

/// The calling thread's rank context; throws std::logic_error ("collective outside a
/// distributed run") when none is installed.
const RankContext& current_rank();
/// Null when the thread runs no rank.
const RankContext* current_rank_or_null();

class RankGroups;

/// Installs a rank context on the calling thread for its lifetime (restores the previous
/// one): the context itself, and a c10d process group per group of its mesh, registered
/// under the group's name, so _c10d_functional collectives on this thread reach the
/// rank's communicator.
class RankScope {
 public:
  explicit RankScope(RankContext context);
  ~RankScope();
  RankScope(const RankScope&) = delete;
  RankScope& operator=(const RankScope&) = delete;

 private:
  RankContext context_;
  const RankContext* previous_;
  std::unique_ptr<RankGroups> groups_;
};

}  // namespace passcheck::dist
