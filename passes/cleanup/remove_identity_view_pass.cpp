// remove-identity-view: a view, reshape, _unsafe_view or _reshape_alias whose output
// has the input's sizes is the input itself. "Provably" is read from the recorded
// TensorMeta: both metas must be present and agree on sizes, strides and dtype (a
// _reshape_alias with the same sizes but other strides is a restride, not an
// identity); without metadata the node is left alone. Guards: missing-metadata,
// changes-sizes, changes-layout.
#include "passes/cleanup/cleanup_passes.h"
#include "passes/cleanup/rewrite_util.h"

namespace passcheck::passes {

namespace {

constexpr const char* kMissingMetadata = "missing-metadata";
constexpr const char* kChangesSizes = "changes-sizes";
constexpr const char* kChangesLayout = "changes-layout";

bool is_view_like(const std::string& op) {
  return op == "aten::view" || op == "aten::reshape" || op == "aten::_unsafe_view" || op == "aten::_reshape_alias";
}

// Whether the size (and for _reshape_alias, stride) arguments restate the input's own.
bool arguments_keep_shape(const ir::Node& n, const ir::TensorMeta& a) {
  // A -1 entry is inferred and fine.
  if (n.num_args() < 2 || n.arg(1).kind != ir::Arg::Kind::List) return false;
  const std::vector<ir::Arg>& sizes = n.arg(1).list();
  if (sizes.size() != a.sizes.size()) return false;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i].kind != ir::Arg::Kind::Int || (sizes[i].i != a.sizes[i] && sizes[i].i != -1)) return false;
  return true;
}

bool arguments_keep_strides(const ir::Node& n, const ir::TensorMeta& a) {
  if (n.op() != "aten::_reshape_alias") return true;
  if (n.num_args() < 3 || n.arg(2).kind != ir::Arg::Kind::List) return false;
  const std::vector<ir::Arg>& strides = n.arg(2).list();
  if (strides.size() != a.strides.size()) return false;
  for (size_t i = 0; i < strides.size(); ++i)
    if (strides[i].kind != ir::Arg::Kind::Int || strides[i].i != a.strides[i]) return false;
  return true;
}

bool is_identity(const ir::Node& n, const ir::Value* in, check::Decisions& d) {
  const ir::Value* out = n.output(0);
  if (d.refuse(kMissingMetadata, !in->meta() || !out->meta())) return false;
  // With the guard disabled (mutants) a view without metadata is taken for an identity.
  if (!in->meta() || !out->meta()) return true;
  const ir::TensorMeta& a = *in->meta();
  const ir::TensorMeta& b = *out->meta();
  if (d.refuse(kChangesSizes, a.sizes != b.sizes || !arguments_keep_shape(n, a))) return false;
  // Judged only between equal sizes, so each guard alone stands between the pass and
  // its own kind of non-identity (a mutant disabling one is not masked by the other).
  bool same_sizes = a.sizes == b.sizes;
  if (d.refuse(kChangesLayout, same_sizes && (a.strides != b.strides || a.dtype != b.dtype || a.device != b.device ||
                                                !arguments_keep_strides(n, a))))
    return false;
  return true;
}

}  // namespace

check::PassInfo remove_identity_view_pass_info() {
  check::PassInfo info;
  info.name = "remove-identity-view";
  info.summary = "Replace view/reshape/_unsafe_view/_reshape_alias that keep the input's shape with the input";
  info.rules = {{"forward-identity-view", "a view-like op whose output is its input: its uses go to the input"}};
  info.guards = {
      {"missing-metadata", "the input or the output has no TensorMeta: nothing is provable"},
      {"changes-sizes", "the output's sizes (recorded, or in the size argument) differ from the input's"},
      {"changes-layout", "same sizes, but other strides (recorded, or _reshape_alias's argument), dtype or device"},
  };
  info.numerics = check::NumericsEffect::Preserves;
  info.idempotent = true;
  return info;
}

check::PassResult detail::remove_identity_view_on(ir::Graph& graph, const check::PassOptions& options,
                                                  std::vector<ir::Node*>* nodes) {
  const std::string kRule = "forward-identity-view";
  const bool widened = options.faults().widened_rules.count(kRule) > 0;  // Decisions::widened
  return detail::forward_nodes(
      graph, options, kRule,
      [widened](ir::Node& n, check::Decisions& d) -> ir::Value* {
        ir::Value* in = detail::self_operand(n);
        // Widened (mutants only): as_strided is taken for a view, and judged by its sizes alone.
        if (widened && n.op() == "aten::as_strided" && in != nullptr && in->meta() && n.output(0)->meta() &&
            in->meta()->sizes == n.output(0)->meta()->sizes)
          return in;
        if (!is_view_like(n.op())) return nullptr;
        return in != nullptr && is_identity(n, in, d) ? in : nullptr;
      },
      nodes);
}

check::PassResult remove_identity_view_pass(ir::Graph& graph, const check::PassOptions& options) {
  return detail::remove_identity_view_on(graph, options, nullptr);
}

}  // namespace passcheck::passes
