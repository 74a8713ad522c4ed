// split_joint() and join_module(): see split.h.
#include "passes/partition/split.h"

#include "framework/check/pass.h"
#include "framework/exec/op_properties.h"
#include "framework/ir/text.h"
#include "passes/ac/ac_passes.h"
#include "passes/partition/op_facts.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <unordered_map>

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

namespace {

// The joint value behind a value id (Classification).
const ir::Value* value_at(const ir::Graph& joint, const Classification& classes, uint32_t id) {
  if (id < classes.num_inputs) return joint.inputs()[id];
  const uint32_t p = classes.value_producer[id];
  return classes.nodes[p]->output(id - classes.num_inputs - classes.first_output[p]);
}

// The clone_node lookup from joint values to their copies (`map`, by value id).
// clone_node asks for a node's operands in slot order, so the k-th question about the
// node at `position` is checked against slot k and answered from the operand ids; any
// other value is found by its id.
class CopyLookup {
 public:
  CopyLookup(const Classification& classes, const std::vector<ir::Value*>& map) : classes_(classes), map_(map) {}
  void start(uint32_t position) {
    position_ = position;
    slot_ = 0;
  }
  ir::Value* operator()(ir::Value* v) {
    const ir::Node* n = classes_.nodes[position_];
    uint32_t id;
    if (slot_ < n->num_operands() && n->operand(slot_) == v) id = classes_.operand_ids[classes_.operand_begin[position_] + slot_];
    else id = classes_.value_id(v);
    ++slot_;
    if (id == Classification::npos || !map_[id])
      throw std::out_of_range("split: %" + v->name() + " has no copy in the part");
    return map_[id];
  }

 private:
  const Classification& classes_;
  const std::vector<ir::Value*>& map_;
  uint32_t position_ = 0;
  size_t slot_ = 0;
};

// While a consumed joint graph gives its nodes away, an exception would leave the module
// holding half a graph: the guard puts an empty one (same context) in its place.
class HalfMovedGuard {
 public:
  explicit HalfMovedGuard(std::unique_ptr<ir::Graph>* owner) : owner_(owner) {}
  HalfMovedGuard(const HalfMovedGuard&) = delete;
  HalfMovedGuard& operator=(const HalfMovedGuard&) = delete;
  ~HalfMovedGuard() {
    if (!owner_) return;
    auto empty = std::make_unique<ir::Graph>();
    copy_graph_context(**owner_, *empty);
    *owner_ = std::move(empty);
  }
  void disarm() { owner_ = nullptr; }

 private:
  std::unique_ptr<ir::Graph>* owner_;
};

// split_joint, copying every node (owner == null) or moving the nodes that run once out
// of the joint graph `owner` holds (split_joint_consuming).
SplitResult split(const ir::Graph& joint, std::unique_ptr<ir::Graph>* owner, const std::vector<const ir::Value*>& saved,
                  const Classification& classes, const WrittenStorage* known_written) {
  ir::Graph* consumed = owner ? owner->get() : nullptr;  // the joint graph, mutable
  constexpr uint32_t npos = Classification::npos;
  const size_t num_nodes = classes.nodes.size();
  const size_t num_values = classes.num_values();
  std::vector<uint8_t> requested(num_values, 0);
  for (const ir::Value* v : saved) {
    if (v->graph() != &joint) refuse("saved value %" + v->name() + " is not a value of the joint graph");
    if (v->is_graph_input()) continue;
    if (classes.is_backward(v->producer()))
      refuse("saved value %" + v->name() + " is computed by the backward (`" + ir::print_node(*v->producer()) + "`)");
    const uint32_t id = classes.value_id(v);
    if (id != npos) requested[id] = 1;
  }
  OpFactsCache ops;
  std::optional<WrittenStorage> own_written;
  if (!known_written) own_written.emplace(classes, ops);
  const WrittenStorage& written = known_written ? *known_written : *own_written;

  // What the backward reads: saved values it links, forward nodes it recomputes, module
  // inputs it takes. A depth-first walk in the order of the recursive definition (a
  // node's operands in slot order), so the first node refused is the one it names.
  std::vector<uint8_t> linked(num_values, 0);
  std::vector<uint8_t> recompute(num_nodes, 0);
  std::vector<uint8_t> inputs_read(classes.num_inputs, 0);
  struct Need {
    uint32_t value;
    uint32_t reader;  // position
  };
  std::vector<Need> stack;
  auto walk = [&](Need first) {
    stack.push_back(first);
    while (!stack.empty()) {
      const Need need = stack.back();
      stack.pop_back();
      if (need.value == npos) throw std::out_of_range("split: an operand is not a value of the joint graph");
      if (need.value < classes.num_inputs) {
        inputs_read[need.value] = 1;
        continue;
      }
      const uint32_t p = classes.value_producer[need.value];
      if (classes.is_backward_at(p)) continue;
      if (requested[need.value]) {
        linked[need.value] = 1;
        continue;
      }
      if (recompute[p]) continue;
      recompute[p] = 1;
      const ir::Node* producer = classes.nodes[p];
      const char* why = unsafe_to_recompute(*producer, written.op(p));
      if (!why && written.reads_value_written_later(joint, p)) why = "reads-value-written-later";
      if (why)
        refuse("the backward needs %" + value_at(joint, classes, need.value)->name() + " (read by `" +
               ir::print_node(*classes.nodes[need.reader]) + "`), but `" + ir::print_node(*producer) +
               "` cannot be recomputed (" + why + ") and is not saved");
      for (uint32_t s = classes.operand_begin[p + 1]; s-- > classes.operand_begin[p];)
        stack.push_back({classes.operand_ids[s], p});
    }
  };
  for (uint32_t p = 0; p < num_nodes; ++p)
    if (classes.is_backward_at(p))
      for (uint32_t s = classes.operand_begin[p]; s < classes.operand_begin[p + 1]; ++s)
        walk({classes.operand_ids[s], p});

  SplitResult result;
  ir::Module& module = result.module;
  for (const ir::Value* in : joint.inputs()) module.input_names.push_back(in->name());

  // Forward part: every non-backward node a forward result or a linked value depends
  // on, and every one with effects (they run once, in the forward).
  std::vector<const ir::Value*> forward_results;
  std::vector<uint32_t> forward_result_ids;
  for (size_t i = 0; i < joint.outputs().size(); ++i)
    if (!classes.output_is_backward[i]) {
      forward_results.push_back(joint.outputs()[i]);
      forward_result_ids.push_back(classes.output_ids[i]);
    }
  std::vector<uint32_t> links;  // value ids, in graph order
  for (uint32_t id = static_cast<uint32_t>(classes.num_inputs); id < num_values; ++id)
    if (linked[id]) links.push_back(id);
  std::vector<uint8_t> in_forward(num_nodes, 0);
  std::vector<uint32_t> nodes_to_visit;
  auto push_producer = [&](uint32_t id) {
    if (id != npos && id >= classes.num_inputs) nodes_to_visit.push_back(classes.value_producer[id]);
  };
  for (uint32_t id : forward_result_ids) push_producer(id);
  for (uint32_t id : links) push_producer(id);
  for (uint32_t p = 0; p < num_nodes; ++p)
    if (!classes.is_backward_at(p)) {
      const OpFacts& f = written.op(p);
      if (f.mutating || f.side_effects) nodes_to_visit.push_back(p);
    }
  while (!nodes_to_visit.empty()) {
    const uint32_t p = nodes_to_visit.back();
    nodes_to_visit.pop_back();
    if (p == npos || in_forward[p]) continue;
    in_forward[p] = 1;
    for (uint32_t s = classes.operand_begin[p]; s < classes.operand_begin[p + 1]; ++s) push_producer(classes.operand_ids[s]);
  }

  // Nothing below refuses: from here on a consumed joint graph gives its nodes away.
  const std::vector<ir::Value*> joint_outputs = joint.outputs();
  std::optional<HalfMovedGuard> guard;
  if (consumed) {
    guard.emplace(owner);
    consumed->clear_outputs();
  }
  std::vector<ir::Value*> fmap(num_values, nullptr);
  std::unique_ptr<ir::Graph> copied_forward;
  ir::Graph* forward = consumed;
  if (consumed) {
    // The joint graph becomes the forward part: its forward nodes stay where they are
    // (the backward's nodes move out below, the rest is erased).
    for (size_t i = 0; i < classes.num_inputs; ++i) fmap[i] = joint.inputs()[i];
    for (uint32_t p = 0; p < num_nodes; ++p)
      if (in_forward[p])
        for (size_t i = 0; i < classes.nodes[p]->num_outputs(); ++i)
          fmap[classes.output_id(p, i)] = classes.nodes[p]->output(i);
  } else {
    copied_forward = std::make_unique<ir::Graph>();
    forward = copied_forward.get();
    copy_graph_context(joint, *forward);
    for (size_t i = 0; i < classes.num_inputs; ++i) {
      const ir::Value* in = joint.inputs()[i];
      fmap[i] = copy_input(*forward, in, in->role());
    }
    CopyLookup fwd(classes, fmap);
    const std::function<ir::Value*(ir::Value*)> fwd_lookup = std::ref(fwd);
    for (uint32_t p = 0; p < num_nodes; ++p) {
      if (!in_forward[p]) continue;
      const ir::Node* n = classes.nodes[p];
      fwd.start(p);
      ir::Node* copy = forward->clone_node(*n, fwd_lookup);
      for (size_t i = 0; i < n->num_outputs(); ++i) fmap[classes.output_id(p, i)] = copy->output(i);
    }
  }
  // A joint output's copy in a part, by the output's value id.
  auto mapped = [&](const std::vector<ir::Value*>& map, const ir::Value* v, uint32_t id) {
    if (id == npos || !map[id]) throw std::out_of_range("split: %" + v->name() + " has no copy in the part");
    return map[id];
  };
  for (size_t i = 0; i < forward_results.size(); ++i)
    forward->add_output(mapped(fmap, forward_results[i], forward_result_ids[i]));
  for (uint32_t id : links) forward->add_output(fmap[id]);
  std::vector<ir::Value*>().swap(fmap);

  // Backward part: linked values, then the module inputs it reads, as inputs.
  auto backward = std::make_unique<ir::Graph>();
  copy_graph_context(joint, *backward);
  std::vector<ir::Value*> bmap(num_values, nullptr);
  std::vector<std::optional<ir::PartOutput>> sources;
  for (size_t j = 0; j < links.size(); ++j) {
    const ir::Value* v = value_at(joint, classes, links[j]);
    bmap[links[j]] = copy_input(*backward, v, ir::InputRole::Argument);
    sources.push_back(ir::PartOutput{0, forward_results.size() + j});
    result.saved.push_back(v->name());
  }
  for (size_t i = 0; i < classes.num_inputs; ++i) {
    if (!inputs_read[i]) continue;
    const ir::Value* in = joint.inputs()[i];
    bmap[i] = copy_input(*backward, in, in->role());
    sources.push_back(std::nullopt);
  }
  CopyLookup bwd(classes, bmap);
  const std::function<ir::Value*(ir::Value*)> bwd_lookup = std::ref(bwd);
  // Recomputed nodes go right before their first backward reader, operands first (a
  // post-order walk in the order of the recursive definition).
  std::vector<uint8_t> emitted(num_nodes, 0);
  struct Frame {
    uint32_t position;
    uint32_t slot;
  };
  std::vector<Frame> frames;
  auto emit_recomputed = [&](uint32_t first) {
    if (!recompute[first] || emitted[first]) return;
    emitted[first] = 1;
    frames.push_back({first, classes.operand_begin[first]});
    while (!frames.empty()) {
      Frame& f = frames.back();
      if (f.slot < classes.operand_begin[f.position + 1]) {
        const uint32_t id = classes.operand_ids[f.slot++];
        if (id != npos && id >= classes.num_inputs) {
          const uint32_t q = classes.value_producer[id];
          if (recompute[q] && !emitted[q]) {
            emitted[q] = 1;
            frames.push_back({q, classes.operand_begin[q]});  // invalidates f
          }
        }
        continue;
      }
      const uint32_t p = f.position;
      frames.pop_back();
      const ir::Node* n = classes.nodes[p];
      bwd.start(p);
      ir::Node* copy = backward->clone_node(*n, bwd_lookup, nullptr, "_recomputed");
      ir::NodeMeta& meta = copy->mutable_meta();
      meta.phase = ir::Phase::Backward;
      meta.custom[recomputed_from_key()] = n->output(0)->name();
      meta.custom.erase(ap_must_save_key());
      meta.custom.erase(ap_save_outputs_key());
      // A saved sibling output stays linked: the recomputed copy serves the others.
      for (size_t i = 0; i < n->num_outputs(); ++i) {
        ir::Value*& slot = bmap[classes.output_id(p, i)];
        if (!slot) slot = copy->output(i);
      }
      ++result.recomputed_nodes;
    }
  };
  for (uint32_t p = 0; p < num_nodes; ++p) {
    if (!classes.is_backward_at(p)) continue;
    for (uint32_t s = classes.operand_begin[p]; s < classes.operand_begin[p + 1]; ++s) {
      const uint32_t id = classes.operand_ids[s];
      if (id != npos && id >= classes.num_inputs) emit_recomputed(classes.value_producer[id]);
    }
    const ir::Node* n = classes.nodes[p];
    bwd.start(p);
    // A consumed joint graph is the caller's to change: its nodes are not const there.
    ir::Node* copy = consumed ? backward->adopt(const_cast<ir::Node*>(n), bwd_lookup) : backward->clone_node(*n, bwd_lookup);
    for (size_t i = 0; i < n->num_outputs(); ++i) bmap[classes.output_id(p, i)] = copy->output(i);
  }
  if (consumed) {
    // What the forward part does not run (forward nodes only the backward recomputes,
    // dead forward nodes) reads only what it does not run either: erased last reader
    // first, each dropping its uses.
    for (uint32_t p = static_cast<uint32_t>(num_nodes); p-- > 0;)
      if (!in_forward[p] && !classes.is_backward_at(p)) consumed->erase(const_cast<ir::Node*>(classes.nodes[p]));
  }

  size_t next_forward = 0, next_backward = 0;
  for (size_t i = 0; i < joint_outputs.size(); ++i) {
    if (classes.output_is_backward[i]) {
      backward->add_output(mapped(bmap, joint_outputs[i], classes.output_ids[i]));
      module.outputs.push_back(ir::PartOutput{1, next_backward++});
    } else {
      module.outputs.push_back(ir::PartOutput{0, next_forward++});
    }
  }
  ir::ModulePart fwd_part;
  fwd_part.name = "forward";
  if (guard) guard->disarm();
  fwd_part.graph = consumed ? std::move(*owner) : std::move(copied_forward);
  fwd_part.input_sources.assign(joint.inputs().size(), std::nullopt);
  ir::ModulePart bwd_part;
  bwd_part.name = "backward";
  bwd_part.graph = std::move(backward);
  bwd_part.input_sources = std::move(sources);
  module.parts.push_back(std::move(fwd_part));
  module.parts.push_back(std::move(bwd_part));
  return result;
}

}  // namespace

SplitResult split_joint(const ir::Graph& joint, const std::vector<const ir::Value*>& saved,
                        const Classification& classes) {
  return split(joint, nullptr, saved, classes, nullptr);
}

SplitResult split_joint_consuming(std::unique_ptr<ir::Graph>& joint, const std::vector<const ir::Value*>& saved,
                                  const Classification& classes) {
  SplitResult result = split(*joint, &joint, saved, classes, nullptr);
  joint.reset();
  return result;
}

SplitResult split_joint_consuming(std::unique_ptr<ir::Graph>& joint, const std::vector<const ir::Value*>& saved,
                                  const Classification& classes, const WrittenStorage& written) {
  SplitResult result = split(*joint, &joint, saved, classes, &written);
  joint.reset();
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
