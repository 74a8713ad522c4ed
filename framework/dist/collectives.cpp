// The C++ calls of PyTorch's functional collectives (collectives.h) with their autograd
// formulas, and the per-thread rank context that registers a rank's c10d groups.
#include "framework/dist/collectives.h"

#include "framework/dist/c10d_backend.h"
#include "framework/exec/passcheck_ops.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <map>
#include <mutex>

#include <algorithm>
#include <stdexcept>

namespace passcheck::dist {

// ---- reduce ops, calls, rank context ---------------------------------------------------

std::string exception_message(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

ReduceOp parse_reduce_op(const std::string& name) {
  if (name == "sum") return ReduceOp::Sum;
  if (name == "avg") return ReduceOp::Avg;
  if (name == "product") return ReduceOp::Product;
  if (name == "min") return ReduceOp::Min;
  if (name == "max") return ReduceOp::Max;
  throw std::invalid_argument("unknown reduce_op '" + name + "' (valid: sum, avg, product, min, max)");
}

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::Product: return "product";
    case ReduceOp::Min: return "min";
    case ReduceOp::Max: return "max";
  }
  return "?";
}

namespace {

std::string format_list(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

thread_local const RankContext* t_current_rank = nullptr;

}  // namespace

CollectiveCall CollectiveCall::of(const char* op, const at::Tensor& input, const Group& group) {
  CollectiveCall c;
  c.op = op;
  c.group = group.name;
  c.sizes = input.sizes().vec();
  c.dtype = c10::toString(input.scalar_type());
  return c;
}

std::string CollectiveCall::str() const {
  std::string out = op + "(" + dtype + format_list(sizes);
  if (!reduce_op.empty()) out += ", " + reduce_op;
  if (!output_splits.empty() || !input_splits.empty())
    out += ", out splits " + format_list(output_splits) + ", in splits " + format_list(input_splits);
  return out + ", group " + group + ")";
}

bool CollectiveCall::matches(const CollectiveCall& o) const {
  if (op != o.op || group != o.group || reduce_op != o.reduce_op || dtype != o.dtype) return false;
  // all_to_all moves rows of different counts per rank; everything else works on
  // tensors of one shape across the group.
  if (op == "all_to_all_single") return sizes.size() == o.sizes.size() &&
                                        std::equal(sizes.begin() + 1, sizes.end(), o.sizes.begin() + 1);
  return sizes == o.sizes;
}

Group RankContext::resolve(const std::string& group_name, int64_t expected_size) const {
  if (!mesh) throw std::logic_error("rank " + std::to_string(rank) + " has no device mesh");
  Group g;
  g.name = group_name;
  g.members = mesh->group_members(group_name, rank);
  g.index = std::find(g.members.begin(), g.members.end(), rank) - g.members.begin();
  if (expected_size >= 0 && expected_size != g.size())
    throw std::invalid_argument("group '" + group_name + "' of mesh " + mesh->str() + " has " +
                                std::to_string(g.size()) + " members but the collective says group_size " +
                                std::to_string(expected_size));
  return g;
}

const RankContext& current_rank() {
  if (!t_current_rank)
    throw std::logic_error("a collective ran outside a distributed run: no rank is installed on this thread "
                           "(run it under a mesh backend: sim, gloo or nccl)");
  return *t_current_rank;
}

const RankContext* current_rank_or_null() { return t_current_rank; }

RankScope::RankScope(RankContext context) : context_(std::move(context)), previous_(t_current_rank) {
  if (!context_.communicator) throw std::logic_error("RankScope needs a communicator");
  groups_ = std::make_unique<RankGroups>(context_);
  t_current_rank = &context_;
}

RankScope::~RankScope() {
  groups_.reset();
  t_current_rank = previous_;
}

void MetaOnlyCommunicator::refuse(const char* op, const Group& group) const {
  throw std::logic_error(std::string(op) + " on group '" + group.name + "' reached rank " + std::to_string(rank_) +
                         "'s communicator, but this rank is only traced on the meta device (no backend)");
}
void MetaOnlyCommunicator::all_gather(const at::Tensor&, const at::Tensor&, const Group& g) {
  refuse("all_gather_into_tensor", g);
}
void MetaOnlyCommunicator::reduce_scatter(const at::Tensor&, const at::Tensor&, ReduceOp, const Group& g) {
  refuse("reduce_scatter_tensor", g);
}
void MetaOnlyCommunicator::all_reduce(const at::Tensor&, const at::Tensor&, ReduceOp, const Group& g) {
  refuse("all_reduce", g);
}
void MetaOnlyCommunicator::all_to_all(const at::Tensor&, const at::Tensor&, const std::vector<int64_t>&,
                                      const std::vector<int64_t>&, const Group& g) {
  refuse("all_to_all_single", g);
}

// ---- autograd --------------------------------------------------------------------------

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

c10::OperatorHandle op_handle(const char* name) {
  auto handle = c10::Dispatcher::singleton().findSchema({std::string("_c10d_functional::") + name, ""});
  if (!handle) throw std::logic_error(std::string("_c10d_functional::") + name + " is not registered in this LibTorch");
  return *handle;
}

// The operators themselves, through the dispatcher (so the tracer records them), boxed:
// their group argument is `str` in torch 2.11 and `Any` in 2.15, and a name fits both. A
// custom Function's forward runs with grad mode off, so these see no autograd.
at::Tensor call_boxed(const char* name, std::vector<c10::IValue> args) {
  static std::mutex mutex;
  static std::map<std::string, c10::OperatorHandle> handles;
  c10::OperatorHandle op = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = handles.find(name);
    if (it == handles.end()) it = handles.emplace(name, op_handle(name)).first;
    return it->second;
  }();
  torch::jit::Stack stack(std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
  op.callBoxed(&stack);
  return stack.back().toTensor();
}

c10::IValue splits(const std::vector<int64_t>& sizes) {
  c10::List<int64_t> list;
  for (int64_t s : sizes) list.push_back(s);
  return c10::IValue(list);
}

at::Tensor call_all_gather(const at::Tensor& input, int64_t group_size, const std::string& group_name) {
  return call_boxed("all_gather_into_tensor", {input.contiguous(), group_size, group_name});
}
at::Tensor call_reduce_scatter(const at::Tensor& input, const std::string& reduce_op, int64_t group_size,
                               const std::string& group_name) {
  return call_boxed("reduce_scatter_tensor", {input.contiguous(), reduce_op, group_size, group_name});
}
at::Tensor call_all_reduce(const at::Tensor& input, const std::string& reduce_op, const std::string& group_name) {
  return call_boxed("all_reduce", {input, reduce_op, group_name});
}
at::Tensor call_all_to_all(const at::Tensor& input, const std::vector<int64_t>& output_splits,
                           const std::vector<int64_t>& input_splits, const std::string& group_name) {
  return call_boxed("all_to_all_single", {input.contiguous(), splits(output_splits), splits(input_splits), group_name});
}
at::Tensor call_wait(const at::Tensor& t) { return call_boxed("wait_tensor", {t}); }

// Calls below autograd (the op's CPU/CUDA kernel), as an autograd kernel must.
struct BelowAutograd {
  at::AutoDispatchBelowADInplaceOrView guard;
};

class AllGatherFunction : public torch::autograd::Function<AllGatherFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, int64_t group_size,
                            const std::string& group_name) {
    ctx->saved_data["n"] = group_size;
    ctx->saved_data["g"] = group_name;
    BelowAutograd below;
    return call_all_gather(input, group_size, group_name);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    int64_t n = ctx->saved_data["n"].toInt();
    std::string g = ctx->saved_data["g"].toStringRef();
    return {call_wait(call_reduce_scatter(grads[0], "sum", n, g)), at::Tensor(), at::Tensor()};
  }
};

class ReduceScatterFunction : public torch::autograd::Function<ReduceScatterFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const std::string& reduce_op,
                            int64_t group_size, const std::string& group_name) {
    ctx->saved_data["op"] = reduce_op;
    ctx->saved_data["n"] = group_size;
    ctx->saved_data["g"] = group_name;
    BelowAutograd below;
    return call_reduce_scatter(input, reduce_op, group_size, group_name);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    std::string op = ctx->saved_data["op"].toStringRef();
    int64_t n = ctx->saved_data["n"].toInt();
    if (op != "sum" && op != "avg")
      throw std::invalid_argument("reduce_scatter_tensor with reduce_op '" + op +
                                  "' is not differentiable (sum and avg are)");
    at::Tensor g = call_wait(call_all_gather(grads[0], n, ctx->saved_data["g"].toStringRef()));
    if (op == "avg") g = g.div(n);
    return {g, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class AllReduceFunction : public torch::autograd::Function<AllReduceFunction> {
 public:
  static at::Tensor forward(AutogradContext*, const at::Tensor& input, const std::string& reduce_op,
                            const std::string& group_name) {
    BelowAutograd below;
    return call_all_reduce(input, reduce_op, group_name);
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0], at::Tensor(), at::Tensor()}; }
};

class AllToAllFunction : public torch::autograd::Function<AllToAllFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const std::vector<int64_t>& output_splits,
                            const std::vector<int64_t>& input_splits, const std::string& group_name) {
    ctx->saved_data["out"] = output_splits;
    ctx->saved_data["in"] = input_splits;
    ctx->saved_data["g"] = group_name;
    BelowAutograd below;
    return call_all_to_all(input, output_splits, input_splits, group_name);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    std::vector<int64_t> out = ctx->saved_data["out"].toIntVector(), in = ctx->saved_data["in"].toIntVector();
    // The gradient travels back: what a rank received it returns, what it sent it gets back.
    return {call_wait(call_all_to_all(grads[0], in, out, ctx->saved_data["g"].toStringRef())), at::Tensor(),
            at::Tensor(), at::Tensor()};
  }
};

class WaitFunction : public torch::autograd::Function<WaitFunction> {
 public:
  static at::Tensor forward(AutogradContext*, const at::Tensor& t) {
    BelowAutograd below;
    return call_wait(t);
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0]}; }
};

class CopyToGroupFunction : public torch::autograd::Function<CopyToGroupFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const std::string& group_name,
                            const std::string& reduce_op) {
    ctx->saved_data["g"] = group_name;
    ctx->saved_data["op"] = reduce_op;
    return input;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {call_wait(call_all_reduce(grads[0], ctx->saved_data["op"].toStringRef(), ctx->saved_data["g"].toStringRef())),
            at::Tensor(), at::Tensor()};
  }
};

// The split sizes the graph carries: PyTorch's all_to_all_single takes them explicitly
// (its output has the rows they add up to), so equal splits are spelled out.
std::vector<int64_t> explicit_splits(const std::vector<int64_t>& splits, int64_t rows, const std::string& group_name) {
  if (!splits.empty()) return splits;
  const int64_t n = group_size(group_name);
  if (n <= 0 || rows % n != 0)
    throw std::invalid_argument("all_to_all_single: equal splits need dim 0 of the input (" + std::to_string(rows) +
                                ") divisible by the size " + std::to_string(n) + " of group '" + group_name + "'");
  return std::vector<int64_t>(n, rows / n);
}

// ---- autograd kernels --------------------------------------------------------------------
//
// The formulas are registered as the operators' Autograd kernels, below the tracer's mode
// key: the tracer records the operator a program calls, and the backward's operators
// when the engine runs the formula, exactly as make_fx records PyTorch's own autograd
// wrappers. The kernels are boxed: the group argument is `str` in torch 2.11 and `Any` in
// 2.15, and only a group name (not a ProcessGroup object) has a meaning here.

std::string group_argument(const c10::IValue& v, const char* op) {
  if (!v.isString())
    throw std::invalid_argument(std::string("_c10d_functional::") + op +
                                ": passcheck's meshes name groups by string; got a " + v.tagKind());
  return v.toStringRef();
}

std::vector<int64_t> split_argument(const c10::IValue& v) {
  std::vector<int64_t> out;
  for (const c10::IValue& e : v.toListRef()) out.push_back(e.isSymInt() ? e.toSymInt().expect_int() : e.toInt());
  return out;
}

// Pops the operator's arguments, pushes f(arguments).
template <typename F>
void boxed_autograd(const c10::OperatorHandle& op, torch::jit::Stack* stack, F f) {
  const size_t n = op.schema().arguments().size();
  std::vector<c10::IValue> args(stack->end() - static_cast<std::ptrdiff_t>(n), stack->end());
  torch::jit::drop(*stack, n);
  torch::jit::push(*stack, f(args));
}

void all_gather_autograd(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  boxed_autograd(op, stack, [](const std::vector<c10::IValue>& a) {
    return AllGatherFunction::apply(a[0].toTensor(), a[1].toInt(), group_argument(a[2], "all_gather_into_tensor"));
  });
}
void reduce_scatter_autograd(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  boxed_autograd(op, stack, [](const std::vector<c10::IValue>& a) {
    return ReduceScatterFunction::apply(a[0].toTensor(), a[1].toStringRef(), a[2].toInt(),
                                        group_argument(a[3], "reduce_scatter_tensor"));
  });
}
void all_reduce_autograd(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  boxed_autograd(op, stack, [](const std::vector<c10::IValue>& a) {
    if (!a[1].isString()) throw std::invalid_argument("_c10d_functional::all_reduce: reduce_op must be a string");
    return AllReduceFunction::apply(a[0].toTensor(), a[1].toStringRef(), group_argument(a[2], "all_reduce"));
  });
}
void all_to_all_autograd(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  boxed_autograd(op, stack, [](const std::vector<c10::IValue>& a) {
    return AllToAllFunction::apply(a[0].toTensor(), split_argument(a[1]), split_argument(a[2]),
                                   group_argument(a[3], "all_to_all_single"));
  });
}
void wait_autograd(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  boxed_autograd(op, stack, [](const std::vector<c10::IValue>& a) { return WaitFunction::apply(a[0].toTensor()); });
}

}  // namespace

// ---- calls ------------------------------------------------------------------------------
// Each resolves the group first, so a name the mesh lacks or a group_size it disagrees
// with is reported in the mesh's words before LibTorch's kernel runs.

at::Tensor all_gather_into_tensor(const at::Tensor& input, int64_t group_size, const std::string& group_name) {
  current_rank().resolve(group_name, group_size);
  return call_all_gather(input, group_size, group_name);
}

at::Tensor reduce_scatter_tensor(const at::Tensor& input, const std::string& reduce_op, int64_t group_size,
                                 const std::string& group_name) {
  parse_reduce_op(reduce_op);
  current_rank().resolve(group_name, group_size);
  return call_reduce_scatter(input, reduce_op, group_size, group_name);
}

at::Tensor all_reduce(const at::Tensor& input, const std::string& reduce_op, const std::string& group_name) {
  parse_reduce_op(reduce_op);
  current_rank().resolve(group_name);
  return call_all_reduce(input, reduce_op, group_name);
}

at::Tensor all_to_all_single(const at::Tensor& input, const std::vector<int64_t>& output_split_sizes,
                             const std::vector<int64_t>& input_split_sizes, const std::string& group_name) {
  const int64_t rows = input.dim() ? input.size(0) : 0;
  std::vector<int64_t> in = explicit_splits(input_split_sizes, rows, group_name);
  std::vector<int64_t> out = explicit_splits(output_split_sizes, rows, group_name);
  return call_all_to_all(input, out, in, group_name);
}

at::Tensor wait_tensor(const at::Tensor& tensor) { return call_wait(tensor); }

int64_t group_size(const std::string& group_name) { return current_rank().resolve(group_name).size(); }
int64_t group_index(const std::string& group_name) { return current_rank().resolve(group_name).index; }

at::Tensor copy_to_group(const at::Tensor& input, const std::string& group_name, const std::string& reduce_op) {
  parse_reduce_op(reduce_op);  // an unknown op is an error here, not in the backward
  return CopyToGroupFunction::apply(input, group_name, reduce_op);
}

}  // namespace passcheck::dist

TORCH_LIBRARY_IMPL(_c10d_functional, Autograd, m) {
  m.impl("all_gather_into_tensor", torch::CppFunction::makeFromBoxedFunction<&passcheck::dist::all_gather_autograd>());
  m.impl("reduce_scatter_tensor", torch::CppFunction::makeFromBoxedFunction<&passcheck::dist::reduce_scatter_autograd>());
  m.impl("all_reduce", torch::CppFunction::makeFromBoxedFunction<&passcheck::dist::all_reduce_autograd>());
  m.impl("all_to_all_single", torch::CppFunction::makeFromBoxedFunction<&passcheck::dist::all_to_all_autograd>());
  m.impl("wait_tensor", torch::CppFunction::makeFromBoxedFunction<&passcheck::dist::wait_autograd>());
}
