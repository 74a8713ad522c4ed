// split_joint() and join_module(): see split.h.
#include "passes/partition/split.h"

#include "framework/check/pass.h"
#include "framework/exec/op_properties.h"
#include "framework/ir/text.h"
#include "passes/ac/ac_passes.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace passcheck::passes {

namespace {

[[noreturn]] void refuse(const std::string& message) { throw check::RefusedInput("split: " + message, {}); }

}  // namespace

ir::Value* copy_input(ir::Graph& to, const ir::Value* from, ir::InputRole role) {
  ir::Value* in = to.add_input(from->name(), from->type(), from->meta(), role);
  in->set_placements(from->placements());
  return in;
}

void copy_graph_context(const ir::Graph& from, ir::Graph& to) {
  for (const auto& s : from.symbols()) to.add_symbol(s);
  for (const auto& c : from.claims()) to.add_claim(c);
  to.set_mesh(from.mesh());
  to.source_name = from.source_name;
}

const char* unsafe_to_recompute(const ir::Node& node) {
  if (exec::is_random(node)) return "random";
  if (exec::is_mutating(node)) return "mutating";
  if (exec::has_side_effects(node) || must_stay_in_forward(node)) return "side-effects";
  return nullptr;
}

SplitResult split_joint(const ir::Graph& joint, const std::vector<const ir::Value*>& saved) {
  return split_joint(joint, saved, classify_nodes(joint));
}

SplitResult split_joint(const ir::Graph& joint, const std::vector<const ir::Value*>& saved,
                        const Classification& classes) {
  std::unordered_set<const ir::Value*> requested;
  for (const ir::Value* v : saved) {
    if (v->graph() != &joint) refuse("saved value %" + v->name() + " is not a value of the joint graph");
    if (v->is_graph_input()) continue;
    if (classes.is_backward(v->producer()))
      refuse("saved value %" + v->name() + " is computed by the backward (`" + ir::print_node(*v->producer()) + "`)");
    requested.insert(v);
  }
  const MutationIndex mutations(joint);

  // What the backward reads: saved values it links, forward nodes it recomputes, module
  // inputs it takes.
  std::unordered_set<const ir::Value*> linked;
  std::unordered_set<const ir::Node*> recompute;
  std::unordered_set<const ir::Value*> inputs_read;
  std::function<void(const ir::Value*, const ir::Node*)> need = [&](const ir::Value* v, const ir::Node* reader) {
    if (v->is_graph_input()) {
      inputs_read.insert(v);
      return;
    }
    const ir::Node* p = v->producer();
    if (classes.is_backward(p)) return;
    if (requested.count(v)) {
      linked.insert(v);
      return;
    }
    if (!recompute.insert(p).second) return;
    const char* why = unsafe_to_recompute(*p);
    if (!why && mutations.reads_value_written_later(*p)) why = "reads-value-written-later";
    if (why)
      refuse("the backward needs %" + v->name() + " (read by `" + ir::print_node(*reader) + "`), but `" +
             ir::print_node(*p) + "` cannot be recomputed (" + why + ") and is not saved");
    for (size_t i = 0; i < p->num_operands(); ++i) need(p->operand(i), p);
  };
  for (const ir::Node* n : joint.nodes())
    if (classes.is_backward(n))
      for (size_t i = 0; i < n->num_operands(); ++i) need(n->operand(i), n);

  SplitResult result;
  ir::Module& module = result.module;
  for (const ir::Value* in : joint.inputs()) module.input_names.push_back(in->name());

  // Forward part: every non-backward node a forward result or a linked value depends
  // on, and every one with effects (they run once, in the forward).
  std::vector<const ir::Value*> forward_results;
  for (size_t i = 0; i < joint.outputs().size(); ++i)
    if (!classes.output_is_backward[i]) forward_results.push_back(joint.outputs()[i]);
  std::vector<const ir::Value*> links;
  for (const ir::Node* n : joint.nodes())
    for (const ir::Value* out : n->outputs())
      if (linked.count(out)) links.push_back(out);
  std::unordered_set<const ir::Node*> in_forward;
  std::vector<const ir::Node*> stack;
  auto push_producer = [&](const ir::Value* v) {
    if (v->producer()) stack.push_back(v->producer());
  };
  for (const ir::Value* v : forward_results) push_producer(v);
  for (const ir::Value* v : links) push_producer(v);
  for (const ir::Node* n : joint.nodes())
    if (!classes.is_backward(n) && (exec::is_mutating(*n) || exec::has_side_effects(*n))) stack.push_back(n);
  while (!stack.empty()) {
    const ir::Node* n = stack.back();
    stack.pop_back();
    if (!in_forward.insert(n).second) continue;
    for (size_t i = 0; i < n->num_operands(); ++i) push_producer(n->operand(i));
  }

  auto forward = std::make_unique<ir::Graph>();
  copy_graph_context(joint, *forward);
  std::unordered_map<const ir::Value*, ir::Value*> fmap;
  for (const ir::Value* in : joint.inputs()) fmap[in] = copy_input(*forward, in, in->role());
  auto fwd_lookup = [&](ir::Value* v) { return fmap.at(v); };
  for (const ir::Node* n : joint.nodes()) {
    if (!in_forward.count(n)) continue;
    ir::Node* copy = forward->clone_node(*n, fwd_lookup);
    for (size_t i = 0; i < n->num_outputs(); ++i) fmap[n->output(i)] = copy->output(i);
  }
  for (const ir::Value* v : forward_results) forward->add_output(fmap.at(v));
  for (const ir::Value* v : links) forward->add_output(fmap.at(v));

  // Backward part: linked values, then the module inputs it reads, as inputs.
  auto backward = std::make_unique<ir::Graph>();
  copy_graph_context(joint, *backward);
  std::unordered_map<const ir::Value*, ir::Value*> bmap;
  std::vector<std::optional<ir::PartOutput>> sources;
  for (size_t j = 0; j < links.size(); ++j) {
    bmap[links[j]] = copy_input(*backward, links[j], ir::InputRole::Argument);
    sources.push_back(ir::PartOutput{0, forward_results.size() + j});
    result.saved.push_back(links[j]->name());
  }
  for (const ir::Value* in : joint.inputs()) {
    if (!inputs_read.count(in)) continue;
    bmap[in] = copy_input(*backward, in, in->role());
    sources.push_back(std::nullopt);
  }
  auto bwd_lookup = [&](ir::Value* v) { return bmap.at(v); };
  // Recomputed nodes go right before their first backward reader, operands first.
  std::unordered_set<const ir::Node*> emitted;
  std::function<void(const ir::Node*)> emit_recomputed = [&](const ir::Node* p) {
    if (!recompute.count(p) || !emitted.insert(p).second) return;
    for (size_t i = 0; i < p->num_operands(); ++i)
      if (const ir::Node* q = p->operand(i)->producer()) emit_recomputed(q);
    ir::Node* copy = backward->clone_node(*p, bwd_lookup, nullptr, "_recomputed");
    copy->mutable_meta().phase = ir::Phase::Backward;
    copy->mutable_meta().custom[recomputed_from_key()] = p->output(0)->name();
    copy->mutable_meta().custom.erase(ap_must_save_key());
    copy->mutable_meta().custom.erase(ap_save_outputs_key());
    // A saved sibling output stays linked: the recomputed copy serves the others.
    for (size_t i = 0; i < p->num_outputs(); ++i) bmap.emplace(p->output(i), copy->output(i));
    ++result.recomputed_nodes;
  };
  for (const ir::Node* n : joint.nodes()) {
    if (!classes.is_backward(n)) continue;
    for (size_t i = 0; i < n->num_operands(); ++i)
      if (const ir::Node* q = n->operand(i)->producer()) emit_recomputed(q);
    ir::Node* copy = backward->clone_node(*n, bwd_lookup);
    for (size_t i = 0; i < n->num_outputs(); ++i) bmap[n->output(i)] = copy->output(i);
  }

  size_t next_forward = 0, next_backward = 0;
  for (size_t i = 0; i < joint.outputs().size(); ++i) {
    if (classes.output_is_backward[i]) {
      backward->add_output(bmap.at(joint.outputs()[i]));
      module.outputs.push_back(ir::PartOutput{1, next_backward++});
    } else {
      module.outputs.push_back(ir::PartOutput{0, next_forward++});
    }
  }
  ir::ModulePart fwd_part;
  fwd_part.name = "forward";
  fwd_part.graph = std::move(forward);
  fwd_part.input_sources.assign(joint.inputs().size(), std::nullopt);
  ir::ModulePart bwd_part;
  bwd_part.name = "backward";
  bwd_part.graph = std::move(backward);
  bwd_part.input_sources = std::move(sources);
  module.parts.push_back(std::move(fwd_part));
  module.parts.push_back(std::move(bwd_part));
  return result;
}

std::unique_ptr<ir::Graph> join_module(const ir::Module& module) {
  auto joint = std::make_unique<ir::Graph>();
  if (module.parts.empty()) return joint;
  copy_graph_context(*module.parts.front().graph, *joint);
  // Module inputs: declared as the first part that takes each one declares it.
  std::unordered_map<std::string, ir::Value*> module_inputs;
  for (const std::string& name : module.input_names) {
    const ir::Value* decl = nullptr;
    for (size_t p = 0; p < module.parts.size() && !decl; ++p)
      for (size_t i = 0; i < module.parts[p].graph->inputs().size() && !decl; ++i)
        if (!module.parts[p].input_sources[i] && module.parts[p].graph->inputs()[i]->name() == name)
          decl = module.parts[p].graph->inputs()[i];
    if (!decl) throw ir::IrError("join_module: module input %" + name + " is taken by no part");
    module_inputs[name] = copy_input(*joint, decl, decl->role());
  }
  // Per part: the joint value of each of its values.
  std::vector<std::unordered_map<const ir::Value*, ir::Value*>> maps(module.parts.size());
  auto part_output = [&](const ir::PartOutput& o) {
    const ir::Graph& g = *module.parts.at(o.part).graph;
    return maps.at(o.part).at(g.outputs().at(o.output));
  };
  for (size_t p = 0; p < module.parts.size(); ++p) {
    const ir::ModulePart& part = module.parts[p];
    auto& map = maps[p];
    for (size_t i = 0; i < part.graph->inputs().size(); ++i) {
      const ir::Value* in = part.graph->inputs()[i];
      map[in] = part.input_sources[i] ? part_output(*part.input_sources[i]) : module_inputs.at(in->name());
    }
    for (const ir::Node* n : part.graph->nodes()) {
      ir::Node* copy = joint->clone_node(*n, [&](ir::Value* v) { return map.at(v); });
      for (size_t i = 0; i < n->num_outputs(); ++i) map[n->output(i)] = copy->output(i);
    }
  }
  for (const ir::PartOutput& o : module.outputs) joint->add_output(part_output(o));
  return joint;
}

}  // namespace passcheck::passes
