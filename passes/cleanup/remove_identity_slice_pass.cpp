// remove-identity-slice: slice.Tensor(x, dim, 0, end, 1) with end >= size(dim) (or
// None) selects all of x, so its uses go to x. Only constant starts, ends and steps
// are judged (a symbolic bound says nothing provable), and the input's size must be
// known from its TensorMeta.
#include "passes/cleanup/cleanup_passes.h"
#include "passes/cleanup/rewrite_util.h"

namespace passcheck::passes {

namespace {

// slice.Tensor(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1)
bool is_identity_slice(const ir::Node& n, const ir::Value* in) {
  if (!in->meta()) return false;
  const std::vector<int64_t>& sizes = in->meta()->sizes;
  detail::IntArg dim = detail::int_arg(n, 1, 0);
  detail::IntArg start = detail::int_arg(n, 2, std::nullopt);
  detail::IntArg end = detail::int_arg(n, 3, std::nullopt);
  detail::IntArg step = detail::int_arg(n, 4, 1);
  if (!dim.constant || !start.constant || !end.constant || !step.constant) return false;
  if (!dim.value || !step.value || *step.value != 1) return false;
  auto d = detail::wrap_dim(*dim.value, static_cast<int64_t>(sizes.size()));
  if (!d) return false;
  if (start.value && *start.value != 0) return false;
  if (end.value && *end.value < sizes[*d]) return false;
  // The recorded output must agree, or the metadata is not to be trusted.
  const ir::Value* out = n.output(0);
  return !out->meta() || out->meta()->sizes == sizes;
}

}  // namespace

check::PassInfo remove_identity_slice_pass_info() {
  check::PassInfo info;
  info.name = "remove-identity-slice";
  info.summary = "Replace slice(x, dim, 0, end >= size, 1) with x";
  info.numerics = check::NumericsEffect::Preserves;
  info.idempotent = true;
  return info;
}

check::PassResult remove_identity_slice_pass(ir::Graph& graph, const check::PassOptions&) {
  return detail::forward_nodes(graph, [](ir::Node& n) -> ir::Value* {
    if (n.op() != "aten::slice.Tensor") return nullptr;
    ir::Value* in = detail::self_operand(n);
    return in != nullptr && is_identity_slice(n, in) ? in : nullptr;
  });
}

}  // namespace passcheck::passes
