// remove-identity-view: a view, reshape, _unsafe_view or _reshape_alias whose output
// has the input's sizes is the input itself. "Provably" is read from the recorded
// TensorMeta: both metas must be present and agree on sizes, strides and dtype (a
// _reshape_alias with the same sizes but other strides is a restride, not an
// identity); without metadata the node is left alone.
#include "passes/cleanup/cleanup_passes.h"
#include "passes/cleanup/rewrite_util.h"

namespace passcheck::passes {

namespace {

bool is_view_like(const std::string& op) {
  return op == "aten::view" || op == "aten::reshape" || op == "aten::_unsafe_view" || op == "aten::_reshape_alias";
}

bool is_identity(const ir::Node& n, const ir::Value* in) {
  const ir::Value* out = n.output(0);
  if (!in->meta() || !out->meta()) return false;
  const ir::TensorMeta& a = *in->meta();
  const ir::TensorMeta& b = *out->meta();
  if (a.sizes != b.sizes || a.strides != b.strides || a.dtype != b.dtype || a.device != b.device) return false;
  // The size argument must say the same; a -1 entry is inferred and fine.
  if (n.num_args() < 2 || n.arg(1).kind != ir::Arg::Kind::List) return false;
  const std::vector<ir::Arg>& sizes = n.arg(1).list;
  if (sizes.size() != a.sizes.size()) return false;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i].kind != ir::Arg::Kind::Int || (sizes[i].i != a.sizes[i] && sizes[i].i != -1)) return false;
  if (n.op() == "aten::_reshape_alias") {
    if (n.num_args() < 3 || n.arg(2).kind != ir::Arg::Kind::List) return false;
    const std::vector<ir::Arg>& strides = n.arg(2).list;
    if (strides.size() != a.strides.size()) return false;
    for (size_t i = 0; i < strides.size(); ++i)
      if (strides[i].kind != ir::Arg::Kind::Int || strides[i].i != a.strides[i]) return false;
  }
  return true;
}

}  // namespace

check::PassInfo remove_identity_view_pass_info() {
  check::PassInfo info;
  info.name = "remove-identity-view";
  info.summary = "Replace view/reshape/_unsafe_view/_reshape_alias that keep the input's shape with the input";
  info.numerics = check::NumericsEffect::Preserves;
  info.idempotent = true;
  return info;
}

check::PassResult remove_identity_view_pass(ir::Graph& graph, const check::PassOptions&) {
  return detail::forward_nodes(graph, [](ir::Node& n) -> ir::Value* {
    if (!is_view_like(n.op())) return nullptr;
    ir::Value* in = detail::self_operand(n);
    return in != nullptr && is_identity(n, in) ? in : nullptr;
  });
}

}  // namespace passcheck::passes
