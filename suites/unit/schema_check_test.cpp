// Unit tests of the schema checks of parsed graphs (framework/check/schema_check.h):
// declared output kinds against what the operator returns (Tensor, Scalar, lists,
// undefined gradients recorded as None), unknown operators, argument and output counts,
// each named by file:line:col; and the graphs the tracer writes pass them.
#include "framework/check/schema_check.h"

#include "framework/io/files.h"
#include "framework/ir/text.h"
#include "suites/support/test_support.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace passcheck::check {
namespace {

// A graph with input %x : f32[2, 3] and one node line (line 3, the node at column 3).
std::vector<std::string> problems_of(const std::string& node_line) {
  const std::string text = "graph(\n    arg %x : f32[2, 3]):\n  " + node_line + "\n  return ()\n";
  return schema_problems(*ir::parse_graph(text, "g.graph"), "g.graph");
}

void expect_one_problem(const std::string& node_line, const std::string& expected) {
  const std::vector<std::string> problems = problems_of(node_line);
  ASSERT_EQ(problems.size(), 1u) << node_line;
  EXPECT_EQ(problems[0], expected);
}

TEST(SchemaCheck, ANonTensorOutputOfATensorOpNamesBothKinds) {
  expect_one_problem("%y : int = aten::relu(%x)",
                     "g.graph:3:3: aten::relu returns Tensor or None but output %y is declared int");
  expect_one_problem("%y : bool = aten::relu(%x)",
                     "g.graph:3:3: aten::relu returns Tensor or None but output %y is declared bool");
  // The second output of a two-output op, at its own column.
  expect_one_problem("%a : f32[1, 3], %b : float = aten::split.Tensor(%x, 1, 0)",
                     "g.graph:3:19: aten::split.Tensor returns Tensor or None but output %b is declared float");
}

TEST(SchemaCheck, MatchingKindsPass) {
  EXPECT_TRUE(problems_of("%y : f32[2, 3] = aten::relu(%x)").empty());
  // An undefined gradient is recorded as None where the schema returns a Tensor.
  EXPECT_TRUE(problems_of("%y : None = aten::relu(%x)").empty());
  // A Scalar return may hold any number kind, but not a tensor.
  EXPECT_TRUE(problems_of("%s : f32[] = aten::sum(%x)").empty());
  EXPECT_TRUE(problems_of("%n : float = aten::_local_scalar_dense(%x)").empty());
  EXPECT_TRUE(problems_of("%n : int = aten::_local_scalar_dense(%x)").empty());
  expect_one_problem("%n : f32[] = aten::_local_scalar_dense(%x)",
                     "g.graph:3:3: aten::_local_scalar_dense returns int, float or bool but output %n is declared "
                     "Tensor");
  // A single list return spreads over the outputs.
  EXPECT_TRUE(problems_of("%a : f32[1, 3], %b : f32[1, 3] = aten::split.Tensor(%x, 1, 0)").empty());
}

TEST(SchemaCheck, UnknownOperatorsAndCountsNameTheNode) {
  expect_one_problem("%y : f32[2, 3] = aten::negate(%x)", "g.graph:3:3: unknown operator 'aten::negate'");
  expect_one_problem("%y : f32[2, 3] = aten::relu(%x, 1)", "g.graph:3:3: aten::relu takes 1 arguments but 2 were given");
  expect_one_problem("%y : f32[2, 3] = aten::mm(%x)", "g.graph:3:3: missing argument 'mat2' of aten::mm");
  expect_one_problem("%y : f32[2, 3], %z : f32[2, 3] = aten::relu(%x)",
                     "g.graph:3:3: aten::relu returns 1 value(s) but the node defines 2");
  EXPECT_THROW(check_against_schemas(*ir::parse_graph("graph(\n    arg %x : f32[2]):\n  %y : int = aten::relu(%x)\n"
                                                       "  return (%y)\n"),
                                     "g.graph"),
               std::invalid_argument);
}

TEST(SchemaCheck, EveryTracedDebugModelGraphPasses) {
  // Traced graphs hold every kind the tracer records: backward ops with undefined
  // gradients (None), multi-output and list-returning ops.
  const std::string dir = testing::make_temp_dir();
  for (const std::string model : {"mlp", "dropout_mlp", "llama3"}) {
    const std::string path = dir + "/" + model + ".graph";
    const auto r = testing::run_command(testing::passcheck_binary() + " trace --model " + model + " --out " + path);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::unique_ptr<ir::Graph> graph = ir::parse_graph(io::read_file(path, "graph file"), path);
    EXPECT_EQ(schema_problems(*graph, path), std::vector<std::string>{}) << model;
  }
}

}  // namespace
}  // namespace passcheck::check
