// Differential symbolization (symbolize.h): a lockstep walk over the traces that fits
// every integer which differs between them to a*s + b.
#include "framework/sym/symbolize.h"

#include "framework/ir/text.h"

#include <cstring>
#include <string>
#include <unordered_map>

namespace passcheck::sym {

namespace {

class Symbolizer {
 public:
  Symbolizer(const std::vector<TraceAt>& traces, const Symbol& symbol) : traces_(traces), symbol_(symbol) {}

  std::unique_ptr<ir::Graph> run() {
    validate_traces();
    const ir::Graph& base = *traces_[0].graph;
    std::unique_ptr<ir::Graph> result = base.clone();
    result->add_symbol(symbol_);
    const std::map<std::string, int64_t> hints = result->symbol_hints();

    value_maps_.resize(traces_.size());
    const size_t num_inputs = base.inputs().size();
    for (size_t t = 1; t < traces_.size(); ++t)
      if (traces_[t].graph->inputs().size() != num_inputs)
        fail_graph(t, "they have " + std::to_string(num_inputs) + " and " +
                          std::to_string(traces_[t].graph->inputs().size()) + " inputs");
    for (size_t i = 0; i < num_inputs; ++i) {
      std::vector<const ir::Value*> inputs;
      for (const TraceAt& t : traces_) inputs.push_back(t.graph->inputs()[i]);
      for (size_t t = 1; t < traces_.size(); ++t) {
        if (inputs[t]->role() != inputs[0]->role() || inputs[t]->type() != inputs[0]->type())
          fail_graph(t, "input " + std::to_string(i) + " (%" + inputs[0]->name() + ") differs in role or type");
        value_maps_[t][inputs[t]] = inputs[0];
      }
      std::string where = "input %" + inputs[0]->name();
      if (auto meta = fit_meta(inputs, where, hints)) result->inputs()[i]->set_meta(*meta);
    }

    std::vector<ir::Node*> result_nodes = result->node_list();
    std::vector<std::vector<ir::Node*>> nodes;
    for (const TraceAt& t : traces_) nodes.push_back(t.graph->node_list());
    const size_t count = nodes[0].size();
    for (size_t k = 0; k < count; ++k) {
      for (size_t t = 1; t < traces_.size(); ++t)
        if (k >= nodes[t].size())
          fail_node(t, *nodes[0][k], nullptr, "the trace at " + at(t) + " ends before this node");
      std::vector<const ir::Node*> same;
      for (size_t t = 0; t < traces_.size(); ++t) same.push_back(nodes[t][k]);
      symbolize_node(same, *result_nodes[k], hints);
    }
    for (size_t t = 1; t < traces_.size(); ++t) {
      if (nodes[t].size() > count)
        fail_node(t, *nodes[t][count], nullptr, "the trace at " + at(0) + " ends before this node");
      const auto& outs0 = base.outputs();
      const auto& outs = traces_[t].graph->outputs();
      if (outs.size() != outs0.size())
        fail_graph(t, "they return " + std::to_string(outs0.size()) + " and " + std::to_string(outs.size()) + " values");
      for (size_t i = 0; i < outs.size(); ++i)
        if (mapped(t, outs[i]) != outs0[i])
          fail_graph(t, "graph output " + std::to_string(i) + " is %" + outs0[i]->name() + " in one and %" +
                            outs[i]->name() + " in the other");
    }
    return result;
  }

 private:
  void validate_traces() {
    if (traces_.size() < 3)
      throw SymbolizeError("symbolization needs three traces (two to fit, one to confirm), got " +
                           std::to_string(traces_.size()));
    if (traces_[0].value != symbol_.hint)
      throw SymbolizeError("the first trace must be at the hint " + std::to_string(symbol_.hint) + " of " +
                           symbol_.name + ", not at " + std::to_string(traces_[0].value));
    for (size_t i = 0; i < traces_.size(); ++i) {
      if (!traces_[i].graph) throw SymbolizeError("trace " + std::to_string(i) + " is missing");
      for (size_t j = 0; j < i; ++j)
        if (traces_[i].value == traces_[j].value)
          throw SymbolizeError("two traces at the same value " + symbol_.name + "=" + std::to_string(traces_[i].value));
    }
  }

  std::string at(size_t t) const { return symbol_.name + "=" + std::to_string(traces_[t].value); }

  [[noreturn]] void fail_graph(size_t t, const std::string& what) const {
    throw SymbolizeError("traces at " + at(0) + " and " + at(t) + " are not isomorphic: " + what);
  }

  // Names the first differing node with both texts, so shape-dependent control flow is
  // visible where it starts.
  [[noreturn]] void fail_node(size_t t, const ir::Node& node, const ir::Node* other, const std::string& what) const {
    std::string message = "traces at " + at(0) + " and " + at(t) + " are not isomorphic at node " +
                          (node.num_outputs() ? "%" + node.output()->name() : node.op()) + ": " + what +
                          "\n  at " + at(0) + ": " + ir::print_node(node);
    if (other) message += "\n  at " + at(t) + ": " + ir::print_node(*other);
    throw SymbolizeError(message + "\n(shape-dependent control flow or a shape-dependent constant in the model)");
  }

  const ir::Value* mapped(size_t t, const ir::Value* v) const {
    if (t == 0) return v;
    auto it = value_maps_[t].find(v);
    return it == value_maps_[t].end() ? nullptr : it->second;
  }

  // a*s + b, or a*s^2 + b*s + c (attention scores are [seq, seq], their strides grow
  // with seq^2), through every (value, observation) pair; fitted on the first traces
  // and confirmed on the others, nullopt when no such polynomial with integer
  // coefficients fits.
  std::optional<Expr> fit(const std::vector<int64_t>& observed) const {
    bool all_equal = true;
    for (int64_t o : observed) all_equal = all_equal && o == observed[0];
    if (all_equal) return Expr::constant(observed[0]);
    auto v = [&](size_t t) { return traces_[t].value; };
    auto fits = [&](int64_t a, int64_t b, int64_t c) {
      for (size_t t = 0; t < traces_.size(); ++t)
        if (a * v(t) * v(t) + b * v(t) + c != observed[t]) return false;
      return true;
    };
    const Expr s = Expr::symbol(symbol_.name);
    // Slope between traces i and j: a*(vi + vj) + b, an integer when the fit is integral.
    auto slope = [&](size_t i, size_t j) -> std::optional<int64_t> {
      const int64_t dv = v(i) - v(j), dobs = observed[i] - observed[j];
      if (dobs % dv != 0) return std::nullopt;
      return dobs / dv;
    };
    if (auto m01 = slope(0, 1)) {
      const int64_t b = *m01, c = observed[0] - b * v(0);
      if (fits(0, b, c)) return b * s + c;
    }
    if (traces_.size() < 4) return std::nullopt;  // a quadratic fit needs a fourth trace to confirm
    auto m01 = slope(0, 1), m12 = slope(1, 2);
    if (!m01 || !m12 || (*m01 - *m12) % (v(0) - v(2)) != 0) return std::nullopt;
    const int64_t a = (*m01 - *m12) / (v(0) - v(2));
    const int64_t b = *m01 - a * (v(0) + v(1));
    const int64_t c = observed[0] - a * v(0) * v(0) - b * v(0);
    if (!fits(a, b, c)) return std::nullopt;
    return a * (s * s) + b * s + c;
  }

  std::string observations(const std::vector<int64_t>& observed) const {
    std::string out;
    for (size_t t = 0; t < observed.size(); ++t)
      out += (t ? ", " : "") + at(t) + " -> " + std::to_string(observed[t]);
    return out;
  }

  // Symbolic metadata for one value across the traces; nullopt when it is concrete.
  std::optional<ir::TensorMeta> fit_meta(const std::vector<const ir::Value*>& values, const std::string& where,
                                         const std::map<std::string, int64_t>& hints, const ir::Node* node = nullptr,
                                         const std::vector<const ir::Node*>* same = nullptr) {
    const auto& m0 = values[0]->meta();
    if (!m0) return std::nullopt;
    for (size_t t = 1; t < values.size(); ++t) {
      const auto& m = values[t]->meta();
      std::string problem;
      if (!m) problem = "one trace has tensor metadata, the other none";
      else if (m->dtype != m0->dtype || m->device != m0->device) problem = "dtype or device differs";
      else if (m->sizes.size() != m0->sizes.size() || m->strides.size() != m0->strides.size()) problem = "rank differs";
      if (!problem.empty()) {
        if (node) fail_node(t, *node, (*same)[t], where + ": " + problem);
        fail_graph(t, where + ": " + problem);
      }
    }
    bool symbolic = false;
    auto fit_list = [&](bool strides) {
      std::vector<Expr> exprs;
      const size_t rank = strides ? m0->strides.size() : m0->sizes.size();
      for (size_t d = 0; d < rank; ++d) {
        std::vector<int64_t> observed;
        for (const ir::Value* v : values) observed.push_back(strides ? v->meta()->strides[d] : v->meta()->sizes[d]);
        auto e = fit(observed);
        if (!e) {
          std::string what = where + ": " + (strides ? "stride " : "size ") + std::to_string(d) +
                             " is not a polynomial of degree <= 2 in " + symbol_.name + " (" + observations(observed) + ")";
          if (node) fail_node(1, *node, (*same)[1], what);
          fail_graph(1, what);
        }
        symbolic = symbolic || !e->is_constant();
        exprs.push_back(*e);
      }
      return exprs;
    };
    std::vector<Expr> sizes = fit_list(false);
    std::vector<Expr> strides = fit_list(true);
    if (!symbolic) return std::nullopt;
    ir::TensorMeta meta = *m0;
    meta.set_symbolic(std::move(sizes), std::move(strides), hints);
    return meta;
  }

  ir::Arg fit_arg(const std::vector<const ir::Arg*>& args, const std::vector<const ir::Node*>& same,
                  const std::string& where) {
    const ir::Arg& a0 = *args[0];
    for (size_t t = 1; t < args.size(); ++t) {
      const ir::Arg& a = *args[t];
      if (a.kind != a0.kind) fail_node(t, *same[0], same[t], where + " has a different kind");
      if (a.kind == ir::Arg::Kind::List && a.list().size() != a0.list().size())
        fail_node(t, *same[0], same[t], where + " is a list of " + std::to_string(a0.list().size()) + " items at " +
                                            at(0) + " but of " + std::to_string(a.list().size()) + " at " + at(t));
      if (a.kind == ir::Arg::Kind::Value && mapped(t, a.value) != a0.value)
        fail_node(t, *same[0], same[t], where + " reads a different value");
      if (a.kind == ir::Arg::Kind::Float && std::memcmp(&a.f, &a0.f, sizeof a.f) != 0)
        fail_node(t, *same[0], same[t], where + " is a float constant that changes with " + symbol_.name);
      if (a.kind != ir::Arg::Kind::Int && a.kind != ir::Arg::Kind::List && a.kind != ir::Arg::Kind::Value &&
          a.kind != ir::Arg::Kind::Float && a != a0)
        fail_node(t, *same[0], same[t], where + " differs");
    }
    if (a0.kind == ir::Arg::Kind::Int) {
      std::vector<int64_t> observed;
      for (const ir::Arg* a : args) observed.push_back(a->i);
      auto e = fit(observed);
      if (!e)
        fail_node(1, *same[0], same[1],
                  where + " is not a polynomial of degree <= 2 in " + symbol_.name + " (" + observations(observed) + ")");
      return ir::Arg::symbolic(*e);
    }
    if (a0.kind == ir::Arg::Kind::List) {
      std::vector<ir::Arg> items;
      for (size_t i = 0; i < a0.list().size(); ++i) {
        std::vector<const ir::Arg*> item;
        for (const ir::Arg* a : args) item.push_back(&a->list()[i]);
        items.push_back(fit_arg(item, same, where + " item " + std::to_string(i)));
      }
      return ir::Arg::of_list(std::move(items));
    }
    return a0;
  }

  void symbolize_node(const std::vector<const ir::Node*>& same, ir::Node& result,
                      const std::map<std::string, int64_t>& hints) {
    const ir::Node& n0 = *same[0];
    for (size_t t = 1; t < same.size(); ++t) {
      const ir::Node& n = *same[t];
      if (n.op() != n0.op()) fail_node(t, n0, &n, "the operators differ");
      if (n.num_args() != n0.num_args() || n.num_outputs() != n0.num_outputs())
        fail_node(t, n0, &n, "argument or output counts differ");
      const ir::NodeMeta& m = n.meta();
      const ir::NodeMeta& m0 = n0.meta();
      if (m.phase != m0.phase || m.module_fqn != m0.module_fqn || m.custom != m0.custom)
        fail_node(t, n0, &n, "phase, module or annotations differ");
    }
    std::vector<ir::Arg> args;
    for (size_t i = 0; i < n0.num_args(); ++i) {
      std::vector<const ir::Arg*> column;
      for (const ir::Node* n : same) column.push_back(&n->arg(i));
      args.push_back(fit_arg(column, same, "argument " + std::to_string(i)));
    }
    if (args != n0.args()) {
      // fit_arg returns Value references of trace 0; rebind them to the result graph.
      std::function<void(ir::Arg&)> rebind = [&](ir::Arg& a) {
        if (a.is_value()) a.value = result.graph()->find_value(a.value->name());
        if (a.kind == ir::Arg::Kind::List)
          for (ir::Arg& item : a.mutable_list()) rebind(item);
      };
      for (ir::Arg& a : args) rebind(a);
      result.set_args(std::move(args));
    }
    for (size_t i = 0; i < n0.num_outputs(); ++i) {
      std::vector<const ir::Value*> outs;
      for (size_t t = 0; t < same.size(); ++t) {
        outs.push_back(same[t]->output(i));
        if (t) value_maps_[t][same[t]->output(i)] = n0.output(i);
      }
      if (auto meta = fit_meta(outs, "output %" + n0.output(i)->name(), hints, &n0, &same))
        result.output(i)->set_meta(*meta);
    }
  }

  const std::vector<TraceAt>& traces_;
  const Symbol& symbol_;
  std::vector<std::unordered_map<const ir::Value*, const ir::Value*>> value_maps_;
};

}  // namespace

std::unique_ptr<ir::Graph> symbolize(const std::vector<TraceAt>& traces, const Symbol& symbol) {
  return Symbolizer(traces, symbol).run();
}

}  // namespace passcheck::sym
