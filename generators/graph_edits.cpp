// Random IR-API edits of a graph (graph_edits.h).
#include "generators/graph_edits.h"

#include <random>

namespace passcheck::gen {

namespace {

using ir::Node;
using ir::Value;

std::string label(const Node* n) {
  return n->num_outputs() ? "%" + n->output(0)->name() : n->op();
}

class Editor {
 public:
  Editor(ir::Graph& g, uint64_t seed) : g_(g), rng_(seed) {}

  std::string edit() {
    // Retry a few kinds when the graph has nothing the drawn kind needs.
    for (int attempt = 0; attempt < 8; ++attempt) {
      std::string done = try_edit(pick(14));
      if (!done.empty()) return done;
    }
    return "";
  }

 private:
  size_t pick(size_t n) { return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng_) : 0; }

  Node* random_node() {
    std::vector<Node*> nodes = g_.node_list();
    return nodes.empty() ? nullptr : nodes[pick(nodes.size())];
  }

  // A value of `type` anywhere in the graph (inputs and every output), defined before
  // or after whatever will use it.
  Value* random_value(ir::ValueType type) {
    std::vector<Value*> values;
    for (Value* in : g_.inputs())
      if (in->type() == type) values.push_back(in);
    for (Node* n : g_.nodes())
      for (Value* out : n->outputs())
        if (out->type() == type) values.push_back(out);
    return values.empty() ? nullptr : values[pick(values.size())];
  }

  std::string try_edit(size_t kind) {
    Node* n = random_node();
    if (!n) return "";
    switch (kind) {
      case 0: {  // move anywhere: may put a node above its operands or below its users
        Node* anchor = random_node();
        if (anchor == n) return "";
        n->move_before(anchor);
        return "move " + label(n) + " before " + label(anchor);
      }
      case 1: {  // an operand pointed at another value of its type, maybe a later one
        if (!n->num_operands()) return "";
        const size_t slot = pick(n->num_operands());
        Value* v = random_value(n->operand(slot)->type());
        if (!v || v == n->operand(slot)) return "";
        n->replace_operand(slot, v);
        return "operand " + std::to_string(slot) + " of " + label(n) + " := %" + v->name();
      }
      case 2: {
        const ir::Phase phase = static_cast<ir::Phase>(pick(4));
        n->mutable_meta().phase = phase;
        return "phase of " + label(n) + " := " + ir::to_string(phase);
      }
      case 3: {
        const ir::RecomputePolicy policy = static_cast<ir::RecomputePolicy>(pick(5));
        n->mutable_meta().recompute = policy;
        return "recompute of " + label(n) + " := " + ir::to_string(policy);
      }
      case 4: {  // erase a node nothing uses (a wait_tensor among them)
        for (Node* m : g_.node_list())
          if (!m->has_users() && pick(3) == 0) {
            std::string what = "erase " + label(m);
            g_.erase(m);
            return what;
          }
        return "";
      }
      case 5: {  // a copy placed anywhere: its operands may come after it
        Node* anchor = pick(4) == 0 ? nullptr : random_node();
        Node* copy = g_.clone_node(*n, [](Value* v) { return v; }, anchor, "_copy");
        return "copy " + label(n) + " as " + label(copy) + (anchor ? " before " + label(anchor) : " at the end");
      }
      case 6: {  // a constant argument of the wrong kind
        for (size_t i = 0; i < n->num_args(); ++i)
          if (n->arg(i).kind == ir::Arg::Kind::Int || n->arg(i).kind == ir::Arg::Kind::Bool) {
            n->set_arg(i, ir::Arg::string("wrong"));
            return "argument " + std::to_string(i) + " of " + label(n) + " := a string";
          }
        return "";
      }
      case 7: {  // every use of a value moved to another, maybe a later one
        if (!n->num_outputs()) return "";
        Value* from = n->output(pick(n->num_outputs()));
        Value* to = random_value(from->type());
        if (!to || to == from) return "";
        from->replace_all_uses_with(to);
        return "uses of %" + from->name() + " -> %" + to->name();
      }
      case 8: {  // harmless
        if (!n->num_outputs()) return "";
        Value* v = n->output(0);
        const std::string old = v->name();
        g_.rename(v, g_.unique_name(old + "_renamed"));
        return "rename %" + old + " to %" + v->name();
      }
      case 9: {
        n->mutable_meta().ac_region_id = pick(3) == 0 ? -1 : static_cast<int64_t>(pick(4));
        return "ac_region of " + label(n) + " := " + std::to_string(*n->meta().ac_region_id);
      }
      case 10: {  // wanted placements, of a wrong count half the time
        std::vector<std::vector<ir::Placement>> wanted(n->num_operands() + pick(2));
        n->mutable_meta().wanted_placements = wanted;
        return "wanted placements of " + label(n) + " := " + std::to_string(wanted.size()) + " slots";
      }
      case 11: {  // a graph output pointed at another value
        if (g_.outputs().empty()) return "";
        const size_t i = pick(g_.outputs().size());
        Value* v = random_value(g_.outputs()[i]->type());
        if (!v) return "";
        g_.set_output(i, v);
        return "output " + std::to_string(i) + " := %" + v->name();
      }
      case 12: {  // marked (or unmarked) as a rematerialized duplicate
        ir::NodeMeta& m = n->mutable_meta();
        if (m.custom.erase("recomputed_from")) return "unmark " + label(n) + " as a duplicate";
        m.custom["recomputed_from"] = "x";
        return "mark " + label(n) + " as a duplicate";
      }
      default: {  // new output metadata: a dtype change the verifier need not mind
        if (!n->num_outputs() || !n->output(0)->meta()) return "";
        ir::TensorMeta meta = *n->output(0)->meta();
        meta.dtype = meta.dtype == c10::ScalarType::Float ? c10::ScalarType::Double : c10::ScalarType::Float;
        n->output(0)->set_meta(meta);
        return "dtype of %" + n->output(0)->name() + " changed";
      }
    }
  }

  ir::Graph& g_;
  std::mt19937_64 rng_;
};

}  // namespace

std::vector<std::string> apply_random_edits(ir::Graph& graph, uint64_t seed, int count) {
  Editor editor(graph, seed);
  std::vector<std::string> done;
  for (int i = 0; i < count; ++i) {
    std::string edit = editor.edit();
    if (!edit.empty()) done.push_back(std::move(edit));
  }
  return done;
}

}  // namespace passcheck::gen
