// The `cudagraph` module pass: see cudagraph_passes.h and docs/passes.md "cudagraph".
// Per part without a capture: decide capturability node by node, group maximal runs of
// capturable nodes, keep runs that launch nothing eager, then either wrap the whole part
// or replace it by its segments. Static inputs follow one rule: an input is static when
// its address cannot change between calls (module state, or an earlier captured part's
// output, which lives in the pool from capture on); everything else is copied.
#include "passes/cudagraph/cudagraph_passes.h"

#include "framework/exec/captured_graph.h"
#include "framework/exec/op_properties.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace passcheck::passes {

namespace {

// The segmentation of one part: a segment per node, and per segment whether it is captured.
struct Segmentation {
  std::vector<size_t> segment_of_node;
  std::vector<bool> captured;
};

// Maximal runs of capturable nodes become captured segments unless they launch nothing
// (guard nothing-to-launch, counted once per run).
Segmentation segment(const std::vector<ir::Node*>& nodes, const std::vector<const char*>& refusal,
                     const std::vector<char>& launches_work_of, check::Decisions& d) {
  const std::string kNothingToLaunch = "nothing-to-launch";
  Segmentation s;
  std::vector<bool> capturable(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) capturable[i] = refusal[i] == nullptr;
  for (size_t i = 0; i < nodes.size();) {
    size_t j = i;
    while (j < nodes.size() && capturable[j] == capturable[i]) ++j;
    if (capturable[i]) {
      bool launches = false;
      for (size_t k = i; k < j && !launches; ++k) launches = launches_work_of[k] != 0;
      if (d.refuse(kNothingToLaunch, !launches))
        for (size_t k = i; k < j; ++k) capturable[k] = false;
    }
    i = j;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i == 0 || capturable[i] != capturable[i - 1]) s.captured.push_back(capturable[i]);
    s.segment_of_node.push_back(s.captured.size() - 1);
  }
  return s;
}

// The spec of captured part `p`: static inputs by the rule above (the guard
// `input-changes-address` refuses the others), options and injected bugs.
ir::CaptureSpec make_spec(const ir::Module& module, size_t p, ir::CaptureSpec::Backend backend,
                          const check::PassOptions& options, check::Decisions& d, check::PassResult& result) {
  ir::CaptureSpec spec;
  spec.backend = backend;
  spec.check_static_addresses = options.get_bool("check-static-addresses");
  const ir::Graph& g = *module.parts[p].graph;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    if (g.inputs()[i]->type() != ir::ValueType::Tensor) continue;
    if (d.refuse("input-changes-address", !has_fixed_address(module, p, i))) {
      ++result.stats["copied_inputs"];
      continue;
    }
    spec.static_inputs.push_back(i);
    ++result.stats["static_inputs"];
  }
  for (const std::string& bug : exec::injected_wrapper_bugs::all())
    if (d.injected(bug)) spec.injected_bugs.push_back(bug);
  return spec;
}

// Whether `v` can only reach a captured graph as an argument the wrapper refuses: a bool
// or None (it takes tensors, ints, floats and generators).
bool is_unsupported_argument(const ir::Value* v) {
  return v->type() == ir::ValueType::Bool || v->type() == ir::ValueType::None;
}

// Decides every node of part `p`. The segmentation feeds back until it no longer changes
// (both sets only grow, so this ends): the values eager segments produce become copied
// (a captured segment receives them as copies, so a write into them would be lost), and a
// captured node reading a bool or None from outside its segment is refused (guard
// unsupported-input-kind). Only the final round counts its decisions in `d`.
Segmentation decide(const ir::Module& module, size_t p, ir::CaptureSpec::Backend backend,
                    const check::PassOptions& options, check::Decisions& d) {
  const ir::Graph& g = *module.parts[p].graph;
  const std::vector<ir::Node*> nodes = g.node_list();
  std::unordered_set<const ir::Value*> copied;
  for (size_t i = 0; i < g.inputs().size(); ++i)
    if (!has_fixed_address(module, p, i)) copied.insert(g.inputs()[i]);
  CaptureContext ctx = CaptureContext::of(g, backend, copied);
  ctx.grouped_mm_always_capturable = d.injected("grouped-mm-always-capturable");
  ctx.dynamic_shape_consumers_capturable = d.injected("captures-dynamic-shape-consumers");
  // Everything but the copied-value check depends on the node alone: decided once.
  // So does whether it launches work, and whether it writes anything at all (only a node
  // that may write can write a copied value).
  std::vector<const char*> fixed_refusal(nodes.size());
  std::vector<char> launches(nodes.size()), may_write(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    fixed_refusal[i] = why_not_capturable_but_copies(*nodes[i], ctx);
    launches[i] = launches_work(*nodes[i]);
    const auto written = exec::written_values(*nodes[i]);
    may_write[i] = !written || !written->empty();
  }
  // The bool and None operands of each node (the only ones unsupported-input-kind looks
  // at), by the position of their producer (npos: a graph input).
  constexpr size_t kNone = static_cast<size_t>(-1);
  std::unordered_map<const ir::Node*, size_t> position;
  std::vector<std::pair<size_t, size_t>> odd_operands;  // (node, producer position)
  for (size_t i = 0; i < nodes.size(); ++i)
    for (size_t k = 0; k < nodes[i]->num_operands(); ++k)
      if (is_unsupported_argument(nodes[i]->operand(k))) odd_operands.emplace_back(i, kNone);
  if (!odd_operands.empty()) {
    position.reserve(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) position.emplace(nodes[i], i);
    size_t next = 0;
    for (size_t i = 0; i < nodes.size(); ++i)
      for (size_t k = 0; k < nodes[i]->num_operands(); ++k) {
        const ir::Value* v = nodes[i]->operand(k);
        if (!is_unsupported_argument(v)) continue;
        auto at = v->producer() ? position.find(v->producer()) : position.end();
        odd_operands[next++].second = at == position.end() ? kNone : at->second;
      }
  }
  std::vector<char> unsupported_input(nodes.size(), 0);
  size_t unsupported_count = 0;
  // Guard names as strings, built once per reason (Decisions takes std::string).
  std::vector<std::pair<const char*, std::string>> names;
  auto name_of = [&](const char* why) -> const std::string& {
    for (const auto& [key, name] : names)
      if (key == why) return name;
    names.emplace_back(why, why);
    return names.back().second;
  };
  auto evaluate = [&](check::Decisions& decisions) {
    std::vector<const char*> refusal(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      const char* why = fixed_refusal[i];
      if (!why && may_write[i] && writes_copied_input(*nodes[i], ctx)) why = "mutates-copied-input";
      if (!why && unsupported_input[i]) why = "unsupported-input-kind";
      refusal[i] = why && decisions.refuse(name_of(why), true) ? why : nullptr;
    }
    return segment(nodes, refusal, launches, decisions);
  };
  std::vector<char> outputs_copied(nodes.size(), 0);
  for (;;) {
    check::PassResult scratch;
    check::Decisions probe(scratch, options);
    const Segmentation s = evaluate(probe);
    const size_t copied_before = ctx.copied.size(), unsupported_before = unsupported_count;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (s.captured[s.segment_of_node[i]] || outputs_copied[i]) continue;
      outputs_copied[i] = 1;
      for (const ir::Value* v : nodes[i]->outputs()) ctx.copied.insert(v);
    }
    for (const auto& [i, from] : odd_operands) {
      if (!s.captured[s.segment_of_node[i]] || unsupported_input[i]) continue;
      const bool from_outside = from == kNone || s.segment_of_node[from] != s.segment_of_node[i];
      if (from_outside) {
        unsupported_input[i] = 1;
        ++unsupported_count;
      }
    }
    if (ctx.copied.size() == copied_before && unsupported_count == unsupported_before) break;
  }
  return evaluate(d);
}

}  // namespace

check::PassInfo cudagraph_pass_info() {
  check::PassInfo info(
      "cudagraph",
      "Run every part of a module under the CUDA-graph wrapper: whole when it is capturable, otherwise as "
      "captured segments with eager islands at the nodes a CUDA graph cannot capture; module state and "
      "outputs of earlier captured parts are static inputs",
      {{"backend", "replay: the CPU model of a captured graph's memory semantics (every build); cuda: real CUDA "
                   "graphs (CUDA builds)",
        "replay", {"replay", "cuda"}},
       {"check-static-addresses", "check before every replay that each static input is still at its recorded "
                                  "address",
        "true", {"true", "false"}}},
      check::NumericsEffect::Preserves, /*idempotent=*/true);
  info.rules = {{"wrap-part", "a part whose nodes are all capturable runs under the wrapper whole"},
                {"split-at-uncapturable",
                 "a part with uncapturable nodes is replaced by captured segments and eager islands"}};
  info.guards = {
      {"data-dependent-scalar", "reads a scalar from a tensor (item, _local_scalar_dense, is_nonzero, equal) or "
                                "takes a scalar computed from one: a CUDA graph bakes it into the launch; also "
                                "the ops whose kernel reads device data on the host (passcheck::grouped_mm and "
                                "its weight gradient read their offsets, as aten::_grouped_mm does for every "
                                "dtype but bfloat16), which a capturing stream refuses"},
      {"data-dependent-shape", "its output shape, or the shape of a tensor it reads, depends on tensor values"},
      {"symbolic-size", "a tensor it reads or writes has a symbolic size, or it has a symbolic argument"},
      {"host-device-copy", "copies between the host and the capture device from memory that is not pinned"},
      {"host-only-op", "every tensor it reads or writes is on another device than the capture device"},
      {"mutates-copied-input", "writes an input the wrapper copies (or a view of one): the write would land in "
                               "the kept buffer, not in the caller's tensor"},
      {"unsupported-input-kind", "reads a bool or None from outside its captured segment: the wrapper takes "
                                 "tensors, ints, floats and generators only"},
      {"nothing-to-launch", "a run of capturable nodes launches no work (views, reshapes, scalar plumbing only) "
                            "and stays eager"},
      {"input-changes-address", "an input of a captured part that is neither module state nor an output of an "
                                "earlier captured part may move between calls: it is copied, never static"}};
  const std::vector<std::pair<const char*, const char*>> bugs = {
      {exec::injected_wrapper_bugs::kSkipNonStaticCopy,
       "historical bug 11: the first input that is not static is never copied into its buffer"},
      {exec::injected_wrapper_bugs::kUncheckedStaticAddresses,
       "historical bug 11: the static-address check is skipped although the spec asks for it"},
      {exec::injected_wrapper_bugs::kSelfComparedAddressCheck,
       "historical bug 15 (upstream's check): compares the kept buffers' addresses with the addresses recorded "
       "from those same buffers, so it never fires"}};
  for (const auto& [name, description] : bugs) info.injectable_bugs.push_back({name, description});
  info.injectable_bugs.push_back(
      {"grouped-mm-always-capturable",
       "aten::_grouped_mm is captured whatever its dtype, though its non-bfloat16 fallback copies the offsets to "
       "the host (found comparing with torchtitan's is_cudagraphable on deepseek_v3)"});
  info.injectable_bugs.push_back(
      {"captures-dynamic-shape-consumers",
       "a node reading the output of a data-dependent-shape op (nonzero) is captured, so a replay meets a shape "
       "the capture did not record (found by fuzz --pass cudagraph's eager islands)"});
  return info;
}

check::PassResult cudagraph_pass(ir::Module& module, const check::PassOptions& options) {
  check::PassResult result;
  check::Decisions d(result, options);
  const ir::CaptureSpec::Backend backend = *ir::parse_capture_backend(options.get("backend"));
  for (const char* stat : {"captured_parts", "eager_parts", "static_inputs", "copied_inputs"}) result.stats[stat] = 0;
  for (size_t p = 0; p < module.parts.size(); ++p) {
    if (module.parts[p].capture) continue;  // wrapped already (idempotence)
    const ir::Graph& g = *module.parts[p].graph;
    if (g.num_nodes() == 0) continue;
    const Segmentation s = decide(module, p, backend, options, d);
    if (s.captured.size() == 1) {
      if (!s.captured[0]) {
        ++result.stats["eager_parts"];
        continue;
      }
      module.parts[p].capture = make_spec(module, p, backend, options, d, result);
      ++result.stats["captured_parts"];
      d.fire("wrap-part");
      result.changed = true;
      continue;
    }
    ir::Module segments = split_into_segments(g, s.segment_of_node, s.captured, module.parts[p].name);
    module.replace_part(p, std::move(segments));
    // Specs in part order, so each segment sees whether the ones before it are captured.
    for (size_t k = 0; k < s.captured.size(); ++k) {
      if (!s.captured[k]) {
        ++result.stats["eager_parts"];
        continue;
      }
      module.parts[p + k].capture = make_spec(module, p + k, backend, options, d, result);
      ++result.stats["captured_parts"];
    }
    d.fire("split-at-uncapturable");
    result.changed = true;
    p += s.captured.size() - 1;
  }
  return result;
}

void register_cudagraph_passes(check::PassRegistry& registry) {
  registry.add_module_pass(cudagraph_pass_info(), cudagraph_pass);
}

}  // namespace passcheck::passes
