// Nested subgraphs (subgraph.h): call nodes, walking a nest, inlining every call and
// outlining repeated transformer-layer regions into shared subgraphs.
#include "framework/ir/subgraph.h"

#include "framework/ir/text.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace passcheck::ir {

bool is_invoke_subgraph(const Node& node) {
  // Operator names are interned: one address comparison, no read of the name.
  static const std::string* const invoke = intern_operator(kInvokeSubgraphOp);
  return &node.op() == invoke;
}

std::string called_subgraph_name(const Node& node) {
  if (!is_invoke_subgraph(node) || node.num_args() == 0 || node.arg(0).kind != Arg::Kind::String) return "";
  return node.arg(0).str();
}

Graph* called_subgraph(const Node& node) {
  std::string name = called_subgraph_name(node);
  return name.empty() ? nullptr : node.graph()->find_subgraph(name);
}

std::vector<Value*> call_operands(const Node& node) {
  std::vector<Value*> operands;
  for (size_t i = 1; i < node.num_args(); ++i) node.arg(i).for_each_value([&](Value* v) { operands.push_back(v); });
  return operands;
}

std::string call_problem(const Node& call) {
  if (call.num_args() != 2 || call.arg(0).kind != Arg::Kind::String || call.arg(1).kind != Arg::Kind::List)
    return std::string(kInvokeSubgraphOp) + " takes a subgraph name and a list of operands: (\"name\", [%a, %b])";
  const std::string& name = call.arg(0).str();
  const Graph* body = call.graph()->find_subgraph(name);
  if (!body) return "call of unknown subgraph '" + name + "' (define it with a 'subgraph " + name + "(...)' block)";
  std::vector<Value*> operands = call_operands(call);
  if (operands.size() != call.arg(1).list().size())
    return "call of subgraph '" + name + "' passes a constant operand; every operand must be a value";
  if (operands.size() != body->inputs().size())
    return "call of subgraph '" + name + "' passes " + std::to_string(operands.size()) + " operand(s) but it takes " +
           std::to_string(body->inputs().size());
  for (size_t i = 0; i < operands.size(); ++i) {
    const Value* in = body->inputs()[i];
    if (operands[i]->type() != in->type() || operands[i]->meta() != in->meta())
      return "call of subgraph '" + name + "': operand " + std::to_string(i) + " %" + operands[i]->name() + " is " +
             print_type(*operands[i]) + " but input %" + in->name() + " is " + print_type(*in);
  }
  if (call.num_outputs() != body->outputs().size())
    return "call of subgraph '" + name + "' defines " + std::to_string(call.num_outputs()) + " output(s) but it returns " +
           std::to_string(body->outputs().size());
  for (size_t i = 0; i < call.num_outputs(); ++i) {
    const Value* out = body->outputs()[i];
    if (call.output(i)->type() != out->type() || call.output(i)->meta() != out->meta())
      return "call of subgraph '" + name + "': output " + std::to_string(i) + " %" + call.output(i)->name() + " is " +
             print_type(*call.output(i)) + " but the subgraph returns %" + out->name() + " : " + print_type(*out);
  }
  return "";
}

Node* create_invoke_subgraph(Graph& caller, const std::string& name, const std::vector<Value*>& operands,
                             Node* insert_before) {
  const Graph* body = caller.find_subgraph(name);
  if (!body) throw IrError("no subgraph named '" + name + "'");
  if (body->inputs().size() != operands.size())
    throw IrError("subgraph '" + name + "' takes " + std::to_string(body->inputs().size()) + " input(s) but the call passes " +
                  std::to_string(operands.size()));
  std::vector<Arg> items;
  for (Value* v : operands) items.push_back(Arg::of(v));
  Node* call = caller.create(kInvokeSubgraphOp, {Arg::string(name), Arg::of_list(std::move(items))}, insert_before);
  for (const Value* out : body->outputs()) call->add_output(out->type(), out->meta(), out->name())->set_placements(out->placements());
  return call;
}

std::vector<const Graph*> graphs_of(const Graph& top) {
  std::vector<const Graph*> out{&top};
  for (const auto& entry : top.root()->subgraphs()) out.push_back(entry.second.get());
  return out;
}

std::vector<Graph*> graphs_of(Graph& top) {
  std::vector<Graph*> out{&top};
  for (const auto& entry : top.root()->subgraphs()) out.push_back(entry.second.get());
  return out;
}

size_t total_nodes(const Graph& top) {
  size_t n = 0;
  for (const Graph* g : graphs_of(top)) n += g->num_nodes();
  return n;
}

namespace {

// The call graph of a nest walked depth first without recursion (a file can nest calls
// thousands deep): for every graph, depth and expanded size from its callees', or the
// first cycle met.
struct CallWalk {
  std::unordered_map<const Graph*, CallNesting> done;
  std::string cycle;
};

std::vector<const Graph*> callees_of(const Graph& g) {
  std::vector<const Graph*> out;
  for (const Node* n : g.nodes()) {
    std::string callee = called_subgraph_name(*n);
    if (const Graph* body = callee.empty() ? nullptr : g.find_subgraph(callee)) out.push_back(body);
  }
  return out;
}

uint64_t saturating_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

CallWalk walk_calls(const Graph& top) {
  CallWalk walk;
  if (top.root()->subgraphs().empty()) {
    // Nothing to call: no walk over the nodes (the parser and the verifier ask this of
    // every graph, a million-node one included).
    walk.done[&top] = CallNesting{0, top.num_nodes()};
    return walk;
  }
  struct Frame {
    const Graph* graph;
    std::vector<const Graph*> callees;
    size_t next = 0;
  };
  std::unordered_set<const Graph*> on_stack;
  for (const Graph* start : graphs_of(top)) {
    if (walk.done.count(start)) continue;
    std::vector<Frame> stack;
    stack.push_back(Frame{start, callees_of(*start)});
    on_stack.insert(start);
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.next < frame.callees.size()) {
        const Graph* callee = frame.callees[frame.next++];
        if (walk.done.count(callee)) continue;
        if (on_stack.count(callee)) {
          auto from = std::find_if(stack.begin(), stack.end(), [&](const Frame& f) { return f.graph == callee; });
          for (auto it = from; it != stack.end(); ++it) walk.cycle += it->graph->subgraph_name() + " -> ";
          walk.cycle += callee->subgraph_name();
          return walk;
        }
        on_stack.insert(callee);
        stack.push_back(Frame{callee, callees_of(*callee)});
        continue;
      }
      CallNesting nesting;
      nesting.expanded_nodes = frame.graph->num_nodes();
      for (const Graph* callee : frame.callees) {
        const CallNesting& inner = walk.done.at(callee);
        nesting.depth = std::max(nesting.depth, inner.depth + 1);
        nesting.expanded_nodes = saturating_add(nesting.expanded_nodes, inner.expanded_nodes);
      }
      walk.done[frame.graph] = nesting;
      on_stack.erase(frame.graph);
      stack.pop_back();
    }
  }
  return walk;
}

}  // namespace

std::string find_call_cycle(const Graph& top) { return walk_calls(top).cycle; }

CallNesting call_nesting(const Graph& top) {
  CallWalk walk = walk_calls(*top.root());
  if (!walk.cycle.empty()) return CallNesting{SIZE_MAX, UINT64_MAX};
  return walk.done.at(&top);
}

std::string nesting_problem(const Graph& top) {
  CallWalk walk = walk_calls(*top.root());
  if (!walk.cycle.empty()) return "subgraph calls recurse: " + walk.cycle;
  const CallNesting& nesting = walk.done.at(top.root());
  if (nesting.depth > kMaxCallDepth)
    return "subgraph calls nest " + std::to_string(nesting.depth) + " deep; passcheck runs at most " +
           std::to_string(kMaxCallDepth) + " levels";
  if (nesting.expanded_nodes > kMaxExpandedNodes)
    return "subgraph calls expand to " +
           (nesting.expanded_nodes == UINT64_MAX ? std::string("more than 2^64") : std::to_string(nesting.expanded_nodes)) +
           " nodes once every call is counted; passcheck runs or inlines at most " +
           std::to_string(kMaxExpandedNodes) + " (a call tree that fans out)";
  return "";
}

namespace {

// A call's FQN and sequence number are the prefix and base of its body's (outlining
// stores them relative to the layer), so inlining restores the flat graph's metadata.
void compose_meta(NodeMeta& inner, const NodeMeta& call) {
  if (!call.module_fqn.empty())
    inner.module_fqn = inner.module_fqn.empty() ? call.module_fqn : call.module_fqn + "." + inner.module_fqn;
  if (call.seq_nr >= 0 && inner.seq_nr >= 0) inner.seq_nr += call.seq_nr;
}

void inline_call(Graph& g, Node* call) {
  const Graph* body = called_subgraph(*call);
  if (!body) throw IrError("call of unknown subgraph '" + called_subgraph_name(*call) + "'");
  std::vector<Value*> operands = call_operands(*call);
  if (operands.size() != body->inputs().size())
    throw IrError("call of subgraph '" + body->subgraph_name() + "' passes " + std::to_string(operands.size()) +
                  " operand(s) for " + std::to_string(body->inputs().size()) + " input(s)");
  std::unordered_map<const Value*, Value*> map;
  for (size_t i = 0; i < operands.size(); ++i) map[body->inputs()[i]] = operands[i];
  std::vector<Node*> nested_calls;
  for (const Node* n : body->nodes()) {
    Node* copy = g.clone_node(*n, [&](Value* v) { return map.at(v); }, call);
    compose_meta(copy->mutable_meta(), call->meta());
    for (size_t i = 0; i < n->num_outputs(); ++i) map[n->output(i)] = copy->output(i);
    if (is_invoke_subgraph(*copy)) nested_calls.push_back(copy);
  }
  for (size_t i = 0; i < call->num_outputs(); ++i) call->output(i)->replace_all_uses_with(map.at(body->outputs()[i]));
  g.erase(call);
  for (Node* nested : nested_calls) inline_call(g, nested);
}

}  // namespace

size_t inline_subgraphs(Graph& graph) {
  if (graph.root() != &graph) throw IrError("inline_subgraphs runs on a top graph, not on subgraph " + graph.subgraph_name());
  if (!graph.has_subgraphs()) return 0;
  std::string problem = nesting_problem(graph);
  if (!problem.empty()) throw IrError(problem);
  size_t calls = 0;
  for (Node* n : graph.node_list())
    if (is_invoke_subgraph(*n)) {
      inline_call(graph, n);
      ++calls;
    }
  std::vector<std::string> names;
  for (const auto& entry : graph.subgraphs()) names.push_back(entry.first);
  for (const std::string& name : names) graph.remove_subgraph(name);
  return calls;
}

// ---- layer deduplication -------------------------------------------------------------

namespace {

// "model.layers.3" for "model.layers.3.attention.wq"; empty when no `layers.<digits>`.
std::string layer_key(const std::string& fqn) {
  const std::string word = "layers.";
  for (size_t p = fqn.find(word); p != std::string::npos; p = fqn.find(word, p + 1)) {
    if (p > 0 && fqn[p - 1] != '.') continue;
    size_t end = p + word.size();
    size_t digits = end;
    while (digits < fqn.size() && std::isdigit(static_cast<unsigned char>(fqn[digits]))) ++digits;
    if (digits == end || (digits < fqn.size() && fqn[digits] != '.')) continue;
    return fqn.substr(0, digits);
  }
  return "";
}

struct Region {
  std::string key;
  Phase phase;
  std::vector<Node*> nodes;
};

// The body a region would become, with canonical names: inputs x0.., outputs v0...
// Returns null when the region cannot be outlined (a boundary value that is no tensor).
std::unique_ptr<Graph> build_body(const Region& r, int64_t base_seq, std::vector<Value*>& inputs,
                                  std::vector<Value*>& outputs) {
  std::unordered_set<const Node*> inside(r.nodes.begin(), r.nodes.end());
  std::unordered_set<Value*> seen_inputs;
  for (Node* n : r.nodes)
    for (Value* v : n->operands())
      if ((v->is_graph_input() || !inside.count(v->producer())) && seen_inputs.insert(v).second) inputs.push_back(v);
  for (Node* n : r.nodes)
    for (Value* v : n->outputs()) {
      bool escapes = false;
      for (const Use& u : v->uses()) escapes |= u.is_graph_output() || !inside.count(u.user);
      if (escapes) outputs.push_back(v);
    }
  for (Value* v : inputs)
    if (v->type() != ValueType::Tensor) return nullptr;
  for (Value* v : outputs)
    if (v->type() != ValueType::Tensor) return nullptr;
  auto body = std::make_unique<Graph>();
  std::unordered_map<Value*, Value*> map;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Value* in = body->add_input("x" + std::to_string(i), inputs[i]->type(), inputs[i]->meta());
    in->set_placements(inputs[i]->placements());
    map[inputs[i]] = in;
  }
  size_t next = 0;
  for (Node* n : r.nodes) {
    std::vector<Arg> args = n->args();
    std::function<void(Arg&)> remap = [&](Arg& a) {
      if (a.kind == Arg::Kind::Value) a.value = map.at(a.value);
      else if (a.kind == Arg::Kind::List)
        for (Arg& e : a.mutable_list()) remap(e);
    };
    for (Arg& a : args) remap(a);
    Node* copy = body->create(n->op(), std::move(args));
    copy->mutable_meta() = n->meta();
    NodeMeta& m = copy->mutable_meta();
    m.module_fqn = m.module_fqn == r.key ? "" : m.module_fqn.substr(r.key.size() + 1);
    if (m.seq_nr >= 0) m.seq_nr -= base_seq;
    for (Value* out : n->outputs()) {
      Value* c = copy->add_output(out->type(), out->meta(), "v" + std::to_string(next++));
      c->set_placements(out->placements());
      map[out] = c;
    }
  }
  for (Value* v : outputs) body->add_output(map.at(v));
  return body;
}

std::vector<Region> find_regions(const Graph& graph) {
  std::vector<Region> regions;
  for (Node* n : graph.nodes()) {
    const Phase phase = n->meta().phase;
    std::string key = (phase == Phase::Forward || phase == Phase::Backward) && !is_invoke_subgraph(*n)
                          ? layer_key(n->meta().module_fqn)
                          : "";
    if (key.empty()) continue;
    if (regions.empty() || regions.back().key != key || regions.back().phase != phase ||
        regions.back().nodes.back()->next() != n)
      regions.push_back(Region{key, phase, {}});
    regions.back().nodes.push_back(n);
  }
  return regions;
}

}  // namespace

OutlineReport outline_repeated_layers(Graph& graph) {
  OutlineReport report;
  if (graph.root() != &graph) throw IrError("outline_repeated_layers runs on a top graph");
  std::vector<Region> regions = find_regions(graph);
  // Sequence numbers of a layer's backward nodes are those of its forward nodes, so
  // both are stored relative to the first forward sequence number of the layer.
  std::map<std::string, int64_t> base_seq;
  for (const Region& r : regions)
    for (const Node* n : r.nodes)
      if (n->meta().seq_nr >= 0 && (r.phase == Phase::Forward || !base_seq.count(r.key))) {
        auto [it, fresh] = base_seq.emplace(r.key, n->meta().seq_nr);
        if (!fresh && r.phase == Phase::Forward) it->second = std::min(it->second, n->meta().seq_nr);
      }
  std::map<std::string, std::string> subgraph_of_text;
  std::set<std::string> created;
  for (const Region& r : regions) {
    int64_t base = base_seq.count(r.key) ? base_seq.at(r.key) : 0;
    bool below_base = false;
    for (const Node* n : r.nodes) below_base |= n->meta().seq_nr >= 0 && n->meta().seq_nr < base;
    std::vector<Value*> inputs, outputs;
    std::unique_ptr<Graph> body = r.nodes.size() < 2 || below_base ? nullptr : build_body(r, base, inputs, outputs);
    if (!body) {
      ++report.skipped;
      continue;
    }
    std::string text = body->print();
    auto known = subgraph_of_text.find(text);
    std::string name;
    if (known != subgraph_of_text.end()) {
      name = known->second;
    } else {
      std::string stem = r.key + (r.phase == Phase::Forward ? "_forward" : "_backward");
      for (char& c : stem)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      name = stem;
      for (int k = 2; graph.find_subgraph(name); ++k) name = stem + "_" + std::to_string(k);
      graph.add_subgraph(name, std::move(body));
      subgraph_of_text.emplace(std::move(text), name);
      ++report.subgraphs;
    }
    Node* call = create_invoke_subgraph(graph, name, inputs, r.nodes.front());
    call->mutable_meta().phase = r.phase;
    call->mutable_meta().module_fqn = r.key;
    call->mutable_meta().seq_nr = base_seq.count(r.key) ? base : -1;
    std::vector<std::string> names;
    for (size_t i = 0; i < outputs.size(); ++i) {
      names.push_back(outputs[i]->name());
      outputs[i]->replace_all_uses_with(call->output(i));
    }
    for (auto it = r.nodes.rbegin(); it != r.nodes.rend(); ++it) graph.erase(*it);
    for (size_t i = 0; i < outputs.size(); ++i) graph.rename(call->output(i), names[i]);
    ++report.regions;
  }
  return report;
}

}  // namespace passcheck::ir
