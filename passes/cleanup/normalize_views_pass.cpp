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
  info.rules = {{"view-to-reshape", "view or _unsafe_view rebuilt as reshape with the same sizes"}};
  info.numerics = check::NumericsEffect::Preserves;
  info.idempotent = true;
  return info;
}

check::PassResult detail::normalize_views_on(ir::Graph& graph, const check::PassOptions& options,
                                             std::vector<ir::Node*>* nodes) {
  const std::string kRule = "view-to-reshape";
  int64_t rewritten = 0;
  check::PassResult result;
  check::Decisions d(result, options);
  const bool widened_rule = d.widened(kRule);
  // Returns the reshape that replaced `n`, or null.
  auto visit = [&](ir::Node* n) -> ir::Node* {
    const std::string& op = n->op();
    bool is_view = op == "aten::view" || op == "aten::_unsafe_view";
    // Widened (mutants only): _reshape_alias taken for a view, its stride argument dropped.
    bool widened = widened_rule && op == "aten::_reshape_alias" && n->num_args() >= 2;
    if ((!is_view && !widened) || n->num_outputs() != 1) return nullptr;
    std::vector<ir::Arg> args = n->args();
    if (widened) args.resize(2);
    ir::Node* reshape = graph.create("aten::reshape", std::move(args), n);
    reshape->mutable_meta() = n->meta();
    reshape->source_line = n->source_line;
    ir::Value* old_out = n->output(0);
    std::string name = old_out->name();
    ir::Value* out = reshape->add_output(old_out->type(), old_out->meta(), name);
    old_out->replace_all_uses_with(out);
    graph.erase(n);
    graph.rename(out, name);  // free again now that the old output is gone
    ++rewritten;
    return reshape;
  };
  if (nodes == nullptr) {
    for (ir::Node* n : graph.nodes()) visit(n);
  } else {
    for (ir::Node*& n : *nodes)
      if (n != nullptr)
        if (ir::Node* reshape = visit(n)) n = reshape;
  }
  d.fire(kRule, rewritten);
  result.changed = rewritten > 0;
  result.stats["rewritten_nodes"] = rewritten;
  return result;
}

check::PassResult normalize_views_pass(ir::Graph& graph, const check::PassOptions& options) {
  return detail::normalize_views_on(graph, options, nullptr);
}

}  // namespace passcheck::passes
