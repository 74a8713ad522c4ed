// Hostile graph files never crash: arguments of the wrong kind and out-of-range enum
// codes are refused before dispatch with file:line:col and the schema's argument name;
// LibTorch's internal asserts reach the user as bad-input messages; allocations are held
// to a memory budget (declared types, size arguments, the allocator, generated inputs).
// docs/graph-format.md, "Limits and validation".
#include "framework/check/verifier.h"
#include "framework/exec/arg_check.h"
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/exec/memory.h"
#include "framework/ir/text.h"
#include "suites/support/test_support.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace passcheck {
namespace {

using testing::run_command;

std::unique_ptr<ir::Graph> parse_hostile_graph(const std::string& text) { return testing::parse_graph_text(text, "g.txt"); }

// The message of the ExecError building an executor for `text` throws ("" when none).
std::string executor_error(const std::string& text, exec::ExecutorOptions options = {}) {
  auto g = parse_hostile_graph(text);
  try {
    exec::Executor executor(*g, options);
  } catch (const exec::ExecError& e) {
    return e.what();
  }
  return "";
}

std::string run_error(const std::string& text, exec::ExecutorOptions options = {}) {
  auto g = parse_hostile_graph(text);
  try {
    exec::Executor executor(*g, options);
    executor.run(exec::make_inputs(*g));
  } catch (const exec::ExecError& e) {
    return e.what();
  }
  return "";
}

std::string graph_of(const std::string& node) {
  return "graph(arg %x : f32[2, 3], arg %t : i64[2], arg %n : int):\n  " + node + "\n  return (%y)\n";
}

#define EXPECT_CONTAINS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

TEST(HostileGraph, OutOfRangeDtypeCodesAreRefusedBeforeDispatchWithTheArgumentName) {
  std::string to_copy = executor_error(graph_of("%y : f32[2, 3] = aten::_to_copy(%x, -1)"));
  EXPECT_CONTAINS(to_copy, "g.txt:2:39: aten::_to_copy argument 'dtype': -1 is not a dtype (valid dtype codes: 0-7, 9-11, 15");
  std::string empty = executor_error(graph_of("%y : f32[2] = aten::empty.memory_format([2], 128)"));
  EXPECT_CONTAINS(empty, "g.txt:2:48: aten::empty.memory_format argument 'dtype': 128 is not a dtype");
  std::string named = executor_error(graph_of("%y : f32[2] = aten::empty.memory_format([2], torch.dtype(232))"));
  EXPECT_CONTAINS(named, "argument 'dtype': 232 is not a dtype");
  // Codes that exist in LibTorch's enum but cannot run here are named as such.
  EXPECT_CONTAINS(executor_error(graph_of("%y : f32[2] = aten::empty.memory_format([2], 12)")),
                  "12 is the quantized dtype QInt8, which graphs cannot hold");
  EXPECT_CONTAINS(executor_error(graph_of("%y : f32[2] = aten::empty.memory_format([2], 8)")),
                  "8 is complex32 (ComplexHalf), which graphs cannot hold");
  // Every dtype a graph type can name passes.
  for (int code : {0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 15})
    EXPECT_EQ(executor_error(graph_of("%y : f32[2] = aten::empty.memory_format([2], " + std::to_string(code) + ")")), "")
        << code;
}

TEST(HostileGraph, LayoutMemoryFormatAndIntCodedEnumsAreChecked) {
  EXPECT_CONTAINS(executor_error(graph_of("%y : f32[2] = aten::empty.memory_format([2], 6, 3)")),
                  "argument 'layout': 3 is the layout Mkldnn, which graphs cannot hold (dense strided tensors only)");
  EXPECT_CONTAINS(executor_error(graph_of("%y : f32[2] = aten::empty.memory_format([2], 6, 99)")),
                  "argument 'layout': 99 is not a layout");
  EXPECT_CONTAINS(executor_error(graph_of("%y : f32[2, 3] = aten::clone(%x, 4)")),
                  "aten::clone argument 'memory_format': 4 is not a memory format (valid memory format codes: 0-3");
  EXPECT_CONTAINS(executor_error(graph_of("%y : f32[] = aten::mse_loss(%x, %x, 7)")),
                  "g.txt:2:39: aten::mse_loss argument 'reduction': 7 is not a reduction (valid reduction codes: 0-2");
  EXPECT_CONTAINS(executor_error(graph_of("%y : f32[] = aten::nll_loss(%x, %t, None, -1, -100)")),
                  "argument 'reduction': -1 is not a reduction");
  EXPECT_EQ(executor_error(graph_of("%y : f32[] = aten::mse_loss(%x, %x, 2)")), "");
}

TEST(HostileGraph, EnumCodesCarriedByValuesAreCheckedBeforeTheNodeRuns) {
  // %n is computed (sym_size of a dimension of 200): only known when the graph runs.
  auto g = parse_hostile_graph(
      "graph(arg %x : f32[200]):\n  %n : int = aten::size.int(%x, 0)\n"
      "  %y : f32[200] = aten::_to_copy(%x, %n)\n  return (%y)\n");
  exec::Executor executor(*g);
  try {
    executor.run({at::randn({200})});
    FAIL() << "expected ExecError";
  } catch (const exec::ExecError& e) {
    std::string msg = e.what();
    EXPECT_CONTAINS(msg, "aten::_to_copy argument 'dtype': 200 is not a dtype");
    EXPECT_CONTAINS(msg, "(g.txt:3:19)");
  }
}

TEST(HostileGraph, ConstantsAndValuesOfTheWrongKindAreRefusedBeforeDispatch) {
  struct Case {
    std::string node, message;
  };
  for (const Case& c : std::vector<Case>{
           {"%y : f32[3] = aten::sum.dim_IntList(%x, 1.5)",
            "g.txt:2:43: aten::sum.dim_IntList argument 'dim': a float where `int[]?` is expected"},
           {"%y : f32[3] = aten::sum.dim_IntList(%x, [%x])", "argument 'dim': element 0 is a Tensor value where `int[]?` is expected"},
           {"%y : f32[2, 3] = aten::transpose.int(%x, 0, 1.5)", "argument 'dim1': a float where `int` is expected"},
           {"%y : f32[2, 3] = aten::transpose.int(%x, %x, 1)", "argument 'dim0': a Tensor value where `int` is expected"},
           {"%y : f32[6] = aten::view(%x, True)", "argument 'size': the bool True where `SymInt[]` is expected"},
           {"%y : f32[6] = aten::view(%x, \"abc\")", "argument 'size': a string where `SymInt[]` is expected"},
           {"%y : f32[2, 3] = aten::gelu(%x, 3)", "argument 'approximate': the int 3 where `str` is expected"},
           {"%y : f32[2, 3] = aten::gelu(%x, None)", "argument 'approximate': None for an argument that cannot be None"},
           {"%y : f32[2, 3] = aten::add.Tensor(%x, %x, \"a\")", "argument 'alpha': a string where `Scalar` is expected"},
           {"%y : f32[4, 3] = aten::cat(None, 0)", "argument 'tensors': None for an argument that cannot be None"},
           {"%y : f32[4, 3] = aten::cat(%x, 0)", "argument 'tensors': a Tensor value where `Tensor[]` is expected"},
           {"%y : f32[4, 3] = aten::cat([%x, %n], 0)", "argument 'tensors': element 1 is an int value where `Tensor[]` is expected"},
           {"%y : f32[2, 3] = aten::mm(%x, None)", "argument 'mat2': None for an argument that cannot be None"},
           {"%y : f32[2, 3] = aten::mm(%x, %n)", "argument 'mat2': an int value where `Tensor` is expected"},
           {"%y : f32[2, 3] = aten::expand(%x, [2, 3], 1)", "argument 'implicit': the int 1 where `bool` is expected"},
           {"%y : f32[2, 3] = aten::relu([1])", "argument 'self': a list where `Tensor` is expected"},
           {"%y : f32[2, 3] = aten::_to_copy(%x, torch.strided)", "argument 'dtype': a layout where `ScalarType?` is expected"},
       }) {
    std::string msg = executor_error(graph_of(c.node));
    EXPECT_CONTAINS(msg, c.message);
    EXPECT_EQ(msg.find("INTERNAL ASSERT"), std::string::npos) << msg;
  }
  // What the executor converts or LibTorch takes stays accepted.
  for (const char* ok : {"%y : f32[2, 3] = aten::mul.Tensor(%x, 2)", "%y : f32[2, 3] = aten::mul.Scalar(%x, %n)",
                                "%y : f32[2, 3] = aten::clamp(%x, None, 1)", "%y : f32[2, 3] = aten::transpose.int(%x, %n, 0)",
                                "%y : f32[2, 3] = aten::leaky_relu(%x, 1)", "%y : f32[3, 2] = aten::view(%x, [3, %n])"})
    EXPECT_EQ(executor_error(graph_of(ok)), "") << ok;
}

TEST(HostileGraph, TheVerifierReportsSchemaProblemsWithTheirLocation) {
  auto g = parse_hostile_graph(graph_of("%y : f32[2, 3] = aten::_to_copy(%x, -1)"));
  std::vector<check::VerifierIssue> issues = check::verify_graph(*g);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_CONTAINS(issues[0].message, "g.txt:2:39: aten::_to_copy argument 'dtype': -1 is not a dtype");
  // A graph built in code (no source text) names the node instead.
  auto built = g->clone();
  built->source_name.clear();
  for (ir::Node* n : built->nodes()) n->source_line = 0;
  issues = check::verify_graph(*built);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_CONTAINS(issues[0].message, "node `%y : f32[2, 3] = aten::_to_copy(%x, -1)`: aten::_to_copy argument 'dtype'");
  // Unknown operators are the executor's to report.
  EXPECT_TRUE(check::verify_graph(*parse_hostile_graph(graph_of("%y : f32[2, 3] = test::frobnicate(%x, -1)"))).empty());
}

TEST(HostileGraph, InternalAssertsOfLibTorchReachTheUserAsBadArguments) {
  // Schema-valid, but index_put with no indices fails a check LibTorch words as an
  // internal assert ("ntensor >= 3 INTERNAL ASSERT FAILED ... please report a bug").
  std::string msg = run_error(graph_of("%y : f32[2, 3] = aten::index_put(%x, [], %x)"));
  EXPECT_CONTAINS(msg, "the operator does not accept these arguments (LibTorch's internal check `ntensor >= 3` failed)");
  EXPECT_CONTAINS(msg, "while running node `%y : f32[2, 3] = aten::index_put(%x, [], %x)` (g.txt:2:20)");
  EXPECT_EQ(msg.find("INTERNAL ASSERT"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("report a bug"), std::string::npos) << msg;
}

TEST(HostileGraph, AViewReachingPastItsStorageIsRefusedBeforeAnythingReadsIt) {
  // Found by suites/hostile/mutate_graphs.py: _reshape_alias takes strides unchecked,
  // and reading the view segfaulted.
  exec::ExecutorOptions options;
  options.check_metadata = false;
  std::string msg = run_error(
      "graph(arg %x : f32[2, 2]):\n  %v : f32[2, 2] = aten::_reshape_alias(%x, [2, 2], [1000000000, 2])\n"
      "  %y : f32[2, 2] = aten::neg(%v)\n  return (%y)\n",
      options);
  EXPECT_CONTAINS(msg, "output %v (sizes [2, 2], strides [1000000000, 2], offset 0) addresses 4000000012 bytes");
  EXPECT_CONTAINS(msg, "of a storage of 16 bytes; the view's sizes and strides do not fit its input");
  EXPECT_CONTAINS(msg, "(g.txt:2:20)");
}

TEST(HostileGraph, DeclaredTypesAndSizeArgumentsOverTheBudgetAreRefusedBeforeAnythingRuns) {
  EXPECT_CONTAINS(executor_error(graph_of("%y : f32[2] = aten::resize_(%x, [1000000000])")),
                  "g.txt:2:35: aten::resize_ argument 'size' [1000000000] asks for 4000000000 bytes (3.73 GiB), over the "
                  "memory budget of 2147483648 bytes (2.00 GiB); raise it with --memory-budget");
  EXPECT_CONTAINS(executor_error(graph_of("%y : f32[2] = aten::empty.memory_format([100000, 100000])")),
                  "argument 'size' [100000, 100000] asks for 40000000000 bytes");
  EXPECT_CONTAINS(executor_error(graph_of("%y : f32[100000, 100000] = aten::neg(%x)")),
                  "g.txt:2:30: %y : f32[100000, 100000] needs 40000000000 bytes (37.25 GiB), over the memory budget");
  // Saturating arithmetic: a size product past INT64_MAX is over any budget, not negative.
  EXPECT_CONTAINS(executor_error(graph_of("%y : f32[2] = aten::empty.memory_format([4611686018427387904, 4])")),
                  "asks for 9223372036854775807 bytes");
  // The declared bytes held at once: the 1.2 GB input and the 1.2 GB %a.
  EXPECT_CONTAINS(executor_error("graph(arg %x : f32[300000000]):\n  %a : f32[300000000] = aten::neg(%x)\n"
                                 "  %b : f32[300000000] = aten::neg(%a)\n  %c : f32[300000000] = aten::add.Tensor(%a, %b)\n"
                                 "  return (%c)\n"),
                  "g.txt:2:25: the values the graph holds up to aten::neg (by their declared types) need 2400000000 bytes");
  // The budget is an option: raised, the same graph is accepted; 0 means none.
  exec::ExecutorOptions raised;
  raised.max_bytes = int64_t{8} << 30;
  EXPECT_EQ(executor_error(graph_of("%y : f32[2] = aten::resize_(%x, [1000000000])"), raised), "");
  exec::ExecutorOptions none;
  none.max_bytes = 0;
  EXPECT_EQ(executor_error(graph_of("%y : f32[100000, 100000] = aten::neg(%x)"), none), "");
}

TEST(HostileGraph, AllocationsTheTypesDoNotDeclareAreHeldToTheBudgetWhileRunning) {
  // The type says f32[2]; arange allocates 80 GB. Refused before any memory is taken.
  exec::ExecutorOptions options;
  options.check_metadata = false;
  std::string msg = run_error(graph_of("%y : f32[2] = aten::arange(10000000000)"), options);
  EXPECT_CONTAINS(msg, "memory budget exceeded: allocating 80000000000 bytes (74.51 GiB) would bring this run over its "
                       "memory budget of 2147483648 bytes (2.00 GiB)");
  EXPECT_CONTAINS(msg, "while running node `%y : f32[2] = aten::arange(10000000000)` (g.txt:2:17)");
  // A small budget refuses a small allocation; scopes restore the outer budget.
  {
    exec::AllocationBudgetScope outer(int64_t{1} << 30);
    {
      exec::AllocationBudgetScope inner(1024);
      EXPECT_THROW(at::empty({1024}), c10::Error);
    }
    EXPECT_NO_THROW(at::empty({1024}));
  }
}

TEST(HostileGraph, GeneratedInputsAreHeldToTheBudget) {
  auto g = parse_hostile_graph("graph(arg %x : f32[30000, 30000]):\n  %y : f32[30000, 30000] = aten::neg(%x)\n  return (%y)\n");
  try {
    exec::make_inputs(*g);
    FAIL() << "expected a budget error";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(std::string(e.what()), "input %x : f32[30000, 30000] needs 3600000000 bytes (3.35 GiB), over the "
                                           "memory budget of 2147483648 bytes (2.00 GiB); raise it with --memory-budget");
  }
  auto many = parse_hostile_graph("graph(arg %a : f32[20000, 20000], arg %b : f32[20000, 20000]):\n  return (%a)\n");
  try {
    exec::make_inputs(*many);
    FAIL() << "expected a budget error";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(std::string(e.what()), "the graph's inputs up to %b need more than the memory budget");
  }
  exec::InputOptions small;
  small.max_bytes = 16;
  EXPECT_THROW(exec::make_inputs(*parse_hostile_graph("graph(arg %x : f32[8]):\n  return (%x)\n"), small), std::invalid_argument);
}

TEST(HostileGraph, StorageExtentSaturatesAndFollowsStrides) {
  EXPECT_EQ(exec::storage_extent_bytes({2, 3}, {3, 1}, 4), 24);
  EXPECT_EQ(exec::storage_extent_bytes({2, 3}, {1, 2}, 4), 24);
  EXPECT_EQ(exec::storage_extent_bytes({4, 3}, {0, 1}, 4), 12);  // expanded
  EXPECT_EQ(exec::storage_extent_bytes({0, 1000000000}, {1000000000, 1}, 4), 0);
  EXPECT_EQ(exec::storage_extent_bytes({}, {}, 8), 8);
  EXPECT_EQ(exec::storage_extent_bytes({int64_t{1} << 62, 4}, {4, 1}, 4), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(exec::storage_extent_bytes({2}, {-1}, 4), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(exec::format_bytes(1000), "1000 bytes");
  EXPECT_EQ(exec::format_bytes(int64_t{3} << 30), "3221225472 bytes (3.00 GiB)");
}

// ---- the command line -------------------------------------------------------------

using testing::cli;

TEST(HostileGraphCli, TheTwoDtypeReproducersExitTwoWithFileLineColumnAndArgument) {
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/to_copy.txt",
                      "graph(arg %x : f32[2]):\n  %y : f32[2] = aten::_to_copy(%x, -1, None, None, None, False, None)\n"
                      "  return (%y)\n");
  testing::write_text(dir + "/empty.txt",
                      "graph(arg %x : f32[2]):\n  %y : f32[2] = aten::empty.memory_format([2], 128, None, None, None, None)\n"
                      "  return (%y)\n");
  auto to_copy = run_command(cli("run " + dir + "/to_copy.txt"));
  EXPECT_EQ(to_copy.exit_code, 2) << to_copy.output;
  EXPECT_CONTAINS(to_copy.output, dir + "/to_copy.txt:2:36: aten::_to_copy argument 'dtype': -1 is not a dtype (valid");
  auto empty = run_command(cli("run " + dir + "/empty.txt"));
  EXPECT_EQ(empty.exit_code, 2) << empty.output;
  EXPECT_CONTAINS(empty.output, dir + "/empty.txt:2:48: aten::empty.memory_format argument 'dtype': 128 is not a dtype");
  // opt and equiv read graph files the same way.
  auto opt = run_command(cli("opt " + dir + "/empty.txt --pipeline dce"));
  EXPECT_EQ(opt.exit_code, 2) << opt.output;
  EXPECT_CONTAINS(opt.output, "128 is not a dtype");
}

TEST(HostileGraphCli, MemoryBudgetIsAnOptionOfRunAndEquiv) {
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/resize.txt",
                      "graph(arg %x : f32[2]):\n  %y : f32[2] = aten::resize_(%x, [1000000000])\n  return (%y)\n");
  testing::write_text(dir + "/big.txt",
                      "graph(arg %x : f32[30000, 30000]):\n  %y : f32[30000, 30000] = aten::neg(%x)\n  return (%y)\n");
  testing::write_text(dir + "/small.txt", "graph(arg %x : f32[1024]):\n  %y : f32[1024] = aten::neg(%x)\n  return (%y)\n");
  auto resize = run_command(cli("run " + dir + "/resize.txt"));
  EXPECT_EQ(resize.exit_code, 2) << resize.output;
  EXPECT_CONTAINS(resize.output, "resize.txt:2:35: aten::resize_ argument 'size' [1000000000] asks for 4000000000 bytes");
  auto big = run_command(cli("run " + dir + "/big.txt"));
  EXPECT_EQ(big.exit_code, 2) << big.output;
  EXPECT_CONTAINS(big.output, "graph input %x : f32[30000, 30000] needs 3600000000 bytes (3.35 GiB), over the memory budget");
  auto tight = run_command(cli("run " + dir + "/small.txt --memory-budget 1KiB"));
  EXPECT_EQ(tight.exit_code, 2) << tight.output;
  EXPECT_CONTAINS(tight.output, "over the memory budget of 1024 bytes");
  EXPECT_EQ(run_command(cli("run " + dir + "/small.txt --memory-budget 1MiB")).exit_code, 0);
  auto equiv = run_command(cli("equiv " + dir + "/small.txt " + dir + "/small.txt --memory-budget 1KiB"));
  EXPECT_EQ(equiv.exit_code, 2) << equiv.output;
  EXPECT_CONTAINS(equiv.output, "over the memory budget of 1024 bytes");
}

}  // namespace
}  // namespace passcheck
