// partition-save-all and tag-ap-must-save: see save_all.h. The replayed saved set is the
// tagged values plus, walking from the backward's reads through recomputable forward
// nodes, the values of nodes that cannot be recomputed.
#include "passes/partition/save_all.h"

#include "framework/exec/op_properties.h"
#include "framework/ir/text.h"
#include "passes/ac/ac_passes.h"
#include "passes/partition/split.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_set>

namespace passcheck::passes {

std::vector<size_t> parse_save_outputs(const std::string& text) {
  std::vector<size_t> result;
  size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
      throw check::RefusedInput("ap_save_outputs: expected a comma-separated list of output indices, got '" + text +
                                    "'",
                                {});
    result.push_back(static_cast<size_t>(std::stoull(item)));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return result;
}

namespace {

bool tagged_must_save(const ir::Node& n) {
  auto it = n.meta().custom.find(ap_must_save_key());
  return it != n.meta().custom.end() && (it->second == "1" || it->second == "true" || it->second == "True");
}

}  // namespace

std::vector<const ir::Value*> replay_saved_values(const ir::Graph& joint, const Classification& classes,
                                                  ReplaySemantics semantics, check::Decisions& d) {
  const bool landed = semantics == ReplaySemantics::Landed;
  const bool ignore_multi_output_tags = d.injected("ignore-multi-output-tags");
  std::unordered_set<const ir::Value*> tagged;
  for (const ir::Node* n : joint.nodes()) {
    if (classes.is_backward(n)) continue;
    const ir::RecomputePolicy policy = n->meta().recompute;
    const bool tag = tagged_must_save(*n);
    const bool must_save = landed && policy == ir::RecomputePolicy::MustSave;
    if (!tag && !must_save) continue;
    if (d.refuse("must-recompute-blocks-save", policy == ir::RecomputePolicy::MustRecompute)) continue;
    if (!landed && d.refuse("prefer-recompute-blocks-save", policy == ir::RecomputePolicy::PreferRecompute)) continue;
    if (ignore_multi_output_tags && n->num_outputs() > 1) continue;
    std::vector<size_t> indices;
    auto listed = n->meta().custom.find(ap_save_outputs_key());
    if (landed && !must_save && listed != n->meta().custom.end()) {
      indices = parse_save_outputs(listed->second);
      d.fire("save-recorded-outputs");
    } else {
      for (size_t i = 0; i < n->num_outputs(); ++i) indices.push_back(i);
    }
    d.fire(tag ? "save-tagged" : "save-must-save");
    for (size_t i : indices) {
      if (i >= n->num_outputs())
        throw check::RefusedInput("partition-save-all: `" + ir::print_node(*n) + "` records saved output " +
                                      std::to_string(i) + " but has " + std::to_string(n->num_outputs()) + " outputs",
                                  {});
      tagged.insert(n->output(i));
    }
  }

  // What the backward needs, stopping at saved values; forced saves where a node cannot
  // run again.
  const MutationIndex mutations(joint);
  std::unordered_set<const ir::Value*> saved;
  std::unordered_set<const ir::Node*> recomputed;
  std::function<void(const ir::Value*)> need = [&](const ir::Value* v) {
    if (v->is_graph_input() || classes.is_backward(v->producer())) return;
    if (tagged.count(v)) {
      saved.insert(v);
      return;
    }
    const ir::Node* p = v->producer();
    const bool unsafe = unsafe_to_recompute(*p) || mutations.reads_value_written_later(*p);
    const bool collective = exec::is_collective(*p) && !ir::is_recomputable(p->meta().recompute);
    if (unsafe || collective) {
      if (saved.insert(v).second) d.fire(unsafe ? "save-unrecomputable" : "force-save-collective");
      return;
    }
    if (!recomputed.insert(p).second) return;
    for (size_t i = 0; i < p->num_operands(); ++i) need(p->operand(i));
  };
  for (const ir::Node* n : joint.nodes())
    if (classes.is_backward(n))
      for (size_t i = 0; i < n->num_operands(); ++i) need(n->operand(i));
  std::vector<const ir::Value*> result(saved.begin(), saved.end());
  std::sort(result.begin(), result.end(), [](const ir::Value* a, const ir::Value* b) {
    return a->producer() != b->producer() ? a->producer()->is_before(b->producer())
                                          : a->output_index() < b->output_index();
  });
  return result;
}

const ir::Graph& single_joint_part(const ir::Module& module, const std::string& pass) {
  if (module.parts.size() != 1) {
    std::string names;
    for (const auto& p : module.parts) names += (names.empty() ? "" : ", ") + p.name;
    throw check::RefusedInput(pass + ": the module has " + std::to_string(module.parts.size()) + " parts (" + names +
                                  "); a partitioner takes a module of one joint graph (re-import a partitioned "
                                  "module with join_module first)",
                              {});
  }
  return *module.parts.front().graph;
}

int64_t tag_saved_values(ir::Module& module, check::Decisions& d) {
  if (module.parts.size() < 2) return 0;
  const size_t part = module.find_part("forward").value_or(0);
  ir::Graph& forward = *module.parts[part].graph;
  std::map<ir::Node*, std::set<size_t>> saved_outputs;
  for (size_t i : module.linked_outputs(part)) {
    ir::Value* v = forward.outputs().at(i);
    if (v->producer()) saved_outputs[v->producer()].insert(v->output_index());
  }
  int64_t changed = 0;
  for (auto& [node, indices] : saved_outputs) {
    std::map<std::string, std::string> custom = node->meta().custom;
    custom[ap_must_save_key()] = "1";
    if (node->num_outputs() > 1) {
      // Union with indices an earlier tagging recorded: a tag only ever adds saves.
      auto old = custom.find(ap_save_outputs_key());
      if (old != custom.end())
        for (size_t i : parse_save_outputs(old->second)) indices.insert(i);
      std::string list;
      for (size_t i : indices) list += (list.empty() ? "" : ",") + std::to_string(i);
      custom[ap_save_outputs_key()] = list;
    }
    if (custom == node->meta().custom) continue;
    node->mutable_meta().custom = std::move(custom);
    d.fire("tag-saved-producer");
    ++changed;
  }
  return changed;
}

check::PassInfo tag_ap_must_save_pass_info() {
  check::PassInfo info("tag-ap-must-save",
                       "Tag the forward producers of the values a partitioned module saves with ap_must_save "
                       "(ap_save_outputs lists the saved outputs of a multi-output producer)");
  info.rules = {{"tag-saved-producer", "a producer of a saved value gets ap_must_save (and its output indices)"}};
  return info;
}

check::PassResult tag_ap_must_save_pass(ir::Module& module, const check::PassOptions& options) {
  check::PassResult result;
  check::Decisions d(result, options);
  const int64_t n = tag_saved_values(module, d);
  result.changed = n > 0;
  result.stats["tagged_producers"] = n;
  return result;
}

check::PassInfo partition_save_all_pass_info() {
  check::PassInfo info(
      "partition-save-all",
      "Split a one-part module saving exactly the values tagged ap_must_save (the first partition's saved set) "
      "and recomputing the rest in the backward",
      {{"semantics", "landed: autoparallel #485 (MUST_RECOMPUTE blocks, MUST_SAVE honoured, recorded outputs only); "
                     "pr467: the draft (PREFER_RECOMPUTE blocks too, MUST_SAVE ignored, all outputs)",
        "landed", {"landed", "pr467"}}},
      check::NumericsEffect::Preserves, /*idempotent=*/false);
  info.rules = {{"save-tagged", "a producer tagged ap_must_save is saved"},
                {"save-must-save", "landed: a MUST_SAVE producer is saved without a tag"},
                {"save-recorded-outputs", "landed: only the outputs ap_save_outputs lists are saved"},
                {"save-unrecomputable", "a value of a node that cannot run again is saved where the backward needs it"},
                {"force-save-collective", "a collective not tagged recomputable is saved where the backward needs it"}};
  info.guards = {{"must-recompute-blocks-save", "a MUST_RECOMPUTE producer is never saved (checked first)"},
                 {"prefer-recompute-blocks-save", "pr467: a PREFER_RECOMPUTE producer is not saved either"}};
  info.injectable_bugs = {{"ignore-multi-output-tags",
                           "historical bug 8: the second partition ignores ap_must_save on multi-output producers "
                           "and recomputes them, unlike the first"}};
  return info;
}

check::PassResult partition_save_all_pass(ir::Module& module, const check::PassOptions& options) {
  check::PassResult result;
  check::Decisions d(result, options);
  const ir::Graph& joint = single_joint_part(module, "partition-save-all");
  const Classification classes = classify_nodes(joint);
  const ReplaySemantics semantics = options.get("semantics") == "pr467" ? ReplaySemantics::Pr467 : ReplaySemantics::Landed;
  SplitResult split;
  try {
    split = split_joint(joint, replay_saved_values(joint, classes, semantics, d), classes);
  } catch (const check::RefusedInput& e) {
    throw check::RefusedInput(e.what(), result);
  }
  module = std::move(split.module);
  result.changed = true;
  result.stats["saved_values"] = static_cast<int64_t>(split.saved.size());
  result.stats["saved_bytes"] = module.linked_bytes(0);
  result.stats["recomputed_nodes"] = split.recomputed_nodes;
  return result;
}

}  // namespace passcheck::passes
