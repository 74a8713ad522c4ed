// Graph minimizer (see minimize.h).
#include "framework/check/minimize.h"

#include "framework/exec/op_properties.h"
#include "framework/ir/text.h"

#include <algorithm>
#include <chrono>
#include <cctype>

namespace passcheck::check {

namespace {

using Clock = std::chrono::steady_clock;

bool removable_when_dead(const ir::Node& n) {
  return !exec::is_mutating(n) && !exec::is_random(n) && !exec::has_side_effects(n) && !exec::is_collective(n);
}

// Index-based handles survive clone(): node i of the clone is node i of the source.
std::vector<ir::Node*> nodes_of(const ir::Graph& g) { return g.node_list(); }

// Cuts every node in [first, last) of `g` loose: uses of its outputs read new inputs.
// Returns false when a node in the range cannot be cut (an output without metadata).
bool cut_nodes(ir::Graph& g, size_t first, size_t last) {
  std::vector<ir::Node*> nodes = nodes_of(g);
  bool any = false;
  for (size_t i = first; i < last && i < nodes.size(); ++i) {
    ir::Node* n = nodes[i];
    for (ir::Value* out : n->outputs()) {
      if (!out->has_uses()) continue;
      if (out->type() == ir::ValueType::None) return false;
      if (out->type() == ir::ValueType::Tensor && !out->meta()) return false;
      ir::Value* in = g.add_input(g.unique_name(out->name() + "_in"), out->type(), out->meta(), ir::InputRole::Argument);
      out->replace_all_uses_with(in);
    }
    any = true;
  }
  if (!any) return false;
  for (size_t i = std::min(last, nodes.size()); i-- > first;) g.erase(nodes[i]);
  erase_dead_nodes(g);
  return true;
}

bool prints_and_parses(const ir::Graph& g) {
  try {
    std::string text = g.print();
    return ir::parse_graph(text, "<candidate>")->print() == text;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

size_t erase_dead_nodes(ir::Graph& graph) {
  size_t erased = 0;
  bool progress = true;
  while (progress) {
    progress = false;
    std::vector<ir::Node*> nodes = graph.node_list();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      ir::Node* n = *it;
      if (n->has_users() || !removable_when_dead(*n)) continue;
      graph.erase(n);
      ++erased;
      progress = true;
    }
  }
  return erased;
}

std::string violation_signature(const std::string& violation) {
  std::string out;
  bool in_quote = false;
  for (size_t i = 0; i < violation.size(); ++i) {
    char c = violation[i];
    if (c == '`') {
      in_quote = !in_quote;
      if (!in_quote) out += "`_`";
      continue;
    }
    if (in_quote) continue;
    if (c == ':') break;
    if (c == '%') {
      out += "%_";
      while (i + 1 < violation.size() && (std::isalnum(static_cast<unsigned char>(violation[i + 1])) || violation[i + 1] == '_'))
        ++i;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      if (out.empty() || out.back() != '#') out += '#';
      continue;
    }
    out += c;
  }
  return out;
}

MinimizeResult minimize_graph(const ir::Graph& graph, const StillFails& still_fails, const MinimizeOptions& options) {
  MinimizeResult result;
  result.graph = graph.clone();
  result.nodes_before = graph.num_nodes();
  Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options.max_seconds * 1000));
  auto out_of_time = [&] {
    if (Clock::now() < deadline) return false;
    result.timed_out = true;
    return true;
  };
  // Accepts `candidate` as the new best when it is well formed and still fails.
  auto try_candidate = [&](std::unique_ptr<ir::Graph> candidate) {
    ++result.candidates_tried;
    if (!prints_and_parses(*candidate) || !still_fails(*candidate)) return false;
    result.graph = std::move(candidate);
    ++result.candidates_accepted;
    if (options.on_progress) options.on_progress(result.graph->num_nodes());
    return true;
  };

  bool progress = true;
  while (progress && !out_of_time()) {
    progress = false;
    // (a) Drop graph outputs in chunks, keeping at least one.
    for (size_t chunk = std::max<size_t>(1, result.graph->outputs().size() / 2); chunk >= 1 && !out_of_time(); chunk /= 2) {
      for (size_t start = 0; start < result.graph->outputs().size() && result.graph->outputs().size() > 1;) {
        if (out_of_time()) break;
        const auto& outs = result.graph->outputs();
        size_t end = std::min(outs.size(), start + chunk);
        if (end - start >= outs.size()) break;  // would drop every output
        // Rebuild through text: Graph has no API to drop an output, the printer/parser does.
        std::unique_ptr<ir::Graph> candidate = result.graph->clone();
        std::vector<ir::Value*> keep;
        for (size_t i = 0; i < candidate->outputs().size(); ++i)
          if (i < start || i >= end) keep.push_back(candidate->outputs()[i]);
        std::string text = candidate->print();
        size_t ret = text.rfind("return (");
        if (ret == std::string::npos) break;
        std::string ret_line = "return (";
        for (size_t i = 0; i < keep.size(); ++i) ret_line += (i ? ", %" : "%") + keep[i]->name();
        ret_line += ")";
        size_t ret_end = text.find('\n', ret);
        text = text.substr(0, ret) + ret_line + (ret_end == std::string::npos ? "" : text.substr(ret_end));
        std::unique_ptr<ir::Graph> parsed;
        try {
          parsed = ir::parse_graph(text, "<candidate>");
        } catch (const std::exception&) {
          start = end;
          continue;
        }
        erase_dead_nodes(*parsed);
        if (try_candidate(std::move(parsed))) {
          progress = true;  // same start: the next outputs moved down
        } else {
          start = end;
        }
      }
      if (chunk == 1) break;
    }
    // (b) Cut nodes loose in chunks, largest first; nodes after a cut keep running.
    for (size_t chunk = std::max<size_t>(1, result.graph->num_nodes() / 2); chunk >= 1 && !out_of_time(); chunk /= 2) {
      for (size_t start = 0; start < result.graph->num_nodes();) {
        if (out_of_time()) break;
        std::unique_ptr<ir::Graph> candidate = result.graph->clone();
        size_t before = candidate->num_nodes();
        bool cut = false;
        try {
          cut = cut_nodes(*candidate, start, start + chunk);
        } catch (const std::exception&) {
          cut = false;
        }
        if (cut && candidate->num_nodes() < before && try_candidate(std::move(candidate))) {
          progress = true;  // nodes shifted down: retry the same start
        } else {
          start += chunk;
        }
      }
      if (chunk == 1) break;
    }
  }
  result.nodes_after = result.graph->num_nodes();
  return result;
}

}  // namespace passcheck::check
