// passcheck graphs as Python: writes a self-contained Python file that rebuilds a graph
// as a torch.fx GraphModule of `torch.ops.aten.<op>.<overload>` calls, with the inputs'
// kinds, every value's type and the node metadata recorded in node.meta, so a Python
// pass can run on any graph passcheck has (traced, generated, minimized) and its result
// can be exported back (python/passcheck_fx). docs/python-passes.md describes the file.
#pragma once

#include "framework/ir/graph.h"

#include <stdexcept>
#include <string>

namespace passcheck::python_bridge {

/// A graph the Python writer cannot express (a passcheck-only operator, a symbolic
/// shape, a distributed graph); the message names the node and why.
class PythonWriteError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// The Python file for `graph`; `source` names where the graph came from (a comment).
/// Throws PythonWriteError for graphs it cannot express.
std::string write_python_graph(const ir::Graph& graph, const std::string& source);

}  // namespace passcheck::python_bridge
