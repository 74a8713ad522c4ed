// Chunked-graph properties (chunk_properties.h).
#include "framework/check/chunk_properties.h"

#include "framework/exec/op_properties.h"
#include "framework/ir/text.h"

#include <map>
#include <set>

namespace passcheck::check {

namespace {

std::string custom(const ir::Node& n, const std::string& key) {
  auto it = n.meta().custom.find(key);
  return it == n.meta().custom.end() ? "" : it->second;
}

std::string quoted(const ir::Node& n) { return "`" + ir::print_node(n) + "`"; }

}  // namespace

std::vector<std::string> check_chunk_invariants(const ir::Graph& graph) {
  std::vector<std::string> problems;
  // (region, original name) -> chunk 0 and chunk 1 body nodes.
  std::map<std::pair<std::string, std::string>, std::pair<const ir::Node*, const ir::Node*>> bodies;
  for (const ir::Node* n : graph.nodes()) {
    if (custom(*n, "chunk_role") != "body") continue;
    auto& pair = bodies[{custom(*n, "chunk_region"), custom(*n, "chunk_orig")}];
    (custom(*n, "chunk_id") == "1" ? pair.second : pair.first) = n;
  }
  for (const auto& [key, pair] : bodies) {
    const auto& [c0, c1] = pair;
    if (!c0 || !c1) {
      problems.push_back("region " + key.first + ": body node " + key.second + " has no chunk " + (c0 ? "1" : "0") +
                         " copy (" + quoted(c0 ? *c0 : *c1) + ")");
      continue;
    }
    if (!exec::is_mutating(*c1) || !c1->arg(0).is_value()) continue;
    const ir::Value* self0 = c0->arg(0).is_value() ? c0->arg(0).value : nullptr;
    const bool shared_state = self0 && (self0->is_graph_input() || custom(*self0->producer(), "chunk_id").empty());
    if (shared_state && c1->arg(0).value != c0->output(0))
      problems.push_back("region " + key.first + ": chunk 1's in-place update " + quoted(*c1) + " reads %" +
                         c1->arg(0).value->name() + " instead of chunk 0's result %" + c0->output(0)->name() +
                         ": nothing orders the two updates");
  }
  for (const ir::Node* n : graph.nodes()) {
    if (custom(*n, "chunk_role") != "materialization") continue;
    if (n->op_base() == "add") {
      for (const ir::Value* v : n->operands())
        if (v->meta() && v->meta()->is_symbolic())
          for (const sym::Expr& e : v->meta()->sym_sizes())
            if (!e.free_symbols().empty()) {
              problems.push_back("materialization " + quoted(*n) + " adds %" + v->name() +
                                 ", which carries sym(" + e.to_string() + "): a chunk-dim value must be concatenated");
              break;
            }
    } else if (n->op_base() == "cat" && n->num_args() > 0 && n->arg(0).list().size() == 2) {
      const ir::Arg& parts = n->arg(0);
      const ir::Value* first = parts.list()[0].is_value() ? parts.list()[0].value : nullptr;
      const ir::Value* second = parts.list()[1].is_value() ? parts.list()[1].value : nullptr;
      if (!first || !second || first->is_graph_input() || second->is_graph_input() ||
          custom(*first->producer(), "chunk_id") != "0" || custom(*second->producer(), "chunk_id") != "1")
        problems.push_back("materialization " + quoted(*n) + " does not concatenate chunk 0 then chunk 1");
    }
  }
  return problems;
}

std::vector<std::string> find_symbols(const ir::Graph& graph) {
  std::vector<std::string> found;
  auto names = [](const std::set<std::string>& s) {
    std::string out;
    for (const std::string& n : s) out += (out.empty() ? "" : ", ") + n;
    return out;
  };
  for (const sym::Symbol& s : graph.symbols()) found.push_back("symbol declaration " + s.to_string());
  for (const sym::Claim& c : graph.claims()) found.push_back("claim " + c.kind + " on " + c.subject);
  for (const ir::Value* in : graph.inputs())
    if (in->meta() && in->meta()->is_symbolic())
      found.push_back("metadata of graph input %" + in->name() + " (" + names(in->meta()->free_symbols()) + ")");
  for (const ir::Node* n : graph.nodes()) {
    for (size_t i = 0; i < n->num_args(); ++i)
      if (n->arg(i).has_symbols()) found.push_back("argument " + std::to_string(i) + " of " + quoted(*n));
    for (const ir::Value* out : n->outputs())
      if (out->meta() && out->meta()->is_symbolic())
        found.push_back("shape of %" + out->name() + " (" + names(out->meta()->free_symbols()) + ")");
  }
  return found;
}

}  // namespace passcheck::check
