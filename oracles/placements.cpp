// Placements of a traced per-rank graph and its collective census (placements.h).
#include "oracles/placements.h"

#include <stdexcept>

namespace passcheck::oracles {

namespace {

std::vector<ir::Placement> parse_all(const std::string& fqn, const std::vector<std::string>& texts,
                                     const dist::DeviceMesh& mesh, const std::optional<ir::TensorMeta>& meta) {
  if (texts.size() != mesh.ndim())
    throw std::invalid_argument(fqn + " has " + std::to_string(texts.size()) + " placements for mesh " + mesh.str());
  std::vector<ir::Placement> out;
  for (const std::string& t : texts) {
    std::optional<ir::Placement> p = ir::Placement::parse(t);
    if (!p) throw std::invalid_argument(fqn + ": '" + t + "' is not a placement (S(dim), R or P(op))");
    if (p->kind == ir::Placement::Kind::Shard && meta && p->dim >= static_cast<int64_t>(meta->sizes.size()))
      throw std::invalid_argument(fqn + " is placed " + t + " but has " + std::to_string(meta->sizes.size()) + " dims");
    out.push_back(*p);
  }
  return out;
}

}  // namespace

void record_placements(ir::Graph& graph, const dist::DeviceMesh& mesh, int64_t rank,
                       const std::vector<std::string>& state_fqns, size_t num_parameters,
                       const std::map<std::string, std::vector<std::string>>& placements) {
  ir::MeshInfo info;
  info.dims = mesh.dims();
  info.rank = rank;
  graph.set_mesh(info);
  for (size_t i = 0; i < state_fqns.size() && i < graph.inputs().size(); ++i) {
    auto it = placements.find(state_fqns[i]);
    if (it == placements.end()) continue;
    ir::Value* input = graph.inputs()[i];
    std::vector<ir::Placement> p = parse_all(state_fqns[i], it->second, mesh, input->meta());
    input->set_placements(p);
    size_t out = i + 1;  // outputs: the loss, then one gradient per parameter
    if (i < num_parameters && out < graph.outputs().size()) {
      ir::Value* grad = graph.outputs()[out];
      if (!grad->is_graph_input() && grad->placements().empty() && grad->type() == ir::ValueType::Tensor)
        grad->set_placements(p);
    }
  }
}

std::map<std::string, int64_t> count_collectives(const ir::Graph& graph) {
  std::map<std::string, int64_t> counts;
  for (const char* op : {"all_gather_into_tensor", "reduce_scatter_tensor", "all_reduce", "all_to_all_single",
                         "wait_tensor"})
    counts[op] = 0;
  for (const ir::Node* n : graph.nodes()) {
    const std::string& op = n->op();
    if (op.rfind("passcheck::", 0) != 0) continue;
    auto it = counts.find(op.substr(11));
    if (it != counts.end()) ++it->second;
  }
  return counts;
}

}  // namespace passcheck::oracles
