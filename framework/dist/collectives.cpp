// Kernels of the passcheck:: collective operators (CPU and CUDA: resolve the group
// against the calling rank's mesh, validate, hand over to the rank's Communicator),
// their autograd formulas (collectives.h), the per-thread rank context, and the C++
// calls through the dispatcher.
#include "framework/dist/collectives.h"

#include "framework/exec/passcheck_ops.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <algorithm>
#include <stdexcept>

namespace passcheck::dist {

// ---- reduce ops, calls, rank context ---------------------------------------------------

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
  ensure_collectives_registered();
  if (!context_.communicator) throw std::logic_error("RankScope needs a communicator");
  t_current_rank = &context_;
}

RankScope::~RankScope() { t_current_rank = previous_; }

void MetaOnlyCommunicator::refuse(const char* op, const Group& group) const {
  throw std::logic_error(std::string(op) + " on group '" + group.name + "' reached rank " + std::to_string(rank_) +
                         "'s communicator, but this rank is only traced on the meta device (no backend)");
}
at::Tensor MetaOnlyCommunicator::all_gather(const at::Tensor&, const Group& g) { refuse("all_gather_into_tensor", g); }
at::Tensor MetaOnlyCommunicator::reduce_scatter(const at::Tensor&, ReduceOp, const Group& g) {
  refuse("reduce_scatter_tensor", g);
}
at::Tensor MetaOnlyCommunicator::all_reduce(const at::Tensor&, ReduceOp, const Group& g) { refuse("all_reduce", g); }
at::Tensor MetaOnlyCommunicator::all_to_all(const at::Tensor&, const std::vector<int64_t>&, const std::vector<int64_t>&,
                                            const Group& g) {
  refuse("all_to_all_single", g);
}

// ---- kernels ---------------------------------------------------------------------------

namespace {

Communicator& communicator() { return *current_rank().communicator; }

at::Tensor all_gather_kernel(const at::Tensor& input, int64_t group_size, c10::string_view group_name) {
  Group g = current_rank().resolve(std::string(group_name), group_size);
  exec::all_gather_result_sizes(input.sizes().vec(), group_size);
  return communicator().all_gather(input.contiguous(), g);
}

at::Tensor reduce_scatter_kernel(const at::Tensor& input, c10::string_view reduce_op, int64_t group_size,
                                 c10::string_view group_name) {
  ReduceOp op = parse_reduce_op(std::string(reduce_op));
  Group g = current_rank().resolve(std::string(group_name), group_size);
  exec::reduce_scatter_result_sizes(input.sizes().vec(), group_size);
  return communicator().reduce_scatter(input.contiguous(), op, g);
}

at::Tensor all_reduce_kernel(const at::Tensor& input, c10::string_view reduce_op, c10::string_view group_name) {
  ReduceOp op = parse_reduce_op(std::string(reduce_op));
  Group g = current_rank().resolve(std::string(group_name));
  return communicator().all_reduce(input.contiguous(), op, g);
}

at::Tensor all_to_all_kernel(const at::Tensor& input, at::IntArrayRef output_splits, at::IntArrayRef input_splits,
                             c10::string_view group_name) {
  Group g = current_rank().resolve(std::string(group_name));
  std::vector<int64_t> out(output_splits.begin(), output_splits.end()), in(input_splits.begin(), input_splits.end());
  for (const auto* splits : {&out, &in})
    if (!splits->empty() && static_cast<int64_t>(splits->size()) != g.size())
      throw std::invalid_argument("passcheck::all_to_all_single: " + std::to_string(splits->size()) +
                                  " split sizes for group '" + g.name + "' of " + std::to_string(g.size()) +
                                  " members");
  if (in.empty() && (input.dim() == 0 || input.size(0) % g.size() != 0))
    throw std::invalid_argument("passcheck::all_to_all_single: equal splits need dim 0 of the input (" +
                                (input.dim() ? std::to_string(input.size(0)) : std::string("a scalar")) +
                                ") divisible by the group size " + std::to_string(g.size()));
  exec::all_to_all_result_sizes(input.sizes().vec(), out, in);
  return communicator().all_to_all(input.contiguous(), out, in, g);
}

at::Tensor wait_tensor_kernel(const at::Tensor& t) {
  communicator().wait(t);
  return t;
}

// ---- autograd --------------------------------------------------------------------------

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Calls below autograd (the kernels above), as an autograd kernel must.
template <typename F>
at::Tensor below_autograd(F&& f) {
  at::AutoDispatchBelowADInplaceOrView guard;
  return f();
}

class AllGatherFunction : public torch::autograd::Function<AllGatherFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, int64_t group_size,
                            c10::string_view group_name) {
    ctx->saved_data["n"] = group_size;
    ctx->saved_data["g"] = std::string(group_name);
    return below_autograd([&] { return all_gather_into_tensor(input, group_size, std::string(group_name)); });
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    int64_t n = ctx->saved_data["n"].toInt();
    std::string g = ctx->saved_data["g"].toStringRef();
    return {wait_tensor(reduce_scatter_tensor(grads[0], "sum", n, g)), at::Tensor(), at::Tensor()};
  }
};

class ReduceScatterFunction : public torch::autograd::Function<ReduceScatterFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, c10::string_view reduce_op,
                            int64_t group_size, c10::string_view group_name) {
    ctx->saved_data["op"] = std::string(reduce_op);
    ctx->saved_data["n"] = group_size;
    ctx->saved_data["g"] = std::string(group_name);
    return below_autograd(
        [&] { return reduce_scatter_tensor(input, std::string(reduce_op), group_size, std::string(group_name)); });
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    std::string op = ctx->saved_data["op"].toStringRef();
    int64_t n = ctx->saved_data["n"].toInt();
    if (op != "sum" && op != "avg")
      throw std::invalid_argument("passcheck::reduce_scatter_tensor with reduce_op '" + op +
                                  "' is not differentiable (sum and avg are)");
    at::Tensor g = wait_tensor(all_gather_into_tensor(grads[0], n, ctx->saved_data["g"].toStringRef()));
    if (op == "avg") g = g.div(n);
    return {g, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class AllReduceFunction : public torch::autograd::Function<AllReduceFunction> {
 public:
  static at::Tensor forward(AutogradContext*, const at::Tensor& input, c10::string_view reduce_op,
                            c10::string_view group_name) {
    return below_autograd([&] { return all_reduce(input, std::string(reduce_op), std::string(group_name)); });
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0], at::Tensor(), at::Tensor()}; }
};

class AllToAllFunction : public torch::autograd::Function<AllToAllFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, at::IntArrayRef output_splits,
                            at::IntArrayRef input_splits, c10::string_view group_name) {
    ctx->saved_data["out"] = output_splits.vec();
    ctx->saved_data["in"] = input_splits.vec();
    ctx->saved_data["g"] = std::string(group_name);
    return below_autograd([&] {
      return all_to_all_single(input, output_splits.vec(), input_splits.vec(), std::string(group_name));
    });
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    std::vector<int64_t> out = ctx->saved_data["out"].toIntVector(), in = ctx->saved_data["in"].toIntVector();
    // The gradient travels back: what a rank received it returns, what it sent it gets back.
    return {wait_tensor(all_to_all_single(grads[0], in, out, ctx->saved_data["g"].toStringRef())), at::Tensor(),
            at::Tensor(), at::Tensor()};
  }
};

class WaitFunction : public torch::autograd::Function<WaitFunction> {
 public:
  static at::Tensor forward(AutogradContext*, const at::Tensor& t) {
    return below_autograd([&] { return wait_tensor(t); });
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
    return {wait_tensor(all_reduce(grads[0], ctx->saved_data["op"].toStringRef(), ctx->saved_data["g"].toStringRef())),
            at::Tensor(), at::Tensor()};
  }
};

c10::OperatorHandle op_handle(const char* name) {
  exec::ensure_passcheck_ops_registered();
  auto handle = c10::Dispatcher::singleton().findSchema({std::string("passcheck::") + name, ""});
  if (!handle) throw std::logic_error(std::string("passcheck::") + name + " is not registered");
  return *handle;
}

}  // namespace

void ensure_collectives_registered() {
  // Referencing this function keeps this object file (and its TORCH_LIBRARY_IMPL blocks)
  // in every binary that installs a rank.
}

// ---- calls through the dispatcher ---------------------------------------------------------

at::Tensor all_gather_into_tensor(const at::Tensor& input, int64_t group_size, const std::string& group_name) {
  static const c10::OperatorHandle op = op_handle("all_gather_into_tensor");
  return op.typed<at::Tensor(const at::Tensor&, int64_t, c10::string_view)>().call(input, group_size, group_name);
}

at::Tensor reduce_scatter_tensor(const at::Tensor& input, const std::string& reduce_op, int64_t group_size,
                                 const std::string& group_name) {
  static const c10::OperatorHandle op = op_handle("reduce_scatter_tensor");
  return op.typed<at::Tensor(const at::Tensor&, c10::string_view, int64_t, c10::string_view)>().call(
      input, reduce_op, group_size, group_name);
}

at::Tensor all_reduce(const at::Tensor& input, const std::string& reduce_op, const std::string& group_name) {
  static const c10::OperatorHandle op = op_handle("all_reduce");
  return op.typed<at::Tensor(const at::Tensor&, c10::string_view, c10::string_view)>().call(input, reduce_op,
                                                                                            group_name);
}

at::Tensor all_to_all_single(const at::Tensor& input, const std::vector<int64_t>& output_split_sizes,
                             const std::vector<int64_t>& input_split_sizes, const std::string& group_name) {
  static const c10::OperatorHandle op = op_handle("all_to_all_single");
  return op.typed<at::Tensor(const at::Tensor&, at::IntArrayRef, at::IntArrayRef, c10::string_view)>().call(
      input, output_split_sizes, input_split_sizes, group_name);
}

at::Tensor wait_tensor(const at::Tensor& tensor) {
  static const c10::OperatorHandle op = op_handle("wait_tensor");
  return op.typed<at::Tensor(const at::Tensor&)>().call(tensor);
}

int64_t group_size(const std::string& group_name) { return current_rank().resolve(group_name).size(); }
int64_t group_index(const std::string& group_name) { return current_rank().resolve(group_name).index; }

at::Tensor copy_to_group(const at::Tensor& input, const std::string& group_name, const std::string& reduce_op) {
  parse_reduce_op(reduce_op);  // an unknown op is an error here, not in the backward
  return CopyToGroupFunction::apply(input, group_name, reduce_op);
}

}  // namespace passcheck::dist

TORCH_LIBRARY_IMPL(passcheck, CPU, m) {
  m.impl("all_gather_into_tensor", &passcheck::dist::all_gather_kernel);
  m.impl("reduce_scatter_tensor", &passcheck::dist::reduce_scatter_kernel);
  m.impl("all_reduce", &passcheck::dist::all_reduce_kernel);
  m.impl("all_to_all_single", &passcheck::dist::all_to_all_kernel);
  m.impl("wait_tensor", &passcheck::dist::wait_tensor_kernel);
}

TORCH_LIBRARY_IMPL(passcheck, CUDA, m) {
  m.impl("all_gather_into_tensor", &passcheck::dist::all_gather_kernel);
  m.impl("reduce_scatter_tensor", &passcheck::dist::reduce_scatter_kernel);
  m.impl("all_reduce", &passcheck::dist::all_reduce_kernel);
  m.impl("all_to_all_single", &passcheck::dist::all_to_all_kernel);
  m.impl("wait_tensor", &passcheck::dist::wait_tensor_kernel);
}

TORCH_LIBRARY_IMPL(passcheck, Autograd, m) {
  m.impl("all_gather_into_tensor", [](const at::Tensor& input, int64_t n, c10::string_view g) {
    return passcheck::dist::AllGatherFunction::apply(input, n, g);
  });
  m.impl("reduce_scatter_tensor", [](const at::Tensor& input, c10::string_view op, int64_t n, c10::string_view g) {
    return passcheck::dist::ReduceScatterFunction::apply(input, op, n, g);
  });
  m.impl("all_reduce", [](const at::Tensor& input, c10::string_view op, c10::string_view g) {
    return passcheck::dist::AllReduceFunction::apply(input, op, g);
  });
  m.impl("all_to_all_single",
         [](const at::Tensor& input, at::IntArrayRef out, at::IntArrayRef in, c10::string_view g) {
           return passcheck::dist::AllToAllFunction::apply(input, out, in, g);
         });
  m.impl("wait_tensor", [](const at::Tensor& t) { return passcheck::dist::WaitFunction::apply(t); });
}
