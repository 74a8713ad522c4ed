// The structural verifier (verifier.h). The full verifier trusts nothing it checks: node
// membership is established by walking the list once (so a dangling user pointer is
// detected before it is dereferenced), definition order by the walk itself rather than by
// the order keys, and use lists are compared against the operands in both directions.
// The incremental verifier (verify_changes) walks the list too, checking what is cheap
// for every node (membership, order keys, phase order), then trusts the order keys it
// just checked and runs the full checks on what the change log names. Messages quote the
// offending node's text and say where a bad operand was defined.
#include "framework/check/verifier.h"

#include "framework/exec/op_properties.h"

#include "framework/exec/arg_check.h"
#include "framework/exec/op_policy.h"
#include "framework/exec/schema_args.h"
#include "framework/ir/pointer_index.h"
#include "framework/ir/subgraph.h"
#include "framework/ir/text.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
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

bool any_symbolic(const ir::Arg& a) {
  if (a.kind == ir::Arg::Kind::Sym) return true;
  if (a.kind == ir::Arg::Kind::List)
    for (const ir::Arg& e : a.list())
      if (any_symbolic(e)) return true;
  return false;
}

bool is_functional_collective(const Node& n) {
  static const std::string wait = "_c10d_functional::wait_tensor";
  return n.op().rfind("_c10d_functional::", 0) == 0 && n.op() != wait && exec::is_collective(n);
}

// What both verifiers check, node by node; the full one establishes membership and order
// from the list, the incremental one from the order keys it checked.
class Verifier {
 public:
  explicit Verifier(const ir::Graph& g) : g_(g), positions_(g.num_nodes() + 1) {}

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

  /// The passcheck::invoke_subgraph nodes run() met, in list order.
  const std::vector<const Node*>& calls() const { return calls_; }

  std::vector<VerifierIssue> run_changes(const ChangeSet& changes) {
    if (!walk()) return std::move(issues_);  // the list itself is broken: nothing else is trustworthy
    std::unordered_set<const Node*> collectives_seen;
    auto check_collective = [&](const Node* c) {
      if (is_functional_collective(*c) && collectives_seen.insert(c).second) check_collective_waits(*c);
    };
    for (const Node* n : changes.nodes) {
      if (n->graph() != &g_) {
        at(kListCheck, n, 0);
        issue("node " + quoted(*n) + " says it belongs to another graph");
        continue;
      }
      const uint8_t bits = n->touched();
      const bool created = bits & ir::kTouchCreated;
      if (created || (bits & (ir::kTouchArgs | ir::kTouchMoved))) {
        for (size_t s = 0; s < n->num_operands(); ++s) {
          const Value* v = n->operand(s);
          at(kNodeCheck, n, kOperandStep);
          const bool checked = check_operand(*n, s, v);
          at(kUseListCheck, n, 1);
          if (checked && !listed(v, Use{const_cast<Node*>(n), static_cast<uint32_t>(s)})) missing_use(*n, s, *v);
          if (v && v->producer() && v->graph() == &g_) {
            at(kNodeCheck, v->producer(), kCollectiveStep);
            check_collective(v->producer());
          }
        }
      }
      if (created || (bits & ir::kTouchArgs)) {
        at(kSchemaCheck, n, 0);
        check_schema(*n);
        at(kSymbolCheck, n, 0);
        check_arg_symbols(*n);
      }
      if (created || (bits & ir::kTouchMoved))
        for (const Value* out : n->outputs())
          for (const Use& u : out->uses())
            if (!u.is_graph_output() && u.user->graph() == &g_ && !n->is_before(u.user)) {
              at(kNodeCheck, u.user, kOperandStep);
              issue("node " + quoted(*u.user) + ": operand %" + out->name() + " is used before its definition (" +
                    origin(out) + ", later in the graph)");
            }
      if (created || (bits & ir::kTouchOutputs)) {
        at(kNodeCheck, n, kOutputStep);
        for (size_t i = 0; i < n->num_outputs(); ++i) check_output(*n, i);
        at(kSymbolCheck, n, 1);
        for (const Value* out : n->outputs()) check_value_symbols(out, n);
      }
      if (created || (bits & (ir::kTouchUses | ir::kTouchOutputs))) {
        at(kUseListCheck, n, 0);
        for (const Value* out : n->outputs()) check_value_uses(out);
      }
      if (created || (bits & (ir::kTouchUses | ir::kTouchArgs))) {
        at(kNodeCheck, n, kCollectiveStep);
        check_collective(n);
      }
      if (created || (bits & ir::kTouchMeta)) {
        at(kNodeCheck, n, kMetaStep);
        check_wanted_placements(*n);
      }
    }
    if (changes.graph_changes & ir::kGraphInputUses) {
      at(kUseListCheck, nullptr, 0);
      for (const Value* in : g_.inputs()) check_value_uses(in);
    }
    at(kOutputCheck, nullptr, 0);
    check_outputs();
    return in_full_order();
  }

 private:
  void issue(std::string message) {
    issues_.push_back(VerifierIssue{std::move(message)});
    keys_.push_back(key_);
  }

  // Where an issue stands in the order the full verifier finds issues: its check (the
  // full verifier's passes over the graph), the node it is about, the step of that node's
  // check. The incremental verifier sorts by it, so both report the same first issue.
  enum Category { kListCheck, kNodeCheck, kUseListCheck, kOutputCheck, kSymbolCheck, kSchemaCheck };
  enum Step { kOperandStep, kOutputStep, kCollectiveStep, kMetaStep };
  struct Key {
    int category = kListCheck;
    const Node* subject = nullptr;  ///< null: before every node
    int step = 0;
  };
  void at(int category, const Node* subject, int step) { key_ = Key{category, subject, step}; }

  std::vector<VerifierIssue> in_full_order() {
    std::vector<size_t> order(issues_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const Key& x = keys_[a];
      const Key& y = keys_[b];
      if (x.category != y.category) return x.category < y.category;
      if (x.subject != y.subject) return !x.subject || (y.subject && x.subject->is_before(y.subject));
      return x.step < y.step;
    });
    std::vector<VerifierIssue> sorted;
    sorted.reserve(order.size());
    for (size_t i : order) sorted.push_back(std::move(issues_[i]));
    return sorted;
  }

  // Where a value comes from, for messages.
  std::string origin(const Value* v) const {
    if (v->is_graph_input()) return "graph input %" + v->name();
    if (in_graph(v->producer())) return "%" + v->name() + " defined by " + quoted(*v->producer());
    return "%" + v->name() + " (its producer is not in the graph)";
  }

  bool is_input(const Value* v) const {
    return v->output_index() < g_.inputs().size() && g_.inputs()[v->output_index()] == v;
  }

  bool in_graph(const Node* n) const {
    if (trust_order_) return n && n->graph() == &g_;
    return position_of(n).has_value();
  }

  // The nodes collect() found, each prefetched a few iterations ahead of its visit.
  class Listed {
   public:
    explicit Listed(const std::vector<const Node*>& nodes) : nodes_(nodes) {}
    class Iterator {
     public:
      Iterator(const std::vector<const Node*>& nodes, size_t i) : nodes_(&nodes), i_(i) {}
      const Node* operator*() const {
        if (i_ + kAhead < nodes_->size()) __builtin_prefetch((*nodes_)[i_ + kAhead]);
        return (*nodes_)[i_];
      }
      Iterator& operator++() {
        ++i_;
        return *this;
      }
      bool operator!=(const Iterator& o) const { return i_ != o.i_; }

     private:
      static constexpr size_t kAhead = 8;
      const std::vector<const Node*>* nodes_;
      size_t i_;
    };
    Iterator begin() const { return Iterator(nodes_, 0); }
    Iterator end() const { return Iterator(nodes_, nodes_.size()); }

   private:
    const std::vector<const Node*>& nodes_;
  };
  Listed in_list_order() const { return Listed(listed_); }

  // The full walk: positions, each node's first operand slot among all slots.
  void collect() {
    size_t index = 0;
    const Node* prev = nullptr;
    first_slot_.reserve(g_.num_nodes() + 1);
    listed_.reserve(g_.num_nodes());
    for (const Node* n : g_.nodes()) {
      listed_.push_back(n);
      if (positions_.try_insert(n, static_cast<uint32_t>(first_slot_.size()))) {
        first_slot_.push_back(total_slots_);
        for (size_t s = 0; s < n->num_operands(); ++s) slot_values_.push_back(n->operand(s));
        total_slots_ += n->num_operands();
      } else {
        repeated_nodes_ = true;
      }
      ++index;
      if (n->graph() != &g_) issue("node " + quoted(*n) + " says it belongs to another graph");
      // Passes rely on is_before; it must agree with the list order.
      if (prev && !prev->is_before(n))
        issue("node order keys disagree with the list: " + quoted(*prev) + " is not before " + quoted(*n));
      prev = n;
    }
    first_slot_.push_back(total_slots_);  // the end of the last node's slots
    if (index != g_.num_nodes())
      issue("the graph counts " + std::to_string(g_.num_nodes()) + " nodes but its list holds " +
            std::to_string(index));
  }

  // The incremental walk: the list's own invariants and the per-node metadata rules, then
  // membership and order come from graph pointers and order keys. False when the list is
  // broken (a node of another graph, order keys out of order, a wrong count).
  bool walk() {
    size_t index = 0;
    const Node* prev = nullptr;
    bool sound = true;
    const Node* first_backward = nullptr;
    const Node* first_optimizer = nullptr;
    for (const Node* n : g_.nodes()) {
      ++index;
      at(kListCheck, nullptr, 0);
      if (n->graph() != &g_) {
        issue("node " + quoted(*n) + " says it belongs to another graph");
        sound = false;
      }
      if (prev && !prev->is_before(n)) {
        issue("node order keys disagree with the list: " + quoted(*prev) + " is not before " + quoted(*n));
        sound = false;
      }
      prev = n;
      at(kNodeCheck, n, kMetaStep);
      check_meta(*n, first_backward, first_optimizer, /*with_wanted=*/false);
    }
    if (index != g_.num_nodes()) {
      at(kListCheck, nullptr, 0);
      issue("the graph counts " + std::to_string(g_.num_nodes()) + " nodes but its list holds " +
            std::to_string(index));
      sound = false;
    }
    trust_order_ = sound;
    return sound;
  }

  void check_name(const Value* v) {
    if (g_.find_value(v->name()) == v) return;
    // Another value holds the name in the graph's table: the same name twice.
    const Value* holder = g_.find_value(v->name());
    if (holder) issue("value name %" + v->name() + " is used twice (" + origin(holder) + " and " + origin(v) + ")");
    else issue("%" + v->name() + " is not what the graph's name table maps that name to");
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
    if (!is_functional_collective(n)) return;
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

  // Operand slot `s` of `n`: in this graph and defined before `n`. True when the operand
  // is a value of this graph (so its use list can be checked).
  bool check_operand(const Node& n, size_t s, const Value* v) {
    if (v == nullptr) {
      issue("node " + quoted(n) + ": operand " + std::to_string(s) + " is null");
      return false;
    }
    if (v->graph() != &g_) {
      issue("node " + quoted(n) + ": operand %" + v->name() + " belongs to another graph");
      return false;
    }
    if (v->is_graph_input()) {
      if (!is_input(v)) issue("node " + quoted(n) + ": operand %" + v->name() + " is not a graph input");
      return true;
    }
    const std::optional<uint32_t> position = trust_order_ ? std::nullopt : position_of(v->producer());
    if (trust_order_ ? !in_graph(v->producer()) : !position) {
      issue("node " + quoted(n) + ": operand " + origin(v));
      return false;
    }
    const bool before = trust_order_ ? v->producer()->is_before(&n) : *position < current_;
    if (!before)
      issue("node " + quoted(n) + ": operand %" + v->name() + " is used before its definition (" + origin(v) +
            ", later in the graph)");
    return true;
  }

  void check_output(const Node& n, size_t i) {
    const Value* out = n.output(i);
    if (out->producer() != &n || out->output_index() != i)
      issue("node " + quoted(n) + ": output %" + out->name() + " does not name this node as its producer");
    if (out->graph() != &g_) issue("node " + quoted(n) + ": output %" + out->name() + " belongs to another graph");
    check_name(out);
    check_placements(out);
  }

  void check_nodes() {
    const Node* first_backward = nullptr;
    const Node* first_optimizer = nullptr;
    current_ = 0;
    for (const Node* n : in_list_order()) {
      if (const Value* const* operands = first_visit_operands(n, current_))
        for (size_t s = 0; s < n->num_operands(); ++s) check_operand(*n, s, operands[s]);
      else
        for (size_t s = 0; s < n->num_operands(); ++s) check_operand(*n, s, n->operand(s));
      for (size_t i = 0; i < n->num_outputs(); ++i) check_output(*n, i);
      check_collective_waits(*n);
      check_meta(*n, first_backward, first_optimizer, /*with_wanted=*/true);
      if (ir::is_invoke_subgraph(*n)) calls_.push_back(n);
      ++current_;
    }
  }

  void check_meta(const Node& n, const Node*& first_backward, const Node*& first_optimizer, bool with_wanted) {
    const ir::NodeMeta& m = n.meta();
    if (m.ac_region_id && *m.ac_region_id < 0)
      issue("node " + quoted(n) + ": ac_region " + std::to_string(*m.ac_region_id) + " is negative");
    const bool forward_like = m.phase == Phase::Forward || m.phase == Phase::Loss;
    // Rematerialized duplicates are backward nodes that keep their original's policy.
    // (The duplicate test is a map lookup: asked only where it decides something.)
    if (m.recompute != ir::RecomputePolicy::Unset && !forward_like && !is_recomputed_duplicate(n))
      issue("node " + quoted(n) + ": recompute policy " + ir::to_string(m.recompute) + " on a " +
            ir::to_string(m.phase) + " node (only forward and loss nodes carry one)");
    if (forward_like && first_backward && !is_recomputed_duplicate(n))
      issue("node " + quoted(n) + ": " + ir::to_string(m.phase) + " node after the first backward node " +
            quoted(*first_backward));
    if (m.phase == Phase::Backward && first_optimizer)
      issue("node " + quoted(n) + ": backward node after the optimizer node " + quoted(*first_optimizer));
    if (with_wanted) check_wanted_placements(n);
    if (m.phase == Phase::Backward && !first_backward) first_backward = &n;
    if (m.phase == Phase::Optimizer && !first_optimizer) first_optimizer = &n;
  }

  // `where` is a string or a callable returning one (built only for an issue).
  template <typename Where>
  void check_declared(const sym::Expr& e, const Where& where) {
    if (!e.has_symbols()) return;
    const ir::Graph& top = *g_.root();
    for (const std::string& name : e.free_symbols())
      if (!top.find_symbol(name)) issue(describe(where) + ": undeclared symbol " + name + " in " + e.to_string());
  }
  static const std::string& describe(const std::string& where) { return where; }
  template <typename F>
  static std::string describe(const F& where) {
    return where();
  }

  // Symbolic shapes name declared symbols, and the concrete sizes and strides a value
  // carries are its symbolic ones evaluated at the hints.
  void check_value_symbols(const Value* v, const Node* producer) {
    if (!v->meta() || !v->meta()->is_symbolic()) return;
    // The prefix prints the node: built only when there is something to say.
    std::optional<std::string> where_text;
    auto where = [&]() -> const std::string& {
      if (!where_text) where_text = producer ? "node " + quoted(*producer) : "graph input %" + v->name();
      return *where_text;
    };
    const ir::TensorMeta& m = *v->meta();
    if (m.sym_sizes().size() != m.sizes.size() || m.sym_strides().size() != m.strides.size()) {
      issue(where() + ": symbolic and concrete shapes of %" + v->name() + " differ in rank");
      return;
    }
    if (!hints_) hints_ = g_.root()->symbol_hints();
    for (size_t d = 0; d < m.sizes.size(); ++d) {
      check_declared(m.sym_sizes()[d], where);
      check_declared(m.sym_strides()[d], where);
      auto size = sym::evaluate(m.sym_sizes()[d], *hints_);
      auto stride = sym::evaluate(m.sym_strides()[d], *hints_);
      if ((size && *size != m.sizes[d]) || (stride && *stride != m.strides[d]))
        issue(where() + ": %" + v->name() + " dimension " + std::to_string(d) + " is sym(" +
              m.sym_sizes()[d].to_string() + ") but its concrete size at the hints is " + std::to_string(m.sizes[d]));
    }
  }

  void check_arg_symbols(const Node& n) {
    for (const ir::Arg& a : n.args())
      if (any_symbolic(a))
        a.for_each_symbolic([&](const sym::Expr& e) { check_declared(e, [&] { return "node " + quoted(n); }); });
  }

  void check_symbols() {
    // A subgraph names the symbols of the top graph it belongs to.
    const ir::Graph& top = *g_.root();
    for (const sym::Symbol& s : g_.symbols())
      if (!s.hint_admissible()) issue("symbol " + s.to_string() + ": the hint is not admissible");
    for (const Value* in : g_.inputs()) check_value_symbols(in, nullptr);
    for (const Node* n : in_list_order()) {
      check_arg_symbols(*n);
      for (const Value* out : n->outputs()) check_value_symbols(out, n);
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
  // names them; passes and tests may use operators only they define. Operators are
  // looked up once per name.
  void check_schema(const Node& n) {
    auto it = operators_.find(&n.op());
    if (it == operators_.end()) {
      std::optional<c10::OperatorHandle> op = exec::find_operator(n.op());
      std::optional<exec::SchemaChecker> checker;
      if (op) checker.emplace(op->schema(), n.op_name());
      it = operators_.emplace(&n.op(), std::move(checker)).first;
    }
    if (!it->second) {
      if (std::optional<exec::ArgumentProblem> refused = exec::refusal(n, nullptr))
        issue(n.source_line > 0 ? exec::located(n, *refused) : "node " + quoted(n) + ": " + refused->message);
      return;
    }
    for (const exec::ArgumentProblem& p : it->second->check(n))
      issue(n.source_line > 0 ? exec::located(n, p) : "node " + quoted(n) + ": " + p.message);
  }

  void check_schemas() {
    for (const Node* n : in_list_order()) check_schema(*n);
  }

  // Every use recorded on a value must point at an operand slot (or graph output)
  // holding that value, and every operand slot must be recorded exactly once.
  // `user_positions`, when given, holds the position of each use's node as
  // index_use_lists() found it (npos: not in the graph), so the full verifier neither
  // looks a node up twice nor reads the user node: its operands are in slot_values_.
  void check_value_uses(const Value* v, const uint32_t* user_positions = nullptr) {
    // Repeats among a few uses are found by looking back (no allocation per value);
    // long use lists go through a set.
    constexpr size_t kLookBack = 16;
    const ir::UseList& uses = v->uses();
    std::set<std::pair<const Node*, uint32_t>> seen;
    for (size_t k = 0; k < uses.size(); ++k) {
      const Use& u = uses[k];
      if (u.is_graph_output()) {
        if (u.slot >= g_.outputs().size() || g_.outputs()[u.slot] != v)
          issue("%" + v->name() + " lists a use as graph output " + std::to_string(u.slot) +
                " but that output is not %" + v->name());
      } else if (user_positions ? user_positions[k] == ir::PointerIndex::npos : !in_graph(u.user)) {
        issue("%" + v->name() + " lists a use by a node that is not in the graph");
        continue;
      } else if (user_positions) {
        const size_t first = first_slot_[user_positions[k]];
        if (u.slot >= first_slot_[user_positions[k] + 1] - first || slot_values_[first + u.slot] != v)
          issue("%" + v->name() + " lists a use as operand " + std::to_string(u.slot) + " of " + quoted(*u.user) +
                " but that operand is not %" + v->name());
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

  // Whether `v` lists `use`. The full verifier looks it up in an index of every use list
  // (scanning the list per operand was quadratic in the uses of one value: a million
  // references to %x took minutes); the index is a flat array over every operand slot and
  // graph output naming the value that lists it, and what a well-formed graph never has
  // (a slot listed by two values, a use of a node outside the graph, a slot out of range)
  // goes to a small overflow set. The incremental verifier scans short lists and indexes
  // long ones once.
  bool listed(const Value* v, const Use& use) {
    if (!indexed_) {
      const ir::UseList& uses = v->uses();
      if (uses.size() <= 32) return std::find(uses.begin(), uses.end(), use) != uses.end();
      auto [it, fresh] = long_lists_.try_emplace(v);
      if (fresh)
        for (const Use& u : uses) it->second.insert({u.user, u.slot});
      return it->second.count({use.user, use.slot}) > 0;
    }
    if (v->is_graph_input() ? is_input(v) : in_graph(v->producer())) {
      if (const std::optional<size_t> at = listed_index(use); at && listed_by_[*at] == v) return true;
      return overflow_uses_.count({v, use.user, use.slot}) > 0;
    }
    for (const Use& u : v->uses())  // a value from outside the graph: not indexed
      if (u == use) return true;
    return false;
  }

  void missing_use(const Node& n, size_t s, const Value& v) {
    issue("node " + quoted(n) + ": operand " + std::to_string(s) + " (%" + v.name() +
          ") is missing from that value's use list");
  }

  // Position of an operand slot or graph output in listed_by_; nullopt outside the graph.
  std::optional<size_t> listed_index(const Use& use) const {
    return use.is_graph_output() ? listed_index(use, ir::PointerIndex::npos) : listed_index(use, positions_.find(use.user));
  }
  // The same, given the position of the use's node (npos: not in the graph).
  std::optional<size_t> listed_index(const Use& use, uint32_t position) const {
    if (use.is_graph_output())
      return use.slot < g_.outputs().size() ? std::optional<size_t>(total_slots_ + use.slot) : std::nullopt;
    if (position == ir::PointerIndex::npos || use.slot >= first_slot_[position + 1] - first_slot_[position])
      return std::nullopt;
    return first_slot_[position] + use.slot;
  }

  void index_use_lists() {
    listed_by_.assign(total_slots_ + g_.outputs().size(), nullptr);
    auto add = [&](const Value* v) {
      for (const Use& u : v->uses()) {
        const uint32_t position = u.is_graph_output() ? ir::PointerIndex::npos : positions_.find(u.user);
        user_positions_.push_back(position);
        const std::optional<size_t> at = listed_index(u, position);
        if (at && (listed_by_[*at] == nullptr || listed_by_[*at] == v)) listed_by_[*at] = v;
        else overflow_uses_.insert({v, u.user, u.slot});
      }
    };
    for (const Value* in : g_.inputs()) add(in);
    for (const Node* n : in_list_order())
      for (const Value* out : n->outputs()) add(out);
    indexed_ = true;
  }

  void check_use_lists() {
    index_use_lists();
    // Values are visited in the order index_use_lists() recorded their uses' positions.
    size_t next_use = 0;
    auto check_uses = [&](const Value* v) {
      check_value_uses(v, user_positions_.data() + next_use);
      next_use += v->uses().size();
    };
    for (const Value* in : g_.inputs()) check_uses(in);
    size_t position = 0;
    for (const Node* n : in_list_order()) {
      for (const Value* out : n->outputs()) check_uses(out);
      // A node listed twice has one position: look the slots up through the index then.
      const Value* const* operands = first_visit_operands(n, position);
      const std::optional<uint32_t> at = operands ? std::optional<uint32_t>(position) : position_of(n);
      const bool first_visit = operands != nullptr;
      for (size_t s = 0; s < n->num_operands(); ++s) {
        const Value* v = operands ? operands[s] : n->operand(s);
        if (!v) continue;
        const bool found = first_visit && listed_by_[first_slot_[*at] + s] == v
                               ? true
                               : listed(v, Use{const_cast<Node*>(n), static_cast<uint32_t>(s)});
        if (!found) missing_use(*n, s, *v);
      }
      ++position;
    }
  }

  void check_outputs() {
    for (size_t i = 0; i < g_.outputs().size(); ++i) {
      const Value* v = g_.outputs()[i];
      if (v == nullptr) {
        issue("graph output " + std::to_string(i) + " is null");
        continue;
      }
      bool belongs = v->graph() == &g_ && (v->is_graph_input() ? is_input(v) : in_graph(v->producer()));
      if (!belongs) {
        issue("graph output " + std::to_string(i) + " (%" + v->name() + ") is not defined in this graph");
        continue;
      }
      if (!listed(v, Use{nullptr, static_cast<uint32_t>(i)}))
        issue("graph output " + std::to_string(i) + " (%" + v->name() + ") is missing from that value's use list");
    }
  }

  const ir::Graph& g_;
  std::vector<VerifierIssue> issues_;
  /// Full verifier: every node's position in the list and the index of its first operand
  /// slot among all slots in list order.
  // Node -> position in the list.
  ir::PointerIndex positions_;
  std::optional<uint32_t> position_of(const Node* n) const {
    const uint32_t p = positions_.find(n);
    return p == ir::PointerIndex::npos ? std::nullopt : std::optional<uint32_t>(p);
  }
  // The nodes in list order, as collect() found them: the later full checks walk this
  // array instead of chasing next pointers, so the memory reads of nodes ahead overlap.
  std::vector<const Node*> listed_;
  std::vector<size_t> first_slot_;  ///< by position, and one past the last node
  size_t total_slots_ = 0;
  /// Every operand slot's value, in list order (first_slot_ indexes it): read
  /// sequentially instead of through each node's argument vectors.
  std::vector<const Value*> slot_values_;
  bool repeated_nodes_ = false;  ///< the list holds a node twice
  /// The position of each use's node, in the order index_use_lists() visited the uses.
  std::vector<uint32_t> user_positions_;
  // Operand values of the node at list position `at` when it is that node's first visit
  // (its position), else null.
  const Value* const* first_visit_operands(const Node* n, size_t at) const {
    if (repeated_nodes_) {
      const std::optional<uint32_t> position = position_of(n);
      if (!position || *position != at) return nullptr;
    }
    return slot_values_.data() + first_slot_[at];
  }
  size_t current_ = 0;  ///< position of the node check_nodes is at
  /// Incremental verifier: the walk found the list sound, so graph pointers and order
  /// keys stand for membership and order.
  bool trust_order_ = false;
  bool indexed_ = false;
  std::vector<const Value*> listed_by_;
  std::set<std::tuple<const Value*, const Node*, uint32_t>> overflow_uses_;
  std::unordered_map<const Value*, std::set<std::pair<const Node*, uint32_t>>> long_lists_;
  /// Each operator's schema, classified once (nullopt: an operator the dispatcher lacks).
  // By the address of the interned operator name (ir::intern_operator).
  std::unordered_map<const std::string*, std::optional<exec::SchemaChecker>> operators_;
  std::optional<std::map<std::string, int64_t>> hints_;
  std::vector<Key> keys_;  ///< one per issue
  Key key_;
  std::vector<const Node*> calls_;
};

}  // namespace

ChangeSet changes_of(const ir::Graph& graph) {
  ChangeSet changes;
  changes.graph_changes = graph.graph_changes();
  changes.nodes.reserve(graph.touched_nodes().size());
  for (const Node* n : graph.touched_nodes())
    if (n) changes.nodes.push_back(n);
  return changes;
}

std::vector<VerifierIssue> verify_changes(const ir::Graph& graph, const ChangeSet& changes) {
  // What the walk and the touched nodes cannot see: a nest (bodies and calls), the
  // graph's declarations of inputs, symbols and claims, its mesh.
  constexpr uint8_t kWholeGraph = ir::kGraphInputs | ir::kGraphSymbols | ir::kGraphMesh | ir::kGraphSubgraphs;
  if (graph.has_subgraphs() || graph.root() != &graph || (changes.graph_changes & kWholeGraph))
    return verify_graph(graph);
  return Verifier(graph).run_changes(changes);
}

std::vector<VerifierIssue> verify_graph(const ir::Graph& graph) {
  Verifier top(graph);
  std::vector<VerifierIssue> issues = top.run();
  if (graph.root() != &graph) return issues;  // a body alone: its calls are checked from the top
  // A nest: every body on its own, then every call against the body it names. The calls
  // are the ones each graph's walk met (no second walk over a million-node list).
  std::vector<std::pair<const ir::Graph*, std::vector<const Node*>>> calls{{&graph, top.calls()}};
  for (const auto& [name, body] : graph.subgraphs()) {
    Verifier inner(*body);
    for (VerifierIssue& issue : inner.run())
      issues.push_back(VerifierIssue{"subgraph '" + name + "': " + issue.message});
    calls.emplace_back(body.get(), inner.calls());
  }
  for (const auto& [g, nodes] : calls)
    for (const Node* n : nodes) {
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

namespace {

std::vector<VerifierIssue> check_module(const ir::Module& m, bool with_graphs) {
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
    if (with_graphs)
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

}  // namespace

std::vector<VerifierIssue> verify_module(const ir::Module& module) { return check_module(module, true); }

std::vector<VerifierIssue> verify_module_links(const ir::Module& module) { return check_module(module, false); }

}  // namespace passcheck::check
