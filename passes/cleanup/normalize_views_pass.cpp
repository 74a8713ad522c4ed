// normalize-views: aten::view and aten::_unsafe_view become aten::reshape with the
// same sizes, so later passes and pattern matchers see one reshaping operator. Both
// only succeed on inputs reshape can view without copying, so the reshape returns the
// same view: same values, same strides. The node is rebuilt in place (the IR has no
// operator setter): same position, arguments, metadata and output name and type.
#include "passes/cleanup/cleanup_passes.h"

namespace passcheck::passes {

check::PassInfo normalize_views_pass_info() {
  check::PassInfo info;
  info.name = "normalize-views";
  info.summary = "Rewrite view and _unsafe_view as reshape";
  info.numerics = check::NumericsEffect::Preserves;
  info.idempotent = true;
  return info;
}

check::PassResult normalize_views_pass(ir::Graph& graph, const check::PassOptions&) {
  int64_t rewritten = 0;
  for (ir::Node* n : graph.nodes()) {
    if ((n->op() != "aten::view" && n->op() != "aten::_unsafe_view") || n->num_outputs() != 1) continue;
    ir::Node* reshape = graph.create("aten::reshape", n->args(), n);
    reshape->meta() = n->meta();
    reshape->source_line = n->source_line;
    ir::Value* old_out = n->output(0);
    std::string name = old_out->name();
    ir::Value* out = reshape->add_output(old_out->type(), old_out->meta(), name);
    old_out->replace_all_uses_with(out);
    graph.erase(n);
    graph.rename(out, name);  // free again now that the old output is gone
    ++rewritten;
  }
  check::PassResult result;
  result.changed = rewritten > 0;
  result.stats["rewritten_nodes"] = rewritten;
  return result;
}

}  // namespace passcheck::passes
