// Splitting one graph into consecutive segments, each a part of a Module: how the
// cudagraph pass cuts a part at the nodes a CUDA graph cannot capture. Segment k takes
// the graph inputs it reads (module inputs, by name) and the values of earlier segments it
// reads (linked), and returns the values later segments read or the graph returns.
// Running the module equals running the graph bit for bit: every node runs once, in the
// graph's order, on the same values.
#pragma once

#include "framework/ir/graph.h"
#include "framework/ir/module.h"

#include <string>
#include <vector>

namespace passcheck::passes {

/// Name of segment `index` of part `part`: `<part>_graph<index>` when captured,
/// `<part>_eager<index>` otherwise.
std::string segment_name(const std::string& part, size_t index, bool captured);

/// Splits `graph` at `segment_of_node` (one entry per node in graph order, never
/// decreasing, every index from 0 to captured.size() - 1 used) into a module of
/// captured.size() parts named by segment_name(). The module's inputs are the graph's
/// input names; its results are the graph's outputs. A graph output that is a graph
/// input is passed through by part 0. Throws std::invalid_argument on a bad assignment.
ir::Module split_into_segments(const ir::Graph& graph, const std::vector<size_t>& segment_of_node,
                               const std::vector<bool>& captured, const std::string& part);

}  // namespace passcheck::passes
