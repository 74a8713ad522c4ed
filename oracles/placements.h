// Records a parallelized subject's placements in its traced per-rank graph: the mesh
// and rank line, the placement of every parameter and buffer input, and the same
// placement on each parameter's gradient output (a gradient is laid out as its
// parameter: an FSDP shard's gradient is the reduce-scattered S(0) shard).
#pragma once

#include "framework/dist/mesh.h"
#include "framework/ir/graph.h"

#include <map>
#include <string>
#include <vector>

namespace passcheck::oracles {

/// `placements`: FQN -> one placement text per mesh dim ("S(0)", "R", "P(sum)").
/// `state_fqns` are the graph's first inputs in order, the first `num_parameters` of them
/// parameters whose gradients are graph outputs 1.. in the same order. Throws
/// std::invalid_argument for a placement that does not parse or fit its tensor.
void record_placements(ir::Graph& graph, const dist::DeviceMesh& mesh, int64_t rank,
                       const std::vector<std::string>& state_fqns, size_t num_parameters,
                       const std::map<std::string, std::vector<std::string>>& placements);

}  // namespace passcheck::oracles
