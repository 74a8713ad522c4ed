// concretize: the last step of the chunking family (passes/chunk/chunk_passes.h). After
// scheduling, every symbol takes its hint: guards are evaluated there first (a false one
// means the graph was rewritten under an assumption that does not hold for the shapes
// it will run with), then arguments and metadata are substituted, scalar plumbing left
// dead by the substitution is erased, and nothing may mention a symbol afterwards — in
// the graph or in any nested subgraph it calls (they share its symbols).
#include "passes/chunk/chunk_passes.h"

#include "framework/exec/op_properties.h"
#include "framework/sym/prover.h"

#include <stdexcept>

namespace passcheck::passes {

namespace {

class ConcretizeError : public std::runtime_error {
 public:
  explicit ConcretizeError(const std::string& message) : std::runtime_error("concretize: " + message) {}
};

std::string hints_text(const std::map<std::string, int64_t>& hints) {
  std::string out;
  for (const auto& [name, value] : hints) out += (out.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  return out.empty() ? "no symbols" : out;
}

int64_t value_at(const sym::Expr& e, const std::map<std::string, int64_t>& hints, const std::string& where) {
  std::optional<int64_t> v;
  try {
    v = sym::evaluate(e, hints);
  } catch (const sym::EvalError& err) {
    throw ConcretizeError(where + ": sym(" + e.to_string() + ") cannot be evaluated at the hints: " + err.what());
  }
  if (!v) {
    std::string missing;
    for (const std::string& s : e.free_symbols())
      if (!hints.count(s)) missing += (missing.empty() ? "" : ", ") + s;
    throw ConcretizeError("symbol " + missing + " left in " + where + " (sym(" + e.to_string() +
                          ")): it is not declared, so no hint replaces it (declared: " + hints_text(hints) + ")");
  }
  return *v;
}

// 1 when claim `c` holds at the hints, 0 when it does not. A claim over indices
// (fuse-chained-allgathers' view identity) holds at the hints when it holds for every
// index in range there: Z3 decides that with each symbol fixed to its hint.
int64_t holds_at(const sym::Claim& c, const std::map<std::string, int64_t>& hints, const std::string& where) {
  if (c.indices.empty()) return value_at(c.condition, hints, where);
  std::map<std::string, sym::Expr> at_hints;
  for (const auto& [name, value] : hints) at_hints[name] = sym::Expr::constant(value);
  sym::Claim fixed = c;
  fixed.condition = sym::substitute(c.condition, at_hints);
  for (sym::BoundIndex& index : fixed.indices) index.bound = sym::substitute(index.bound, at_hints);
  const sym::ClaimResult r = sym::prove(fixed, {});
  if (r.verdict == sym::Verdict::Unknown)
    throw ConcretizeError(where + ": cannot be decided at the hints (" + hints_text(hints) + "): " + r.reason);
  return r.verdict == sym::Verdict::Proved ? 1 : 0;
}

ir::Arg concrete(const ir::Arg& a, const std::map<std::string, int64_t>& hints, const std::string& where) {
  if (a.kind == ir::Arg::Kind::Sym) return ir::Arg::integer(value_at(a.expr(), hints, where));
  if (a.kind == ir::Arg::Kind::List) {
    ir::Arg out = a;
    for (ir::Arg& item : out.mutable_list()) item = concrete(item, hints, where);
    return out;
  }
  return a;
}

std::optional<ir::TensorMeta> concrete(const std::optional<ir::TensorMeta>& meta,
                                       const std::map<std::string, int64_t>& hints, const std::string& where) {
  if (!meta || !meta->is_symbolic()) return meta;
  ir::TensorMeta m = *meta;
  for (size_t d = 0; d < m.sym_sizes().size(); ++d) m.sizes[d] = value_at(m.sym_sizes()[d], hints, where);
  for (size_t d = 0; d < m.sym_strides().size(); ++d) m.strides[d] = value_at(m.sym_strides()[d], hints, where);
  m.drop_symbolic();
  return m;
}

std::string node_where(const ir::Node& n) {
  return "node " + (n.num_outputs() ? "%" + n.output()->name() : std::string("()")) + " = " + n.op();
}

}  // namespace

namespace {

void concretize(ir::Graph& graph, check::PassResult& result, check::Decisions& d) {
  const std::map<std::string, int64_t> hints = graph.symbol_hints();
  int64_t guards = 0;
  if (!d.injected("skip-guard-validation")) {
    for (const sym::Claim& c : graph.claims()) {
      const std::string where = "guard " + c.kind + " on " + c.subject + " (recorded by " + c.pass + ")";
      d.fire("validate-guard");
      if (d.refuse("false-guard", holds_at(c, hints, where) == 0))
        throw ConcretizeError("guard false at the hint (" + hints_text(hints) + "): " + c.kind + " on " + c.subject +
                              ": " + c.condition.to_string() + " -- " + c.description);
      ++guards;
    }
  }
  // Every graph of the nest takes the hints: the top graph and each subgraph body (they
  // share the top graph's symbols). Skipping the bodies is the nested half of bug 9.
  std::vector<ir::Graph*> graphs{&graph};
  for (const auto& entry : graph.subgraphs())
    if (!d.injected("skip-subgraphs")) {
      graphs.push_back(entry.second.get());
      d.fire("substitute-in-subgraphs");
    }
  int64_t substituted = 0;
  const bool keep_input_meta = d.injected("keep-symbolic-input-meta");
  for (ir::Graph* g : graphs) {
    const std::string in_subgraph = g == &graph ? "" : " in subgraph '" + g->subgraph_name() + "'";
    for (ir::Value* in : g->inputs()) {
      if (keep_input_meta || !in->meta() || !in->meta()->is_symbolic()) continue;
      in->set_meta(concrete(in->meta(), hints, "graph input %" + in->name() + in_subgraph));
      d.fire("substitute-input-meta");
      ++substituted;
    }
    for (ir::Node* n : g->nodes()) {
      bool symbolic = false;
      for (const ir::Arg& a : n->args()) symbolic = symbolic || a.has_symbols();
      if (symbolic) {
        std::vector<ir::Arg> args;
        for (size_t i = 0; i < n->num_args(); ++i)
          args.push_back(concrete(n->arg(i), hints, "argument " + std::to_string(i) + " of " + node_where(*n) + in_subgraph));
        n->set_args(std::move(args));
        d.fire("substitute-args");
        ++substituted;
      }
      for (ir::Value* out : n->outputs())
        if (out->meta() && out->meta()->is_symbolic()) {
          out->set_meta(concrete(out->meta(), hints, "the shape of %" + out->name() + in_subgraph));
          d.fire("substitute-shape");
          ++substituted;
        }
    }
  }
  // Scalar plumbing (sizes read off tensors) that only fed symbolic arguments is dead now.
  int64_t erased = 0;
  for (ir::Graph* g : graphs)
    for (ir::Node* n = g->last_node(); n != nullptr;) {
      ir::Node* prev = n->prev();
      bool scalar_only = n->num_outputs() > 0;
      for (const ir::Value* out : n->outputs()) scalar_only = scalar_only && out->type() != ir::ValueType::Tensor;
      // Widened: a scalar node is erased even with readers left (the erase then fails).
      if (scalar_only && (!n->has_users() || d.widened("erase-scalar-plumbing")) && !exec::is_mutating(*n) &&
          !exec::has_side_effects(*n) && !exec::is_random(*n)) {
        g->erase(n);
        d.fire("erase-scalar-plumbing");
        ++erased;
      }
      n = prev;
    }
  const bool had_symbols = !graph.symbols().empty() || !graph.claims().empty();
  for (const sym::Symbol& s : std::vector<sym::Symbol>(graph.symbols())) graph.remove_symbol(s.name);
  graph.mutable_claims().clear();

  // Nothing may mention a symbol any more: arguments, value metadata, graph inputs.
  auto leftover = [&](const std::set<std::string>& symbols, const std::string& where) {
    if (!d.refuse("leftover-symbol", !symbols.empty())) return;
    std::string names;
    for (const std::string& s : symbols) names += (names.empty() ? "" : ", ") + s;
    throw ConcretizeError("symbol " + names + " left in " + where + " after concretization");
  };
  for (const ir::Graph* g : graphs) {
    const std::string in_subgraph = g == &graph ? "" : " in subgraph '" + g->subgraph_name() + "'";
    for (const ir::Value* in : g->inputs())
      if (in->meta()) leftover(in->meta()->free_symbols(), "the metadata of graph input %" + in->name() + in_subgraph);
    for (const ir::Node* n : g->nodes()) {
      for (size_t i = 0; i < n->num_args(); ++i) {
        std::set<std::string> found;
        n->arg(i).for_each_symbolic([&](const sym::Expr& e) {
          auto f = e.free_symbols();
          found.insert(f.begin(), f.end());
        });
        leftover(found, "argument " + std::to_string(i) + " of " + node_where(*n) + in_subgraph);
      }
      for (const ir::Value* out : n->outputs())
        if (out->meta()) leftover(out->meta()->free_symbols(), "the shape of %" + out->name() + in_subgraph);
    }
  }
  result.changed = had_symbols || substituted > 0 || erased > 0;
  result.stats["validated_guards"] = guards;
  result.stats["substituted"] = substituted;
  result.stats["erased_scalar_nodes"] = erased;
}

}  // namespace

check::PassResult concretize_pass(ir::Graph& graph, const check::PassOptions& options) {
  check::PassResult result;
  check::Decisions d(result, options);
  try {
    concretize(graph, result, d);
  } catch (const ConcretizeError& e) {
    throw check::RefusedInput(e.what(), result);
  }
  return result;
}

void register_chunk_passes(check::PassRegistry& registry) {
  using check::NumericsEffect;
  check::PassInfo chunk{"chunk",
                        "Split module regions into two chunks on the batch or sequence dimension (EP overlap)",
                        {{"mode", "chunked dimension: batch or seq (seq: MoE regions only)", "batch", {"batch", "seq"}},
                         {"modules", "comma-separated module patterns, '*' matches one FQN component", "layers.*", {}},
                         {"early-accumulation",
                          "add parameter-gradient partials right after their reduction (may change numerics)", "true",
                          {"true", "false"}},
                         {"symbol", "the chunk symbol (default: the graph's only symbol)", "", {}}},
                        NumericsEffect::Changes,
                        false,
                        {{"split-live-in", "a live-in carrying the symbol in one dimension is split in two halves"},
                         {"clone-non-contiguous-half", "a half that is not contiguous is cloned"},
                         {"duplicate-body", "a body node becomes chunk 0 in place and chunk 1 right after it"},
                         {"chain-mutation", "chunk 1's in-place update of shared state reads chunk 0's result"},
                         {"materialize-cat", "a live-out carrying the chunk dimension is materialized by cat"},
                         {"materialize-add", "a live-out without it is the add of two partials, with a partial-sum claim"},
                         {"early-accumulation", "parameter-gradient partials are added right after their reduction"}},
                        {{"seq-through-attention", "seq chunking of a region with attention is an error"},
                         {"forward-reads-backward", "a forward body node reading a backward value is an error"},
                         {"multi-dim-live-in", "a live-in carrying the symbol in several dimensions is an error"},
                         {"static-input-split", "a parameter or buffer carrying the symbol is never split: an error"},
                         {"odd-live-in", "a live-in of odd size in the chunk dimension at the hint is an error"},
                         {"scalar-body-output", "a body node producing a symbolic scalar is an error"},
                         {"baked-reshape-size", "a reshape with a constant size in a dimension carrying the symbol is an error"},
                         {"second-random-op", "a second random op in one region is an error"},
                         {"unsupported-in-place", "a body node writing its inputs other than self in place is an error"},
                         {"state-updated-twice", "a region updating one state in place twice is an error"},
                         {"read-after-update", "a body node reading a state after its in-place update is an error"},
                         {"update-runs-once",
                          "an in-place state update reading no chunked value (it would run once, eager chunking runs "
                          "it per chunk) is an error"},
                         {"read-before-update",
                          "a body node reading a state the region later updates in place is an error (chunk 1 would miss "
                          "chunk 0's update)"},
                         {"live-out-without-meta", "a live-out that is not a tensor with metadata is an error"},
                         {"multi-dim-live-out", "a live-out carrying the symbol in several dimensions is an error"},
                         {"not-a-partial-sum", "a live-out without the chunk dimension that is not a sum is an error"}}};
  // Historical bug 10 as the mutant library asks for it (the other half of bug 10, an
  // add for a live-out carrying the chunk dimension, is the widened materialize-add).
  chunk.injectable_bugs = {{"unchained-buffer-updates",
                            "chunk 1's in-place buffer update reads the buffer itself instead of chunk 0's result, so "
                            "nothing orders the two updates (bug 10)"}};
  registry.add(chunk, chunk_pass);
  check::PassInfo concretize{"concretize",
                             "Substitute every symbol's hint after validating the recorded guards; no symbol may remain",
                             {},
                             NumericsEffect::Preserves,
                             true,
                             {{"validate-guard", "a recorded claim is evaluated at the hints"},
                              {"substitute-input-meta", "a graph input's symbolic metadata takes the hints"},
                              {"substitute-args", "a node's symbolic arguments take the hints"},
                              {"substitute-shape", "a node output's symbolic metadata takes the hints"},
                              {"erase-scalar-plumbing", "a scalar-only node left without readers is erased"},
                              {"substitute-in-subgraphs", "a nested subgraph's arguments and metadata take the hints too"}},
                             {{"false-guard", "a claim false at the hints is an error"},
                              {"leftover-symbol", "a symbol left anywhere after substitution is an error"}}};
  concretize.injectable_bugs = {
      {"keep-symbolic-input-meta",
       "graph input metadata keeps its symbolic shapes (stale symbols outside node arguments, bug 9)"},
      {"skip-guard-validation", "the recorded guards are not evaluated at the hint, so a false guard goes through "
                                "(bug 9)"},
      {"skip-subgraphs", "nested subgraphs keep their symbolic arguments and shapes (the nested half of bug 9)"}};
  concretize.handles_subgraphs = true;
  registry.add(concretize, concretize_pass);
}

}  // namespace passcheck::passes
