// partition-min-cut and min_cut_saved_values(): see min_cut.h. The flow network, per
// PyTorch's rules:
//   - a node with one output is one edge X_in -> X_out; a node with several outputs is
//     X_in -> X_out (infinite) then one edge per output (PyTorch's getitem nodes), so a
//     cut saves single outputs;
//   - capacity: bytes x 1.1^clamp(distance to the backward, 1, 100), doubled for a view
//     (not materialized); graph inputs cost nothing (the backward reads module inputs);
//     a non-tensor value costs 8 bytes;
//   - X_out -> user_in is infinite;
//   - required-backward nodes drain to the sink (X_in -> sink, infinite);
//   - MUST_RECOMPUTE and PREFER_RECOMPUTE nodes are forced to the sink the same way
//     (checked before the bans, as PyTorch does), unless unsafe to recompute;
//   - banned nodes are fed from the source (source -> X_in, infinite): graph inputs,
//     nodes unsafe to recompute (random, mutating, side effects, reading a storage
//     written later), and required-forward nodes that are MUST_SAVE, collectives,
//     compute-intensive, reductions whose output is 4x smaller than their tensor inputs
//     (views excepted), or more than 1000 nodes from the backward.
// The saved values are the outputs whose X_in is reachable from the source in the
// residual network and whose X_out is not (the minimal source side, as networkx
// minimum_cut returns).
#include "passes/partition/min_cut.h"

#include "framework/exec/op_properties.h"
#include "framework/ir/text.h"
#include "passes/ac/ac_passes.h"
#include "passes/partition/save_all.h"
#include "passes/partition/split.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace passcheck::passes {

namespace {

using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS,
    boost::property<boost::vertex_color_t, boost::default_color_type,
                    boost::property<boost::vertex_distance_t, int64_t,
                                    boost::property<boost::vertex_predecessor_t, Traits::edge_descriptor>>>,
    boost::property<boost::edge_capacity_t, int64_t,
                    boost::property<boost::edge_residual_capacity_t, int64_t,
                                    boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
using Vertex = Traits::vertex_descriptor;

// Large enough that no finite cut reaches it, small enough that a few of them add up
// without overflow.
constexpr int64_t kInfinite = int64_t{1} << 60;
constexpr int64_t kMaxDistFromBackward = 1000;

class FlowNetwork {
 public:
  FlowNetwork() : source_(boost::add_vertex(g_)), sink_(boost::add_vertex(g_)) {}
  Vertex source() const { return source_; }
  Vertex sink() const { return sink_; }
  Vertex add_vertex() { return boost::add_vertex(g_); }
  void add_edge(Vertex u, Vertex v, int64_t capacity) {
    auto capacity_map = boost::get(boost::edge_capacity, g_);
    auto reverse_map = boost::get(boost::edge_reverse, g_);
    auto e = boost::add_edge(u, v, g_).first;
    auto r = boost::add_edge(v, u, g_).first;
    capacity_map[e] = capacity;
    capacity_map[r] = 0;
    reverse_map[e] = r;
    reverse_map[r] = e;
  }
  int64_t max_flow() { return boost::boykov_kolmogorov_max_flow(g_, source_, sink_); }
  /// After max_flow: on the source side of the minimal cut.
  bool source_side(Vertex v) const {
    return boost::get(boost::vertex_color, g_, v) == boost::color_traits<boost::default_color_type>::black();
  }

 private:
  FlowGraph g_;
  Vertex source_, sink_;
};

int64_t value_bytes(const ir::Value* v) {
  if (v->type() != ir::ValueType::Tensor || !v->meta()) return 8;
  return v->meta()->nbytes();
}

// PyTorch's dist_from_bw, per value (an output of a multi-output node is PyTorch's
// getitem node, with its own distance): 0 outside the required forward, else one more
// than the nearest user's; a node's distance is its nearest output's.
struct Distances {
  std::unordered_map<const ir::Node*, int64_t> node;
  std::unordered_map<const ir::Value*, int64_t> value;
};

Distances distances_to_backward(const ir::Graph& joint, const Classification& classes) {
  Distances dist;
  std::vector<ir::Node*> nodes = joint.node_list();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const ir::Node* n = *it;
    const bool forward = classes.class_of(n) == NodeClass::RequiredForward;
    int64_t nearest = forward ? 1000000000 : 0;
    for (const ir::Value* out : n->outputs()) {
      int64_t d = forward ? 1000000000 : 0;
      if (forward)
        for (const ir::Use& u : out->uses())
          if (!u.is_graph_output()) d = std::min(d, dist.node.at(u.user) + 1);
      dist.value[out] = d;
      nearest = std::min(nearest, d);
    }
    dist.node[n] = nearest;
  }
  return dist;
}

struct Candidate {
  const ir::Node* node;
  const char* ban;  // null: not banned
};

struct Cut {
  std::vector<const ir::Value*> saved;
  int64_t bytes = 0;
  int64_t capacity = 0;
};

}  // namespace

namespace {

// The kernels scaled_dot_product_attention and the grouped/scaled matmuls dispatch to on
// the CPU and for low precision. PyTorch's min-cut never recomputes them: it bans every
// op outside its recomputable allowlist, and none of these is on it.
bool is_heavy_kernel_outside_the_classic_list(const std::string& base) {
  static const char* const kOps[] = {"_scaled_dot_product_flash_attention_for_cpu",
                                     "_scaled_dot_product_fused_attention_overrideable",
                                     "_scaled_dot_product_attention_math", "_scaled_mm", "_grouped_mm"};
  return std::any_of(std::begin(kOps), std::end(kOps), [&](const char* op) { return base == op; });
}

}  // namespace

bool is_compute_intensive(const ir::Node& node) {
  static const char* const kOps[] = {"mm", "bmm", "addmm", "baddbmm", "addbmm", "matmul", "convolution",
                                     "_convolution", "conv1d", "conv2d", "conv3d", "convolution_backward",
                                     "scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
                                     "_scaled_dot_product_efficient_attention",
                                     "_scaled_dot_product_cudnn_attention", "_flash_attention_forward",
                                     "_efficient_attention_forward", "upsample_bilinear2d"};
  const std::string base = node.op_base();
  return std::any_of(std::begin(kOps), std::end(kOps), [&](const char* op) { return base == op; }) ||
         is_heavy_kernel_outside_the_classic_list(base);
}

const char* ban_reason(const ir::Node& node, NodeClass cls, int64_t dist_from_backward) {
  if (exec::is_random(node)) return "random";
  if (const char* why = unsafe_to_recompute(node)) return why;
  if (cls != NodeClass::RequiredForward) return nullptr;
  if (node.meta().recompute == ir::RecomputePolicy::MustSave) return "must-save";
  if (exec::is_collective(node)) return "collective";
  if (is_compute_intensive(node)) return "compute-intensive";
  if (!exec::aliases_input(node) && node.num_outputs() > 0) {
    int64_t in_bytes = 0, out_bytes = 0;
    for (const ir::Value* v : node.operands())
      if (v->type() == ir::ValueType::Tensor && v->meta()) in_bytes += v->meta()->nbytes();
    for (const ir::Value* v : node.outputs()) out_bytes += value_bytes(v);
    if (out_bytes * 4 < in_bytes) return "reduction";
  }
  if (dist_from_backward > kMaxDistFromBackward) return "far-from-backward";
  return nullptr;
}

namespace {

// One max-flow over `joint` with the nodes of `unbanned` treated as recomputable.
Cut cut_once(const ir::Graph& joint, const Classification& classes,
             const Distances& dist, const std::vector<Candidate>& bans,
             const std::unordered_set<const ir::Node*>& unbanned, const MutationIndex& mutations) {
  FlowNetwork net;
  std::unordered_map<const ir::Value*, std::pair<Vertex, Vertex>> value_edge;  // X_in, X_out per value
  std::unordered_map<const ir::Node*, Vertex> node_in;
  auto weight = [&](const ir::Value* v, int64_t d) {
    const double scale = std::pow(1.1, static_cast<double>(std::max<int64_t>(std::min<int64_t>(d, 100), 1)));
    int64_t w = static_cast<int64_t>(static_cast<double>(value_bytes(v)) * scale);
    if (v->producer() && exec::aliases_input(*v->producer())) w *= 2;  // a view is not materialized
    return w;
  };
  for (const ir::Value* in : joint.inputs()) {
    Vertex a = net.add_vertex(), b = net.add_vertex();
    net.add_edge(net.source(), a, kInfinite);
    net.add_edge(a, b, 0);
    value_edge[in] = {a, b};
  }
  std::unordered_map<const ir::Node*, const char*> ban_of;
  for (const Candidate& c : bans) ban_of[c.node] = c.ban;
  for (const ir::Node* n : joint.nodes()) {
    Vertex in = net.add_vertex();
    node_in[n] = in;
    if (n->num_outputs() == 1) {
      value_edge[n->output(0)] = {in, net.add_vertex()};
    } else if (n->num_outputs() > 1) {
      Vertex out = net.add_vertex();
      net.add_edge(in, out, kInfinite);
      for (const ir::Value* v : n->outputs()) {
        Vertex a = net.add_vertex();
        net.add_edge(out, a, kInfinite);
        value_edge[v] = {a, net.add_vertex()};
      }
    }
  }
  for (const ir::Node* n : joint.nodes()) {
    const Vertex in = node_in.at(n);
    for (size_t i = 0; i < n->num_operands(); ++i) net.add_edge(value_edge.at(n->operand(i)).second, in, kInfinite);
    if (classes.is_backward(n)) {
      net.add_edge(in, net.sink(), kInfinite);
      continue;
    }
    const char* ban = ban_of.count(n) ? ban_of.at(n) : nullptr;
    const bool unsafe = unsafe_to_recompute(*n) || mutations.reads_value_written_later(*n);
    if (ir::is_recomputable(n->meta().recompute) && !unsafe) {
      net.add_edge(in, net.sink(), kInfinite);
      continue;
    }
    if (unsafe || (ban && !unbanned.count(n))) net.add_edge(net.source(), in, kInfinite);
    for (const ir::Value* v : n->outputs()) {
      auto [a, b] = value_edge.at(v);
      net.add_edge(a, b, weight(v, dist.value.at(v)));
    }
  }
  Cut cut;
  cut.capacity = net.max_flow();
  if (cut.capacity >= kInfinite)
    throw check::RefusedInput(
        "partition-min-cut: no finite cut: some backward node depends on a node that is both banned from "
        "recomputation and forced to recompute",
        {});
  for (const ir::Node* n : joint.nodes())
    for (const ir::Value* v : n->outputs()) {
      auto [a, b] = value_edge.at(v);
      if (net.source_side(a) && !net.source_side(b)) {
        cut.saved.push_back(v);
        cut.bytes += value_bytes(v);
      }
    }
  return cut;
}

}  // namespace

MinCutResult min_cut_saved_values(const ir::Graph& joint, const Classification& classes, const MinCutOptions& options,
                                  check::Decisions& d) {
  const auto dist = distances_to_backward(joint, classes);
  const MutationIndex mutations(joint);
  std::vector<Candidate> bans;
  std::vector<const ir::Node*> unbannable;  // compute-intensive only: what a budget may unban
  for (const ir::Node* n : joint.nodes()) {
    if (classes.is_backward(n)) continue;
    if (ir::is_recomputable(n->meta().recompute) && !unsafe_to_recompute(*n) && !mutations.reads_value_written_later(*n))
      continue;  // forced to the sink before any ban
    const char* why = ban_reason(*n, classes.class_of(n), dist.node.at(n));
    if (why && std::string(why) == "compute-intensive" && d.injected("recompute-cpu-attention") &&
        is_heavy_kernel_outside_the_classic_list(n->op_base()))
      why = nullptr;  // the injected bug: only the classic list is banned
    if (!why && mutations.reads_value_written_later(*n)) why = "reads-value-written-later";
    if (!why || !d.refuse(why, true)) continue;
    bans.push_back({n, why});
    if (std::string(why) == "compute-intensive") unbannable.push_back(n);
  }
  std::unordered_set<const ir::Node*> unbanned;
  Cut best = cut_once(joint, classes, dist, bans, unbanned, mutations);
  MinCutResult result;
  result.unbudgeted_bytes = best.bytes;
  const double target = options.memory_budget * static_cast<double>(best.bytes);
  size_t best_k = 0;
  if (options.memory_budget < 1.0 && static_cast<double>(best.bytes) > target) {
    bool fits = false;
    Cut last = best;
    for (size_t k = 1; k <= unbannable.size() && !fits; ++k) {
      unbanned.insert(unbannable[k - 1]);
      last = cut_once(joint, classes, dist, bans, unbanned, mutations);
      fits = static_cast<double>(last.bytes) <= target;
      // The first fitting k, else the fewest bytes (the first such k): a smaller budget
      // then never saves more.
      if (fits || last.bytes < best.bytes) {
        best = last;
        best_k = k;
      }
    }
    if (!fits && d.injected("budget-fallback-to-plain-cut")) {
      unbanned.clear();
      best = cut_once(joint, classes, dist, bans, unbanned, mutations);
      best_k = 0;
    }
    d.fire("unban-for-budget", static_cast<int64_t>(best_k));
  }
  result.saved = std::move(best.saved);
  result.saved_bytes = best.bytes;
  result.cut_capacity = best.capacity;
  result.unbanned = static_cast<int64_t>(best_k);
  d.fire("save-cut-value", static_cast<int64_t>(result.saved.size()));
  return result;
}

}  // namespace passcheck::passes

namespace passcheck::passes {

namespace {

void check_budget(const std::string& value) {
  double budget = 0;
  try {
    size_t used = 0;
    budget = std::stod(value, &used);
    if (used != value.size()) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    throw std::invalid_argument("expected a number in [0, 1], got '" + value + "'");
  }
  if (!(budget >= 0.0 && budget <= 1.0)) throw std::invalid_argument("expected a number in [0, 1], got '" + value + "'");
}

}  // namespace

check::PassInfo partition_min_cut_pass_info() {
  check::PassInfo info(
      "partition-min-cut",
      "Split a one-part module (a joint graph) into forward and backward parts, saving PyTorch's min-cut of "
      "the joint graph and recomputing the rest in the backward",
      {{"memory-budget", "fraction in [0, 1] of the plain min-cut's saved bytes to fit in (1: plain min-cut)", "1",
        {}, check_budget},
       {"tag-saves", "tag the forward producers of the saved values with ap_must_save (ap_save_outputs for a "
                     "multi-output producer)",
        "false", {"true", "false"}}},
      check::NumericsEffect::Preserves, /*idempotent=*/false);
  info.rules = {{"save-cut-value", "a value on the min cut is saved for the backward"},
                {"unban-for-budget", "a compute-intensive node becomes recomputable to meet memory-budget"},
                {"tag-saved-producer", "tag-saves: a producer of a saved value gets ap_must_save"}};
  info.guards = {
      {"random", "a random op is never recomputed (fed from the source)"},
      {"mutating", "a node writing memory is never recomputed"},
      {"side-effects", "a node with side effects is never recomputed"},
      {"reads-value-written-later", "a node reading a storage written after it is never recomputed"},
      {"must-save", "a MUST_SAVE forward node is not recomputed"},
      {"collective", "a collective (or its wait) is not recomputed unless tagged recomputable"},
      {"compute-intensive", "mm, bmm, addmm, convolution, attention (the CPU flash kernel included), _scaled_mm "
                            "and _grouped_mm are not recomputed (memory-budget < 1 may unban them)"},
      {"reduction", "a node whose output is 4x smaller than its tensor inputs is not recomputed"},
      {"far-from-backward", "a node more than 1000 nodes from the backward is not recomputed"},
  };
  info.injectable_bugs = {{"budget-fallback-to-plain-cut",
                           "when no number of unbanned nodes fits the budget, fall back to the plain min-cut rather "
                           "than the cut with the fewest saved bytes (a smaller budget then saves more)"},
                          {"recompute-cpu-attention",
                           "ban only the classic compute-intensive list, so the CPU flash-attention kernel (and "
                           "_scaled_mm, _grouped_mm) is recomputed in the backward, which PyTorch's min-cut never does"}};
  return info;
}

check::PassResult partition_min_cut_pass(ir::Module& module, const check::PassOptions& options) {
  check::PassResult result;
  check::Decisions d(result, options);
  const ir::Graph& joint = single_joint_part(module, "partition-min-cut");
  const Classification classes = classify_nodes(joint);
  MinCutOptions cut_options;
  cut_options.memory_budget = std::stod(options.get("memory-budget"));
  MinCutResult cut;
  SplitResult split;
  try {
    cut = min_cut_saved_values(joint, classes, cut_options, d);
    split = split_joint(joint, cut.saved, classes);
  } catch (const check::RefusedInput& e) {
    throw check::RefusedInput(e.what(), result);
  }
  module = std::move(split.module);
  if (options.get_bool("tag-saves")) result.stats["tagged_producers"] = tag_saved_values(module, d);
  result.changed = true;
  result.stats["saved_values"] = static_cast<int64_t>(split.saved.size());
  result.stats["saved_bytes"] = module.linked_bytes(0);
  result.stats["unbudgeted_saved_bytes"] = cut.unbudgeted_bytes;
  result.stats["unbanned_nodes"] = cut.unbanned;
  result.stats["recomputed_nodes"] = split.recomputed_nodes;
  return result;
}

}  // namespace passcheck::passes
