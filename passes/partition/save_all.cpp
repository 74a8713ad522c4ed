// partition-save-all and tag-ap-must-save: see save_all.h. The replayed saved set is the
// tagged values plus, walking from the backward's reads through recomputable forward
// nodes, the values of nodes that cannot be recomputed.
#include "passes/partition/save_all.h"

#include "framework/exec/op_properties.h"
#include "framework/ir/text.h"
#include "passes/ac/ac_passes.h"
#include "passes/partition/op_facts.h"
#include "passes/partition/split.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <utility>

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
  OpFactsCache ops;
  const WrittenStorage written(classes, ops);
  return replay_saved_values(joint, classes, semantics, d, written);
}

std::vector<const ir::Value*> replay_saved_values(const ir::Graph& joint, const Classification& classes,
                                                  ReplaySemantics semantics, check::Decisions& d,
                                                  const WrittenStorage& written) {
  constexpr uint32_t npos = Classification::npos;
  const bool landed = semantics == ReplaySemantics::Landed;
  const bool ignore_multi_output_tags = d.injected("ignore-multi-output-tags");
  const size_t num_nodes = classes.nodes.size();
  std::vector<uint8_t> tagged(classes.num_values(), 0);  // by value id
  for (uint32_t p = 0; p < num_nodes; ++p) {
    if (classes.is_backward_at(p)) continue;
    const ir::Node* n = classes.nodes[p];
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
      tagged[classes.output_id(p, i)] = 1;
    }
  }

  // What the backward needs, stopping at saved values; forced saves where a node cannot
  // run again. Which values are saved does not depend on the order of the walk.
  // Per position: whether the producer may run again in the backward (asked once).
  enum : uint8_t { kUnknown = 0, kRecomputable = 1, kUnsafe = 2, kCollective = 3 };
  std::vector<uint8_t> kind(num_nodes, kUnknown);
  std::vector<uint8_t> saved(classes.num_values(), 0);
  std::vector<uint8_t> recomputed(num_nodes, 0);
  std::vector<uint32_t> stack;
  auto need = [&](uint32_t id) {
    if (id == npos) throw std::out_of_range("partition-save-all: an operand is not a value of the joint graph");
    if (id < classes.num_inputs) return;
    const uint32_t p = classes.value_producer[id];
    if (classes.is_backward_at(p)) return;
    if (tagged[id]) {
      saved[id] = 1;
      return;
    }
    if (kind[p] == kUnknown) {
      const ir::Node* producer = classes.nodes[p];
      const OpFacts& f = written.op(p);
      const bool unsafe =
          unsafe_to_recompute(*producer, f) != nullptr || written.reads_value_written_later(joint, p);
      const bool collective = f.collective && !ir::is_recomputable(producer->meta().recompute);
      kind[p] = unsafe ? kUnsafe : collective ? kCollective : kRecomputable;
    }
    if (kind[p] != kRecomputable) {
      if (!saved[id]) {
        saved[id] = 1;
        d.fire(kind[p] == kUnsafe ? "save-unrecomputable" : "force-save-collective");
      }
      return;
    }
    if (recomputed[p]) return;
    recomputed[p] = 1;
    for (uint32_t s = classes.operand_begin[p]; s < classes.operand_begin[p + 1]; ++s)
      stack.push_back(classes.operand_ids[s]);
  };
  for (uint32_t p = 0; p < num_nodes; ++p) {
    if (!classes.is_backward_at(p)) continue;
    for (uint32_t s = classes.operand_begin[p]; s < classes.operand_begin[p + 1]; ++s) {
      need(classes.operand_ids[s]);
      while (!stack.empty()) {
        const uint32_t id = stack.back();
        stack.pop_back();
        need(id);
      }
    }
  }
  // Value ids are in graph order, then output index.
  std::vector<const ir::Value*> result;
  for (uint32_t p = 0; p < num_nodes; ++p) {
    const ir::Node* n = classes.nodes[p];
    for (size_t k = 0; k < n->num_outputs(); ++k)
      if (saved[classes.output_id(p, k)]) result.push_back(n->output(k));
  }
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
  // (producer, output index) of each saved value, in the order of a
  // std::map<ir::Node*, std::set<size_t>> (pointer order, then index).
  std::vector<std::pair<ir::Node*, size_t>> saved_outputs;
  for (size_t i : module.linked_outputs(part)) {
    ir::Value* v = forward.outputs().at(i);
    if (v->producer()) saved_outputs.emplace_back(v->producer(), v->output_index());
  }
  std::sort(saved_outputs.begin(), saved_outputs.end(), [](const auto& a, const auto& b) {
    return std::less<ir::Node*>()(a.first, b.first) || (a.first == b.first && a.second < b.second);
  });
  saved_outputs.erase(std::unique(saved_outputs.begin(), saved_outputs.end()), saved_outputs.end());
  int64_t changed = 0;
  std::vector<size_t> indices;
  for (size_t i = 0; i < saved_outputs.size();) {
    ir::Node* node = saved_outputs[i].first;
    indices.clear();
    for (; i < saved_outputs.size() && saved_outputs[i].first == node; ++i) indices.push_back(saved_outputs[i].second);
    const auto& custom = node->meta().custom;
    auto must = custom.find(ap_must_save_key());
    bool same = must != custom.end() && must->second == "1";
    std::string list;
    const bool multi = node->num_outputs() > 1;
    if (multi) {
      // Union with indices an earlier tagging recorded: a tag only ever adds saves.
      auto old = custom.find(ap_save_outputs_key());
      if (old != custom.end()) {
        for (size_t k : parse_save_outputs(old->second)) indices.push_back(k);
        std::sort(indices.begin(), indices.end());
        indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
      }
      for (size_t k : indices) list += (list.empty() ? "" : ",") + std::to_string(k);
      same = same && old != custom.end() && old->second == list;
    }
    if (same) continue;
    auto& written = node->mutable_meta().custom;
    written[ap_must_save_key()] = "1";
    if (multi) written[ap_save_outputs_key()] = std::move(list);
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
  OpFactsCache ops;
  const WrittenStorage written(classes, ops);  // the replay's and the split's
  try {
    split = split_joint_consuming(module.parts.front().graph, replay_saved_values(joint, classes, semantics, d, written),
                                  classes, written);
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
