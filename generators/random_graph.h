// RapidCheck generators of structurally valid passcheck IR graphs. A graph is generated
// as a plain-data recipe (inputs, nodes whose value references are indices, graph
// outputs) and only then built, so every shrink of the recipe (a node dropped, an
// argument simplified, a reference pointed at an earlier value) still builds a valid
// graph. The generated graphs are not meant to be executable: operators, argument
// kinds and value types are mixed freely to stress the IR, the printer and the parser.
#pragma once

#include "framework/ir/graph.h"

#include <rapidcheck.h>

#include <cstdint>
#include <memory>
#include <ostream>

namespace passcheck::gen {

/// Graphs with 1-4 inputs, 0-25 nodes and 0-4 graph outputs; sizes grow with
/// RapidCheck's size parameter and shrink towards fewer nodes and simpler arguments.
rc::Gen<std::shared_ptr<ir::Graph>> arbitrary_graph();

/// The graph arbitrary_graph() generates for `seed` at RapidCheck size `size`
/// (deterministic; for campaigns that draw cases outside a RapidCheck property).
std::shared_ptr<ir::Graph> graph_for_seed(uint64_t seed, int size = 50);

/// Tensor metadata: f32/bf16/f16/f64/i64/b8, 0-4 dims of size 0-7, sometimes
/// non-contiguous strides, sometimes on the meta device or cuda:0.
rc::Gen<ir::TensorMeta> arbitrary_tensor_meta();

/// Node metadata covering every phase, recompute policy and metadata key.
rc::Gen<ir::NodeMeta> arbitrary_node_meta();

/// Constant arguments of every kind (no value references), nested lists included.
rc::Gen<ir::Arg> arbitrary_constant_arg();

}  // namespace passcheck::gen

namespace passcheck::ir {
// Found by argument-dependent lookup when RapidCheck reports a counterexample, so a
// failing graph is shown as its text form rather than as "<\?>".
void showValue(const Graph& graph, std::ostream& os);
}  // namespace passcheck::ir
