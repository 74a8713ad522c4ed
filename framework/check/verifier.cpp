// The structural verifier (verifier.h). It trusts nothing it checks: node membership
// is established by walking the list once (so a dangling user pointer is detected
// before it is dereferenced), definition order by the walk itself rather than by the
// order keys, and use lists are compared against the operands in both directions.
// Messages quote the offending node's text and say where a bad operand was defined.
#include "framework/check/verifier.h"

#include "framework/exec/op_properties.h"

#include "framework/exec/arg_check.h"
#include "framework/exec/op_policy.h"
#include "framework/exec/schema_args.h"
#include "framework/ir/subgraph.h"
#include "framework/ir/text.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace passcheck::check {

namespace {

using ir::Node;
using ir::Phase;
using ir::Use;
using ir::Value;

std::string quoted(const Node& n) { return "`" + ir::print_node(n) + "`"; }

bool is_recomputed_duplicate(const Node& n) { return n.meta().custom.count("recomputed_from") > 0; }

class Verifier {
 public:
  explicit Verifier(const ir::Graph& g) : g_(g) {}

  std::vector<VerifierIssue> run() {
    collect();
    check_inputs();
    check_nodes();
    check_use_lists();
    check_outputs();
    check_symbols();
    check_schemas();
    return std::move(issues_);
  }

 private:
  void issue(std::string message) { issues_.push_back(VerifierIssue{std::move(message)}); }

  // Where a value comes from, for messages.
  std::string origin(const Value* v) const {
    if (v->is_graph_input()) return "graph input %" + v->name();
    if (all_nodes_.count(v->producer())) return "%" + v->name() + " defined by " + quoted(*v->producer());
    return "%" + v->name() + " (its producer is not in the graph)";
  }

  void collect() {
    size_t index = 0;
    const Node* prev = nullptr;
    for (const Node* n : g_.nodes()) {
      if (all_nodes_.emplace(n, total_slots_).second) total_slots_ += n->num_operands();
      ++index;
      if (n->graph() != &g_) issue("node " + quoted(*n) + " says it belongs to another graph");
      // Passes rely on is_before; it must agree with the list order.
      if (prev && !prev->is_before(n))
        issue("node order keys disagree with the list: " + quoted(*prev) + " is not before " + quoted(*n));
      prev = n;
    }
    if (index != g_.num_nodes())
      issue("the graph counts " + std::to_string(g_.num_nodes()) + " nodes but its list holds " +
            std::to_string(index));
    for (const Value* in : g_.inputs()) input_set_.insert(in);
  }

  void check_name(const Value* v) {
    auto [it, inserted] = names_.emplace(v->name(), v);
    if (!inserted) issue("value name %" + v->name() + " is used twice (" + origin(it->second) + " and " + origin(v) + ")");
    if (g_.find_value(v->name()) != v)
      issue("%" + v->name() + " is not what the graph's name table maps that name to");
  }

  void check_inputs() {
    for (size_t i = 0; i < g_.inputs().size(); ++i) {
      const Value* in = g_.inputs()[i];
      if (in->graph() != &g_) issue("graph input %" + in->name() + " belongs to another graph");
      if (!in->is_graph_input()) issue("graph input %" + in->name() + " has a producer node");
      if (in->output_index() != i)
        issue("graph input %" + in->name() + " says it is input " + std::to_string(in->output_index()) +
              " but is input " + std::to_string(i));
      check_name(in);
      check_placements(in);
    }
  }

  // Placements: one per mesh dim, a sharded dim the tensor has.
  void check_placements(const Value* v) {
    if (v->placements().empty()) return;
    if (!g_.mesh()) {
      issue("%" + v->name() + " has placements but the graph declares no mesh");
      return;
    }
    if (v->placements().size() != g_.mesh()->dims.size())
      issue("%" + v->name() + " has " + std::to_string(v->placements().size()) + " placements for a mesh of " +
            std::to_string(g_.mesh()->dims.size()) + " dims");
    for (const ir::Placement& p : v->placements())
      if (p.kind == ir::Placement::Kind::Shard && v->meta() && p.dim >= static_cast<int64_t>(v->meta()->sizes.size()))
        issue("%" + v->name() + " is placed " + p.str() + " but has " + std::to_string(v->meta()->sizes.size()) +
              " dims");
  }

  // Wanted input placements: none, or one list of mesh-rank placements per operand slot.
  void check_wanted_placements(const Node& n) {
    const auto& wanted = n.meta().wanted_placements;
    if (wanted.empty()) return;
    if (!g_.mesh()) {
      issue("node " + quoted(n) + " has wanted placements but the graph declares no mesh");
      return;
    }
    if (wanted.size() != n.num_operands())
      issue("node " + quoted(n) + " has " + std::to_string(wanted.size()) + " wanted placements for " +
            std::to_string(n.num_operands()) + " operands");
    for (size_t slot = 0; slot < wanted.size(); ++slot)
      if (wanted[slot].size() != g_.mesh()->dims.size())
        issue("node " + quoted(n) + ": wanted placement of operand " + std::to_string(slot) + " has " +
              std::to_string(wanted[slot].size()) + " entries for a mesh of " +
              std::to_string(g_.mesh()->dims.size()) + " dims");
  }

  // A collective's result is defined only once its wait_tensor ran (on every backend):
  // every use of it must be that wait.
  void check_collective_waits(const Node& n) {
    static const std::string wait = "_c10d_functional::wait_tensor";
    if (n.op().rfind("_c10d_functional::", 0) != 0 || n.op() == wait || !exec::is_collective(n)) return;
    for (size_t i = 0; i < n.num_outputs(); ++i) {
      const Value* out = n.output(i);
      bool waited = false;
      for (const ir::Use& u : out->uses()) {
        if (u.is_graph_output()) {
          issue("the result of " + quoted(n) + " is a graph output without _c10d_functional::wait_tensor");
        } else if (u.user->op() != wait) {
          issue("the result of " + quoted(n) + " is used by " + quoted(*u.user) +
                " without _c10d_functional::wait_tensor: its values are undefined until the wait");
        } else {
          waited = true;
        }
      }
      if (!waited) issue("the result of " + quoted(n) + " is never waited for (no _c10d_functional::wait_tensor)");
    }
  }

  void check_nodes() {
    std::unordered_set<const Node*> defined;
    const Node* first_backward = nullptr;
    const Node* first_optimizer = nullptr;
    for (const Node* n : g_.nodes()) {
      for (size_t s = 0; s < n->num_operands(); ++s) {
        const Value* v = n->operand(s);
        if (v == nullptr) {
          issue("node " + quoted(*n) + ": operand " + std::to_string(s) + " is null");
          continue;
        }
        if (v->graph() != &g_) {
          issue("node " + quoted(*n) + ": operand %" + v->name() + " belongs to another graph");
          continue;
        }
        if (v->is_graph_input()) {
          if (!input_set_.count(v)) issue("node " + quoted(*n) + ": operand %" + v->name() + " is not a graph input");
        } else if (!all_nodes_.count(v->producer())) {
          issue("node " + quoted(*n) + ": operand " + origin(v));
        } else if (!defined.count(v->producer())) {
          issue("node " + quoted(*n) + ": operand %" + v->name() + " is used before its definition (" + origin(v) +
                ", later in the graph)");
        }
      }
      for (size_t i = 0; i < n->num_outputs(); ++i) {
        const Value* out = n->output(i);
        if (out->producer() != n || out->output_index() != i)
          issue("node " + quoted(*n) + ": output %" + out->name() + " does not name this node as its producer");
        if (out->graph() != &g_) issue("node " + quoted(*n) + ": output %" + out->name() + " belongs to another graph");
        check_name(out);
        check_placements(out);
      }
      check_collective_waits(*n);
      check_meta(*n, first_backward, first_optimizer);
      defined.insert(n);
    }
  }

  void check_meta(const Node& n, const Node*& first_backward, const Node*& first_optimizer) {
    const ir::NodeMeta& m = n.meta();
    if (m.ac_region_id && *m.ac_region_id < 0)
      issue("node " + quoted(n) + ": ac_region " + std::to_string(*m.ac_region_id) + " is negative");
    bool duplicate = is_recomputed_duplicate(n);
    bool forward_like = m.phase == Phase::Forward || m.phase == Phase::Loss;
    // Rematerialized duplicates are backward nodes that keep their original's policy.
    if (m.recompute != ir::RecomputePolicy::Unset && !forward_like && !duplicate)
      issue("node " + quoted(n) + ": recompute policy " + ir::to_string(m.recompute) + " on a " +
            ir::to_string(m.phase) + " node (only forward and loss nodes carry one)");
    if (forward_like && first_backward && !duplicate)
      issue("node " + quoted(n) + ": " + ir::to_string(m.phase) + " node after the first backward node " +
            quoted(*first_backward));
    if (m.phase == Phase::Backward && first_optimizer)
      issue("node " + quoted(n) + ": backward node after the optimizer node " + quoted(*first_optimizer));
    check_wanted_placements(n);
    if (m.phase == Phase::Backward && !first_backward) first_backward = &n;
    if (m.phase == Phase::Optimizer && !first_optimizer) first_optimizer = &n;
  }

  // Symbolic shapes and integers name declared symbols, and the concrete sizes and
  // strides a value carries are its symbolic ones evaluated at the hints: executors and
  // memory estimates read the concrete ones.
  void check_symbols() {
    // A subgraph names the symbols of the top graph it belongs to.
    const ir::Graph& top = *g_.root();
    for (const sym::Symbol& s : g_.symbols())
      if (!s.hint_admissible()) issue("symbol " + s.to_string() + ": the hint is not admissible");
    const std::map<std::string, int64_t> hints = top.symbol_hints();
    auto check_declared = [&](const sym::Expr& e, const std::string& where) {
      for (const std::string& name : e.free_symbols())
        if (!top.find_symbol(name)) issue(where + ": undeclared symbol " + name + " in " + e.to_string());
    };
    auto check_meta = [&](const Value* v, const std::string& where) {
      if (!v->meta() || !v->meta()->is_symbolic()) return;
      const ir::TensorMeta& m = *v->meta();
      if (m.sym_sizes.size() != m.sizes.size() || m.sym_strides.size() != m.strides.size()) {
        issue(where + ": symbolic and concrete shapes of %" + v->name() + " differ in rank");
        return;
      }
      for (size_t d = 0; d < m.sizes.size(); ++d) {
        check_declared(m.sym_sizes[d], where);
        check_declared(m.sym_strides[d], where);
        auto size = sym::evaluate(m.sym_sizes[d], hints);
        auto stride = sym::evaluate(m.sym_strides[d], hints);
        if ((size && *size != m.sizes[d]) || (stride && *stride != m.strides[d]))
          issue(where + ": %" + v->name() + " dimension " + std::to_string(d) + " is sym(" +
                m.sym_sizes[d].to_string() + ") but its concrete size at the hints is " + std::to_string(m.sizes[d]));
      }
    };
    // The message prefix prints the node: built only for a symbolic value (printing every
    // node here took a quarter of the verifier's time on graphs without symbols).
    auto is_symbolic = [](const Value* v) { return v->meta() && v->meta()->is_symbolic(); };
    for (const Value* in : g_.inputs())
      if (is_symbolic(in)) check_meta(in, "graph input %" + in->name());
    for (const Node* n : g_.nodes()) {
      for (const ir::Arg& a : n->args())
        a.for_each_symbolic([&](const sym::Expr& e) { check_declared(e, "node " + quoted(*n)); });
      for (const Value* out : n->outputs())
        if (is_symbolic(out)) check_meta(out, "node " + quoted(*n));
    }
    for (const sym::Claim& c : g_.claims()) {
      const std::string where = "claim " + c.kind + " on " + c.subject;
      // A claim's indices are bound by the claim itself; they must not shadow a symbol.
      for (const sym::BoundIndex& index : c.indices) {
        if (top.find_symbol(index.name)) issue(where + ": index " + index.name + " is also a declared symbol");
        check_declared(index.bound, where);
      }
      for (const std::string& name : c.symbols())
        if (!top.find_symbol(name)) issue(where + ": undeclared symbol " + name + " in " + c.condition.to_string());
    }
  }

  // Arguments the operator's schema cannot take (exec/arg_check.h), located in the
  // source text when there is one. Unknown operators are left to the executor, which
  // names them; passes and tests may use operators only they define.
  void check_schemas() {
    for (const Node* n : g_.nodes()) {
      std::optional<c10::OperatorHandle> op = exec::find_operator(n->op());
      if (!op) {
        if (std::optional<exec::ArgumentProblem> refused = exec::refusal(*n, nullptr))
          issue(n->source_line > 0 ? exec::located(*n, *refused) : "node " + quoted(*n) + ": " + refused->message);
        continue;
      }
      for (const exec::ArgumentProblem& p : exec::check_arguments(*n, op->schema()))
        issue(n->source_line > 0 ? exec::located(*n, p) : "node " + quoted(*n) + ": " + p.message);
    }
  }

  // Every use recorded on a value must point at an operand slot (or graph output)
  // holding that value, and every operand slot must be recorded exactly once.
  void check_value_uses(const Value* v) {
    // Repeats among a few uses are found by looking back (no allocation per value);
    // long use lists go through a set.
    constexpr size_t kLookBack = 16;
    const std::vector<Use>& uses = v->uses();
    std::set<std::pair<const Node*, uint32_t>> seen;
    for (size_t k = 0; k < uses.size(); ++k) {
      const Use& u = uses[k];
      if (u.is_graph_output()) {
        if (u.slot >= g_.outputs().size() || g_.outputs()[u.slot] != v)
          issue("%" + v->name() + " lists a use as graph output " + std::to_string(u.slot) +
                " but that output is not %" + v->name());
      } else if (!all_nodes_.count(u.user)) {
        issue("%" + v->name() + " lists a use by a node that is not in the graph");
        continue;
      } else {
        if (u.slot >= u.user->num_operands() || u.user->operand(u.slot) != v)
          issue("%" + v->name() + " lists a use as operand " + std::to_string(u.slot) + " of " + quoted(*u.user) +
                " but that operand is not %" + v->name());
      }
      const bool repeated = uses.size() <= kLookBack ? std::find(uses.begin(), uses.begin() + k, u) != uses.begin() + k
                                                     : !seen.insert({u.user, u.slot}).second;
      if (repeated) issue("%" + v->name() + " lists the same use twice");
    }
  }

  // Looked up in an index of every use list: scanning the list per operand was
  // quadratic in the uses of one value (a million references to %x took minutes). The
  // index is a flat array over every operand slot and graph output naming the value that
  // lists it (a std::set of triples cost a log-time lookup and an allocation per use);
  // what a well-formed graph never has (a slot listed by two values, a use of a node
  // outside the graph, a slot out of range) goes to a small overflow set.
  bool has_use(const Value* v, const Use& use) const {
    if (indexed_values_.count(v)) {
      if (const std::optional<size_t> at = listed_index(use); at && listed_by_[*at] == v) return true;
      return overflow_uses_.count({v, use.user, use.slot}) > 0;
    }
    for (const Use& u : v->uses())  // a value from outside the graph: not indexed
      if (u == use) return true;
    return false;
  }

  // Position of an operand slot or graph output in listed_by_; nullopt outside the graph.
  std::optional<size_t> listed_index(const Use& use) const {
    if (use.is_graph_output())
      return use.slot < g_.outputs().size() ? std::optional<size_t>(total_slots_ + use.slot) : std::nullopt;
    auto it = all_nodes_.find(use.user);
    if (it == all_nodes_.end() || use.slot >= use.user->num_operands()) return std::nullopt;
    return it->second + use.slot;
  }

  void index_use_lists() {
    listed_by_.assign(total_slots_ + g_.outputs().size(), nullptr);
    auto add = [&](const Value* v) {
      indexed_values_.insert(v);
      for (const Use& u : v->uses()) {
        const std::optional<size_t> at = listed_index(u);
        if (at && (listed_by_[*at] == nullptr || listed_by_[*at] == v)) listed_by_[*at] = v;
        else overflow_uses_.insert({v, u.user, u.slot});
      }
    };
    for (const Value* in : g_.inputs()) add(in);
    for (const Node* n : g_.nodes())
      for (const Value* out : n->outputs()) add(out);
  }

  void check_use_lists() {
    index_use_lists();
    for (const Value* in : g_.inputs()) check_value_uses(in);
    for (const Node* n : g_.nodes()) {
      for (const Value* out : n->outputs()) check_value_uses(out);
      for (size_t s = 0; s < n->num_operands(); ++s) {
        const Value* v = n->operand(s);
        if (v && !has_use(v, Use{const_cast<Node*>(n), static_cast<uint32_t>(s)}))
          issue("node " + quoted(*n) + ": operand " + std::to_string(s) + " (%" + v->name() +
                ") is missing from that value's use list");
      }
    }
  }

  void check_outputs() {
    for (size_t i = 0; i < g_.outputs().size(); ++i) {
      const Value* v = g_.outputs()[i];
      if (v == nullptr) {
        issue("graph output " + std::to_string(i) + " is null");
        continue;
      }
      bool belongs = v->graph() == &g_ && (v->is_graph_input() ? input_set_.count(v) > 0
                                                                : all_nodes_.count(v->producer()) > 0);
      if (!belongs) {
        issue("graph output " + std::to_string(i) + " (%" + v->name() + ") is not defined in this graph");
        continue;
      }
      if (!has_use(v, Use{nullptr, static_cast<uint32_t>(i)}))
        issue("graph output " + std::to_string(i) + " (%" + v->name() + ") is missing from that value's use list");
    }
  }

  const ir::Graph& g_;
  std::vector<VerifierIssue> issues_;
  /// Every node, with the index of its first operand slot among all slots in list order.
  std::unordered_map<const Node*, size_t> all_nodes_;
  size_t total_slots_ = 0;
  std::unordered_set<const Value*> input_set_;
  std::unordered_map<std::string, const Value*> names_;
  std::vector<const Value*> listed_by_;
  std::set<std::tuple<const Value*, const Node*, uint32_t>> overflow_uses_;
  std::unordered_set<const Value*> indexed_values_;
};

}  // namespace

std::vector<VerifierIssue> verify_graph(const ir::Graph& graph) {
  std::vector<VerifierIssue> issues = Verifier(graph).run();
  if (graph.root() != &graph) return issues;  // a body alone: its calls are checked from the top
  // A nest: every body on its own, then every call against the body it names.
  for (const auto& [name, body] : graph.subgraphs())
    for (VerifierIssue& issue : Verifier(*body).run())
      issues.push_back(VerifierIssue{"subgraph '" + name + "': " + issue.message});
  for (const ir::Graph* g : ir::graphs_of(graph))
    for (const Node* n : g->nodes()) {
      if (!ir::is_invoke_subgraph(*n)) continue;
      std::string problem = ir::call_problem(*n);
      if (problem.empty()) continue;
      std::string where = g->subgraph_name().empty() ? "" : "subgraph '" + g->subgraph_name() + "': ";
      issues.push_back(VerifierIssue{where + "node " + quoted(*n) + ": " + problem});
    }
  std::string nesting = ir::nesting_problem(graph);
  if (!nesting.empty()) issues.push_back(VerifierIssue{nesting});
  return issues;
}

void verify_or_throw(const ir::Graph& graph, const std::string& context) {
  std::vector<VerifierIssue> issues = verify_graph(graph);
  if (issues.empty()) return;
  std::string message = context + ": " + issues.front().message;
  if (issues.size() > 1) message += " (+" + std::to_string(issues.size() - 1) + " more)";
  throw std::runtime_error(message);
}

namespace {

std::string describe_type(const ir::Value& v) {
  std::string out = ir::to_string(v.type());
  if (v.meta()) out += std::string(" ") + ir::dtype_short_name(v.meta()->dtype) + ir::format_int_list(v.meta()->sizes);
  return out;
}

bool same_declaration(const ir::Value& a, const ir::Value& b) {
  return a.type() == b.type() && a.meta() == b.meta() && a.placements() == b.placements();
}

}  // namespace

std::vector<VerifierIssue> verify_module(const ir::Module& m) {
  std::vector<VerifierIssue> issues;
  auto issue = [&](const std::string& message) { issues.push_back(VerifierIssue{message}); };
  std::map<std::string, const ir::Value*> module_inputs;  // first declaration of each
  std::set<std::string> declared(m.input_names.begin(), m.input_names.end());
  if (declared.size() != m.input_names.size()) issue("the module lists an input twice");
  std::set<std::string> names;
  for (size_t p = 0; p < m.parts.size(); ++p) {
    const ir::ModulePart& part = m.parts[p];
    const std::string where = "part '" + part.name + "'";
    if (!names.insert(part.name).second) issue(where + " is defined twice");
    if (!part.graph) {
      issue(where + " has no graph");
      continue;
    }
    for (VerifierIssue& i : verify_graph(*part.graph)) issue(where + ": " + i.message);
    const auto& inputs = part.graph->inputs();
    if (part.capture) {
      const auto& st = part.capture->static_inputs;
      for (size_t k = 0; k < st.size(); ++k) {
        if (st[k] >= inputs.size()) {
          issue(where + " lists static input " + std::to_string(st[k]) + " but has " + std::to_string(inputs.size()) +
                " inputs");
        } else if (inputs[st[k]]->type() != ir::ValueType::Tensor) {
          issue(where + " lists static input " + std::to_string(st[k]) + " (%" + inputs[st[k]]->name() +
                "), which is not a tensor: only tensors have addresses to keep");
        }
        if (k > 0 && st[k] <= st[k - 1]) issue(where + " lists its static inputs out of order or twice");
      }
    }
    if (part.input_sources.size() != inputs.size()) {
      issue(where + " has " + std::to_string(inputs.size()) + " inputs but " +
            std::to_string(part.input_sources.size()) + " input sources");
      continue;
    }
    for (size_t s = 0; s < inputs.size(); ++s) {
      const ir::Value& in = *inputs[s];
      const auto& src = part.input_sources[s];
      if (!src) {
        if (!declared.count(in.name())) {
          issue(where + " input %" + in.name() + " has no source and is not a module input");
          continue;
        }
        auto [it, first] = module_inputs.emplace(in.name(), &in);
        if (!first && (!same_declaration(*it->second, in) || it->second->role() != in.role()))
          issue(where + " declares module input %" + in.name() + " as " + ir::to_string(in.role()) + " " +
                describe_type(in) + ", unlike an earlier part (" + ir::to_string(it->second->role()) + " " +
                describe_type(*it->second) + ")");
        continue;
      }
      if (src->part >= p) {
        issue(where + " input %" + in.name() + " is linked to a part that does not come before it");
        continue;
      }
      const ir::Graph& from = *m.parts[src->part].graph;
      if (src->output >= from.outputs().size()) {
        issue(where + " input %" + in.name() + " is linked to output " + std::to_string(src->output) + " of part '" +
              m.parts[src->part].name + "', which has " + std::to_string(from.outputs().size()) + " outputs");
        continue;
      }
      const ir::Value& out = *from.outputs()[src->output];
      if (!same_declaration(out, in))
        issue(where + " input %" + in.name() + " (" + describe_type(in) + ") is linked to %" + out.name() + " (" +
              describe_type(out) + ") of part '" + m.parts[src->part].name + "', which differs");
    }
  }
  for (size_t r = 0; r < m.outputs.size(); ++r) {
    const ir::PartOutput& o = m.outputs[r];
    if (o.part >= m.parts.size() || !m.parts[o.part].graph || o.output >= m.parts[o.part].graph->outputs().size())
      issue("module result " + std::to_string(r) + " names part " + std::to_string(o.part) + " output " +
            std::to_string(o.output) + ", which does not exist");
  }
  return issues;
}

}  // namespace passcheck::check
