// FSDP unshard structure and the distributed properties (distributed_properties.h).
#include "framework/check/distributed_properties.h"

#include "framework/exec/op_properties.h"
#include "framework/ir/text.h"

#include <map>
#include <set>
#include <unordered_set>

namespace passcheck::check {

namespace {

constexpr const char* kAllGather = "_c10d_functional::all_gather_into_tensor";
constexpr const char* kWait = "_c10d_functional::wait_tensor";

bool is_forward_like(const ir::Node& n) {
  return n.meta().phase == ir::Phase::Forward || n.meta().phase == ir::Phase::Loss;
}

std::string placements_str(const std::vector<ir::Placement>& ps) {
  std::string out = "(";
  for (size_t i = 0; i < ps.size(); ++i) out += (i ? ", " : "") + ps[i].str();
  return out + ")";
}

}  // namespace

size_t distinct_operands(const ir::Node& node) {
  std::unordered_set<const ir::Value*> seen;
  for (const ir::Value* v : node.operands()) seen.insert(v);
  return seen.size();
}

std::optional<std::vector<ir::Node*>> fsdp_unshard_chain(const ir::Node& all_gather) {
  if (all_gather.op() != kAllGather || all_gather.num_operands() == 0) return std::nullopt;
  std::vector<ir::Node*> chain;
  const ir::Value* v = all_gather.operand(0);
  while (!v->is_graph_input()) {
    ir::Node* producer = v->producer();
    if (distinct_operands(*producer) != 1) return std::nullopt;
    chain.push_back(producer);
    v = producer->operand(0);
  }
  return std::vector<ir::Node*>(chain.rbegin(), chain.rend());
}

ir::Node* fsdp_all_gather_of(const ir::Node& wait) {
  if (wait.op() != kWait || wait.num_operands() != 1) return nullptr;
  ir::Node* ag = wait.operand(0)->producer();
  if (!ag || !fsdp_unshard_chain(*ag)) return nullptr;
  return ag;
}

std::vector<std::string> check_gathered_parameters_not_saved(const ir::Graph& graph) {
  // Forward values computed from FSDP waits alone, with the parameter each comes from.
  std::map<const ir::Value*, std::string> gathered;
  for (const ir::Node* n : graph.nodes()) {
    if (!is_forward_like(*n)) continue;
    std::string source;
    if (ir::Node* ag = fsdp_all_gather_of(*n)) {
      const ir::Value* in = ag->operand(0);
      while (!in->is_graph_input()) in = in->producer()->operand(0);
      source = in->name();
    } else {
      // Deterministic nodes whose every operand is gathered: views, casts, add(w, w).
      if (n->num_operands() == 0 || exec::is_random(*n) || exec::has_side_effects(*n)) continue;
      for (const ir::Value* in : n->operands()) {
        auto it = gathered.find(in);
        if (it == gathered.end()) {
          source.clear();
          break;
        }
        source = it->second;
      }
    }
    if (source.empty()) continue;
    for (const ir::Value* out : n->outputs()) gathered[out] = source;
  }
  std::vector<std::string> violations;
  for (const auto& [value, param] : gathered) {
    for (const ir::Use& u : value->uses()) {
      if (u.is_graph_output() || u.user->meta().phase != ir::Phase::Backward) continue;
      violations.push_back("%" + value->name() + " (derived only from the all-gathered parameter %" + param +
                           ") is held from the forward into the backward: read by " + ir::print_node(*u.user));
      break;
    }
  }
  return violations;
}

std::vector<std::string> check_redirected_reads_wanted(const ir::Graph& before, const ir::Graph& after) {
  std::vector<std::string> violations;
  for (const ir::Node* n : after.nodes()) {
    const auto& wanted = n->meta().wanted_placements;
    if (wanted.size() != n->num_operands() || n->num_outputs() == 0) continue;
    const ir::Value* same = before.find_value(n->output(0)->name());
    const ir::Node* old = same ? same->producer() : nullptr;
    if (!old || old->num_operands() != n->num_operands()) continue;
    for (size_t slot = 0; slot < n->num_operands(); ++slot) {
      const ir::Value* now = n->operand(slot);
      if (now->name() == old->operand(slot)->name() || now->placements() == wanted[slot]) continue;
      violations.push_back("%" + n->output(0)->name() + " (" + n->op() + ") operand " + std::to_string(slot) +
                           " wants " + placements_str(wanted[slot]) + " but was redirected from %" +
                           old->operand(slot)->name() + " to %" + now->name() + " placed " +
                           placements_str(now->placements()));
    }
  }
  return violations;
}

}  // namespace passcheck::check
