// Eager islands in generated programs (eager_islands.h). The island is written as graph
// text beside the value's own line and the graph parsed again, so the case is exactly
// what a graph file holding it would be.
#include "generators/eager_islands.h"

#include "framework/ir/graph.h"
#include "framework/ir/text.h"

#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace passcheck::gen {

namespace {

std::string sizes_text(const std::vector<int64_t>& sizes) {
  std::string out;
  for (int64_t s : sizes) out += (out.empty() ? "" : ", ") + std::to_string(s);
  return "[" + out + "]";
}

}  // namespace

GeneratedCase generate_eager_island_case(uint64_t seed) {
  GeneratedCase c = generate_case(seed);
  std::vector<const ir::Value*> candidates;
  for (const ir::Node* n : c.graph->nodes()) {
    // Not the output of an empty*/new_empty: its memory is what the next in-place write
    // (a bernoulli_, a copy_) puts there, and the island would read it before that.
    if (n->meta().phase != ir::Phase::Forward || n->op_name().find("empty") != std::string::npos) continue;
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      const ir::Value* v = n->output(i);
      if (v->type() == ir::ValueType::Tensor && v->meta() && !v->meta()->is_symbolic() &&
          v->meta()->dtype == c10::ScalarType::Float && v->meta()->is_contiguous())
        candidates.push_back(v);
    }
  }
  if (candidates.empty()) return c;
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  const ir::Value* v = candidates[rng() % candidates.size()];
  const int kind = static_cast<int>(rng() % 3);  // 0: host read, 1: data-dependent shape, 2: both
  const std::string name = "%" + v->name();
  std::string island, outputs, what;
  if (kind != 1) {
    island += "  %island_sum : f32[] = aten::sum(" + name + ", None)\n"
              "  %island_item : float = aten::_local_scalar_dense(%island_sum)\n"
              "  %island_scaled : " + ir::print_type(*v) + " = aten::mul.Scalar(" + name + ", %island_item)\n";
    outputs += ", %island_scaled";
    what = "a host read of " + name;
  }
  if (kind != 0) {
    island += "  %island_positive : b8" + sizes_text(v->meta()->sizes) + " = aten::gt.Scalar(" + name + ", 0.0)\n"
              "  %island_nonzero : Tensor = aten::nonzero(%island_positive)\n"
              "  %island_count : i64[] = aten::sum(%island_nonzero, None)\n";
    outputs += ", %island_count";
    what += std::string(what.empty() ? "" : " and ") + "a data-dependent shape (nonzero) of " + name;
  }
  // The island goes right after the line defining the value (and its metadata comment,
  // which is part of the line); the new outputs at the end of the return.
  std::istringstream in(c.graph->print());
  std::ostringstream out;
  bool placed = false;
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find(" = ");
    if (line.rfind("  return (", 0) == 0 && line.back() == ')') {
      out << line.substr(0, line.size() - 1) << outputs << ")\n";
      continue;
    }
    out << line << "\n";
    // "%a : T" or, for several outputs, "%a : T, %b : U" before the " = ".
    if (!placed && eq != std::string::npos && line.rfind("  %", 0) == 0 &&
        (" " + line.substr(2, eq - 2)).find(" " + name + " : ") != std::string::npos) {
      out << island;
      placed = true;
    }
  }
  if (!placed) throw std::logic_error("generate_eager_island_case: no line defines " + name);
  c.graph = std::shared_ptr<ir::Graph>(ir::parse_graph(out.str(), "generate_eager_island_case").release());
  c.description += "; eager island: " + what;
  return c;
}

}  // namespace passcheck::gen
