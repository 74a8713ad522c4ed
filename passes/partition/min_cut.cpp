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
#include "passes/partition/op_facts.h"
#include "passes/partition/save_all.h"
#include "passes/partition/split.h"

#include <boost/graph/boykov_kolmogorov_max_flow.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/property_map/property_map.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

namespace passcheck::passes {

namespace {

// The flow network in compressed sparse row form: flat arrays, no allocation per vertex
// or edge. Vertices are numbered and each vertex's out-edges ordered as an
// adjacency_list built by the same add_vertex / add_edge calls would hold them (an edge
// u -> v, then its reverse v -> u, appended to u's and v's lists), so Boykov-Kolmogorov
// runs the same search.
using CsrGraph = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, boost::no_property,
                                                    boost::no_property, uint32_t, uint32_t>;
using Vertex = boost::graph_traits<CsrGraph>::vertex_descriptor;
using Edge = boost::graph_traits<CsrGraph>::edge_descriptor;

// Large enough that no finite cut reaches it, small enough that a few of them add up
// without overflow.
constexpr int64_t kInfinite = int64_t{1} << 60;
constexpr int64_t kMaxDistFromBackward = 1000;

class FlowNetwork {
 public:
  FlowNetwork(size_t vertices, size_t edges) {
    edges_.reserve(edges);
    source_ = add_vertex();
    sink_ = add_vertex();
    (void)vertices;
  }
  Vertex source() const { return source_; }
  Vertex sink() const { return sink_; }
  Vertex add_vertex() { return num_vertices_++; }
  void add_edge(Vertex u, Vertex v, int64_t capacity) { edges_.push_back({u, v, capacity}); }

  int64_t max_flow() {
    const size_t n = num_vertices_;
    const size_t m = 2 * edges_.size();
    // Counting sort by source, keeping each vertex's insertion order.
    std::vector<uint32_t> next(n + 1, 0);
    for (const PendingEdge& e : edges_) {
      ++next[e.u + 1];
      ++next[e.v + 1];
    }
    for (size_t i = 1; i <= n; ++i) next[i] += next[i - 1];
    std::vector<std::pair<uint32_t, uint32_t>> sorted(m);
    std::vector<int64_t> capacity(m);
    std::vector<uint32_t> reverse_index(m);
    for (const PendingEdge& e : edges_) {
      const uint32_t i = next[e.u]++;
      const uint32_t j = next[e.v]++;
      sorted[i] = {e.u, e.v};
      sorted[j] = {e.v, e.u};
      capacity[i] = e.capacity;
      capacity[j] = 0;
      reverse_index[i] = j;
      reverse_index[j] = i;
    }
    std::vector<PendingEdge>().swap(edges_);
    std::vector<uint32_t>().swap(next);
    CsrGraph g(boost::edges_are_sorted, sorted.begin(), sorted.end(), static_cast<uint32_t>(n),
               static_cast<uint32_t>(m));
    std::vector<Edge> reverse(m);
    for (size_t i = 0; i < m; ++i)
      reverse[i] = Edge(sorted[reverse_index[i]].first, reverse_index[i]);
    std::vector<std::pair<uint32_t, uint32_t>>().swap(sorted);
    std::vector<uint32_t>().swap(reverse_index);
    std::vector<int64_t> residual(m);
    std::vector<Edge> predecessor(n);
    std::vector<int64_t> distance(n);
    color_.assign(n, boost::default_color_type{});
    const auto edge_index = boost::get(boost::edge_index, g);
    const auto vertex_index = boost::get(boost::vertex_index, g);
    return boost::boykov_kolmogorov_max_flow(
        g, boost::make_iterator_property_map(capacity.begin(), edge_index),
        boost::make_iterator_property_map(residual.begin(), edge_index),
        boost::make_iterator_property_map(reverse.begin(), edge_index),
        boost::make_iterator_property_map(predecessor.begin(), vertex_index),
        boost::make_iterator_property_map(color_.begin(), vertex_index),
        boost::make_iterator_property_map(distance.begin(), vertex_index), vertex_index, source_, sink_);
  }
  /// After max_flow: on the source side of the minimal cut.
  bool source_side(Vertex v) const { return color_[v] == boost::color_traits<boost::default_color_type>::black(); }

 private:
  struct PendingEdge {
    uint32_t u, v;
    int64_t capacity;
  };
  std::vector<PendingEdge> edges_;
  std::vector<boost::default_color_type> color_;
  uint32_t num_vertices_ = 0;
  Vertex source_ = 0, sink_ = 0;
};

int64_t value_bytes(const ir::Value* v) {
  if (v->type() != ir::ValueType::Tensor || !v->meta()) return 8;
  return v->meta()->nbytes();
}

// PyTorch's dist_from_bw, per value (an output of a multi-output node is PyTorch's
// getitem node, with its own distance): 0 outside the required forward, else one more
// than the nearest user's; a node's distance is its nearest output's. Indexed by
// position and value id (Classification).
struct Distances {
  std::vector<int64_t> node;
  std::vector<int64_t> value;
};

Distances distances_to_backward(const Classification& classes) {
  constexpr int64_t kFar = 1000000000;
  Distances dist;
  const size_t n = classes.nodes.size();
  dist.node.assign(n, 0);
  // value[id] gathers min(user's distance + 1) over the users seen so far; the reverse
  // walk reaches every user before the producer.
  dist.value.assign(classes.num_values(), kFar);
  for (size_t p = n; p-- > 0;) {
    const bool forward = classes.classes[p] == NodeClass::RequiredForward;
    int64_t nearest = forward ? kFar : 0;
    const size_t outputs = classes.first_output[p + 1] - classes.first_output[p];
    for (size_t k = 0; k < outputs; ++k) {
      int64_t& d = dist.value[classes.output_id(static_cast<uint32_t>(p), k)];
      if (!forward) d = 0;
      nearest = std::min(nearest, d);
    }
    dist.node[p] = nearest;
    for (uint32_t s = classes.operand_begin[p]; s < classes.operand_begin[p + 1]; ++s) {
      const uint32_t id = classes.operand_ids[s];
      if (id != Classification::npos) dist.value[id] = std::min(dist.value[id], nearest + 1);
    }
  }
  return dist;
}

struct Cut {
  std::vector<const ir::Value*> saved;
  int64_t bytes = 0;
  int64_t capacity = 0;
};

const char* ban_reason(const ir::Node& node, NodeClass cls, int64_t dist_from_backward, const OpFacts& facts,
                       const char* unsafe) {
  if (unsafe) return unsafe;  // random first, as unsafe_to_recompute checks it first
  if (cls != NodeClass::RequiredForward) return nullptr;
  if (node.meta().recompute == ir::RecomputePolicy::MustSave) return "must-save";
  if (facts.collective) return "collective";
  if (facts.compute_intensive) return "compute-intensive";
  if (!facts.aliases_input && node.num_outputs() > 0) {
    int64_t in_bytes = 0, out_bytes = 0;
    for (size_t i = 0; i < node.num_operands(); ++i) {
      const ir::Value* v = node.operand(i);
      if (v->type() == ir::ValueType::Tensor && v->meta()) in_bytes += v->meta()->nbytes();
    }
    for (const ir::Value* v : node.outputs()) out_bytes += value_bytes(v);
    if (out_bytes * 4 < in_bytes) return "reduction";
  }
  if (dist_from_backward > kMaxDistFromBackward) return "far-from-backward";
  return nullptr;
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
  OpFactsCache ops;
  const OpFacts& facts = ops.of(node);
  return ban_reason(node, cls, dist_from_backward, facts, unsafe_to_recompute(node, facts));
}

namespace {

// What min-cut knows of each node (by position) before any cut.
struct NodeFacts {
  std::vector<const OpFacts*> op;
  /// unsafe_to_recompute's reason, or "reads-value-written-later"; null when safe (and
  /// for backward nodes, which are never asked).
  std::vector<const char*> unsafe_why;
  std::vector<uint8_t> unsafe;          // unsafe_to_recompute || reads a value written later
  std::vector<uint8_t> to_sink;         // recomputable and safe: forced to the sink before any ban
  std::vector<const char*> ban;         // the ban counted for the node (null: none)
  /// Per position and per value id: a path leads from it to the sink (a backward node or
  /// one forced to the sink reads it, directly or through other nodes). The rest of the
  /// graph carries no flow: the network leaves it out (SinkReach).
  std::vector<uint8_t> node_reaches_sink;
  std::vector<uint8_t> value_reaches_sink;
};

// Vertices with no path to the sink never carry flow, and a maximum flow's minimal cut
// (the vertices reachable from the source in the residual network, the same for every
// maximum flow) never passes through them: no path from the source to a vertex that
// reaches the sink goes through one that does not. Leaving them out changes neither the
// flow nor the cut, and a forward whose values the backward does not read costs nothing.
void find_sink_reach(const Classification& classes, NodeFacts& facts) {
  const size_t n = classes.nodes.size();
  facts.node_reaches_sink.assign(n, 0);
  facts.value_reaches_sink.assign(classes.num_values(), 0);
  // Users come after producers: a reverse walk sees every user of a value first.
  for (uint32_t p = static_cast<uint32_t>(n); p-- > 0;) {
    bool reaches = classes.is_backward_at(p) || facts.to_sink[p];
    for (uint32_t id = classes.output_id(p, 0); !reaches && id < classes.output_id(p + 1, 0); ++id)
      reaches = facts.value_reaches_sink[id];
    if (!reaches) continue;
    facts.node_reaches_sink[p] = 1;
    for (uint32_t s = classes.operand_begin[p]; s < classes.operand_begin[p + 1]; ++s)
      if (classes.operand_ids[s] != Classification::npos) facts.value_reaches_sink[classes.operand_ids[s]] = 1;
  }
}

// One max-flow over the classified joint graph with the nodes marked in `unbanned` treated as recomputable.
Cut cut_once(const Classification& classes, const Distances& dist, const NodeFacts& facts,
             const std::vector<uint8_t>& unbanned, const std::vector<double>& scale) {
  const size_t n = classes.nodes.size();
  const size_t values = classes.num_values();
  FlowNetwork net(2 + 2 * values + n, 2 * classes.num_inputs + values + 2 * n + classes.operand_ids.size());
  std::vector<Vertex> value_in(values), value_out(values), node_in(n);  // X_in, X_out per value
  auto weight = [&](const ir::Value* v, int64_t d, bool view) {
    int64_t w = static_cast<int64_t>(static_cast<double>(value_bytes(v)) *
                                     scale[static_cast<size_t>(std::max<int64_t>(std::min<int64_t>(d, 100), 1))]);
    if (view) w *= 2;  // a view is not materialized
    return w;
  };
  for (size_t i = 0; i < classes.num_inputs; ++i) {
    if (!facts.value_reaches_sink[i]) continue;
    Vertex a = net.add_vertex(), b = net.add_vertex();
    net.add_edge(net.source(), a, kInfinite);
    net.add_edge(a, b, 0);
    value_in[i] = a;
    value_out[i] = b;
  }
  for (uint32_t p = 0; p < n; ++p) {
    if (!facts.node_reaches_sink[p]) continue;
    const ir::Node* node = classes.nodes[p];
    const Vertex in = net.add_vertex();
    node_in[p] = in;
    const size_t outputs = node->num_outputs();
    if (outputs == 1) {
      const uint32_t id = classes.output_id(p, 0);
      value_in[id] = in;
      value_out[id] = net.add_vertex();
    } else if (outputs > 1) {
      Vertex out = net.add_vertex();
      net.add_edge(in, out, kInfinite);
      for (size_t k = 0; k < outputs; ++k) {
        const uint32_t id = classes.output_id(p, k);
        Vertex a = net.add_vertex();
        net.add_edge(out, a, kInfinite);
        value_in[id] = a;
        value_out[id] = net.add_vertex();
      }
    }
  }
  for (uint32_t p = 0; p < n; ++p) {
    if (!facts.node_reaches_sink[p]) continue;
    const Vertex in = node_in[p];
    for (uint32_t s = classes.operand_begin[p]; s < classes.operand_begin[p + 1]; ++s) {
      const uint32_t id = classes.operand_ids[s];
      if (id == Classification::npos) throw std::out_of_range("partition-min-cut: an operand is not a value of the graph");
      net.add_edge(value_out[id], in, kInfinite);
    }
    if (classes.is_backward_at(p) || facts.to_sink[p]) {
      net.add_edge(in, net.sink(), kInfinite);
      continue;
    }
    if (facts.unsafe[p] || (facts.ban[p] && !unbanned[p])) net.add_edge(net.source(), in, kInfinite);
    const ir::Node* node = classes.nodes[p];
    const bool view = facts.op[p]->aliases_input;
    for (size_t k = 0; k < node->num_outputs(); ++k) {
      const uint32_t id = classes.output_id(p, k);
      net.add_edge(value_in[id], value_out[id], weight(node->output(k), dist.value[id], view));
    }
  }
  Cut cut;
  cut.capacity = net.max_flow();
  if (cut.capacity >= kInfinite)
    throw check::RefusedInput(
        "partition-min-cut: no finite cut: some backward node depends on a node that is both banned from "
        "recomputation and forced to recompute",
        {});
  for (uint32_t p = 0; p < n; ++p) {
    if (!facts.node_reaches_sink[p]) continue;  // not in the network: never cut
    const ir::Node* node = classes.nodes[p];
    for (size_t k = 0; k < node->num_outputs(); ++k) {
      const uint32_t id = classes.output_id(p, k);
      if (net.source_side(value_in[id]) && !net.source_side(value_out[id])) {
        cut.saved.push_back(node->output(k));
        cut.bytes += value_bytes(node->output(k));
      }
    }
  }
  return cut;
}

}  // namespace

MinCutResult min_cut_saved_values(const ir::Graph& joint, const Classification& classes, const MinCutOptions& options,
                                  check::Decisions& d) {
  OpFactsCache ops;
  const WrittenStorage written(classes, ops);
  return min_cut_saved_values(joint, classes, options, d, written);
}

MinCutResult min_cut_saved_values(const ir::Graph& joint, const Classification& classes, const MinCutOptions& options,
                                  check::Decisions& d, const WrittenStorage& written) {
  const Distances dist = distances_to_backward(classes);
  const size_t n = classes.nodes.size();
  NodeFacts facts;
  facts.op.resize(n);
  for (uint32_t p = 0; p < n; ++p) facts.op[p] = &written.op(p);
  auto reads_value_written_later = [&](uint32_t p) { return written.reads_value_written_later(joint, p); };
  facts.unsafe_why.assign(n, nullptr);
  facts.unsafe.assign(n, 0);
  facts.to_sink.assign(n, 0);
  facts.ban.assign(n, nullptr);
  std::vector<uint32_t> unbannable;  // compute-intensive only: what a budget may unban
  for (uint32_t p = 0; p < n; ++p) {
    if (classes.is_backward_at(p)) continue;
    const ir::Node* node = classes.nodes[p];
    const char* unsafe = unsafe_to_recompute(*node, *facts.op[p]);
    const bool reads_later = reads_value_written_later(p);
    facts.unsafe[p] = unsafe || reads_later;
    facts.unsafe_why[p] = unsafe;
    if (ir::is_recomputable(node->meta().recompute) && !facts.unsafe[p]) {
      facts.to_sink[p] = 1;
      continue;  // forced to the sink before any ban
    }
    const char* why = ban_reason(*node, classes.classes[p], dist.node[p], *facts.op[p], unsafe);
    if (why && std::strcmp(why, "compute-intensive") == 0 && d.injected("recompute-cpu-attention") &&
        facts.op[p]->heavy_outside_classic_list)
      why = nullptr;  // the injected bug: only the classic list is banned
    if (!why && reads_later) why = "reads-value-written-later";
    if (!why || !d.refuse(why, true)) continue;
    facts.ban[p] = why;
    if (std::strcmp(why, "compute-intensive") == 0) unbannable.push_back(p);
  }
  find_sink_reach(classes, facts);
  std::vector<double> scale(101);
  for (int64_t k = 1; k <= 100; ++k) scale[static_cast<size_t>(k)] = std::pow(1.1, static_cast<double>(k));
  std::vector<uint8_t> unbanned(n, 0);
  Cut best = cut_once(classes, dist, facts, unbanned, scale);
  MinCutResult result;
  result.unbudgeted_bytes = best.bytes;
  const double target = options.memory_budget * static_cast<double>(best.bytes);
  size_t best_k = 0;
  if (options.memory_budget < 1.0 && static_cast<double>(best.bytes) > target) {
    bool fits = false;
    Cut last = best;
    for (size_t k = 1; k <= unbannable.size() && !fits; ++k) {
      unbanned[unbannable[k - 1]] = 1;
      last = cut_once(classes, dist, facts, unbanned, scale);
      fits = static_cast<double>(last.bytes) <= target;
      // The first fitting k, else the fewest bytes (the first such k): a smaller budget
      // then never saves more.
      if (fits || last.bytes < best.bytes) {
        best = last;
        best_k = k;
      }
    }
    if (!fits && d.injected("budget-fallback-to-plain-cut")) {
      std::fill(unbanned.begin(), unbanned.end(), 0);
      best = cut_once(classes, dist, facts, unbanned, scale);
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
  OpFactsCache ops;
  const WrittenStorage written(classes, ops);  // the cut's and the split's
  try {
    cut = min_cut_saved_values(joint, classes, cut_options, d, written);
    split = split_joint_consuming(module.parts.front().graph, cut.saved, classes, written);
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
