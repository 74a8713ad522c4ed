// Placements of a traced per-rank graph (placements.h).
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

}  // namespace passcheck::oracles
