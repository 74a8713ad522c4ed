// The cudagraph pass family: the capturability predicate on graph text (one case per
// guard and the capturable kinds), split_into_segments against the graph it splits (bit
// for bit under exec::ModuleExecutor), and the pass itself: the acceptance case (an item
// in the middle gives two captured segments around an eager island, bitwise equal over 5
// calls with fresh arguments and parameters updated in place), the static sets of a
// forward/backward module, whole-part wrapping and idempotence.
#include "passes/cudagraph/cudagraph_passes.h"

#include "framework/check/compare.h"
#include "framework/check/verifier.h"
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/exec/module_executor.h"
#include "framework/ir/text.h"
#include "passes/partition/partition_passes.h"
#include "suites/unit/partition_test_support.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <unordered_set>
#include <vector>

namespace passcheck {
namespace {

using passes::CaptureContext;
using passes::why_not_capturable;
using Backend = ir::CaptureSpec::Backend;

// The verdict on the node defining %name, with `copied` the names of the copied inputs.
std::string verdict(const std::string& text, const std::string& name, Backend backend = Backend::Cuda,
                    const std::vector<std::string>& copied = {}) {
  auto g = ir::parse_graph(text, "case");
  std::unordered_set<const ir::Value*> copied_values;
  for (const std::string& c : copied) copied_values.insert(g->find_value(c));
  const CaptureContext ctx = CaptureContext::of(*g, backend, copied_values);
  const ir::Value* v = g->find_value(name);
  if (!v || !v->producer()) throw std::runtime_error("no node defines %" + name);
  const char* why = why_not_capturable(*v->producer(), ctx);
  return why ? why : "capturable";
}

TEST(CudagraphCapturable, ItemAndEveryScalarComputedFromItAreDataDependent) {
  const char* g = R"(graph(arg %x : f32[4]@cuda):
  %sum : f32[]@cuda = aten::sum(%x, None)
  %item : float = aten::_local_scalar_dense(%sum)
  %mul : f32[4]@cuda = aten::mul.Scalar(%x, %item)
  %nz : bool = aten::is_nonzero(%sum)
  %eq : bool = aten::equal(%x, %x)
  %add : f32[4]@cuda = aten::add.Tensor(%x, %x, 1)
  return (%mul, %nz, %eq, %add))";
  EXPECT_EQ(verdict(g, "item"), "data-dependent-scalar");
  EXPECT_EQ(verdict(g, "mul"), "data-dependent-scalar");
  EXPECT_EQ(verdict(g, "nz"), "data-dependent-scalar");
  EXPECT_EQ(verdict(g, "eq"), "data-dependent-scalar");
  EXPECT_EQ(verdict(g, "add"), "capturable");
  EXPECT_EQ(verdict(g, "sum"), "capturable");
}

TEST(CudagraphCapturable, DataDependentScalarsPropagateThroughScalarNodes) {
  // The dispatcher knows no scalar arithmetic operator (the parser refuses aten::mul.float),
  // so the chain here goes through a tensor: the node making a tensor of the item is
  // refused, its tensor output holds data and is not tainted, and the item read back from
  // it is a new source.
  auto g = ir::parse_graph(R"(graph(arg %x : f32[4]@cuda):
  %sum : f32[]@cuda = aten::sum(%x, None)
  %item : float = aten::_local_scalar_dense(%sum)
  %t : f32[]@cuda = aten::scalar_tensor(%item, None, None, device("cuda:0"), None)
  %item_1 : float = aten::_local_scalar_dense(%t)
  %mul : f32[4]@cuda = aten::mul.Scalar(%x, %item_1)
  return (%mul))",
                           "case");
  const CaptureContext ctx = CaptureContext::of(*g, Backend::Cuda, {});
  EXPECT_TRUE(ctx.data_dependent.count(g->find_value("item")));
  EXPECT_FALSE(ctx.data_dependent.count(g->find_value("t")));  // a tensor holds data, not a launch argument
  EXPECT_STREQ(why_not_capturable(*g->find_value("t")->producer(), ctx), "data-dependent-scalar");
  EXPECT_STREQ(why_not_capturable(*g->find_value("mul")->producer(), ctx), "data-dependent-scalar");
}

TEST(CudagraphCapturable, DataDependentShape) {
  const char* g = R"(graph(arg %x : f32[4]@cuda):
  %nonzero : i64[2, 1]@cuda = aten::nonzero(%x)
  return (%nonzero))";
  EXPECT_EQ(verdict(g, "nonzero"), "data-dependent-shape");
}

TEST(CudagraphCapturable, UnpinnedHostDeviceCopiesAreRefusedPinnedOnesAndDeviceCopiesAreNot) {
  const char* g = R"(graph(arg %h : f32[4], arg %d : f32[4]@cuda):
  %up : f32[4]@cuda = aten::_to_copy(%h, None, None, device("cuda:0"), None, False, None)
  %pinned : f32[4]@cuda = aten::_to_copy(%h, None, None, device("cuda:0"), True, True, None)
  %down : f32[4] = aten::_to_copy(%d, None, None, device("cpu"), None, False, None)
  %same : f64[4]@cuda = aten::_to_copy(%d, torch.float64, None, None, None, False, None)
  return (%up, %pinned, %down, %same))";
  EXPECT_EQ(verdict(g, "up"), "host-device-copy");
  EXPECT_EQ(verdict(g, "down"), "host-device-copy");
  EXPECT_EQ(verdict(g, "pinned"), "capturable");
  EXPECT_EQ(verdict(g, "same"), "capturable");
}

TEST(CudagraphCapturable, HostOnlyOpsAreRefusedOnCudaAndCapturableOnTheirOwnDeviceUnderReplay) {
  const char* g = R"(graph(arg %h : f32[4], arg %d : f32[4]@cuda):
  %relu : f32[4] = aten::relu(%h)
  %relu_1 : f32[4]@cuda = aten::relu(%d)
  return (%relu, %relu_1))";
  EXPECT_EQ(verdict(g, "relu"), "host-only-op");
  EXPECT_EQ(verdict(g, "relu_1"), "capturable");
  // backend=replay captures on the device of the part's tensors (here the first input's: cpu).
  EXPECT_EQ(verdict(g, "relu", Backend::Replay), "capturable");
  EXPECT_EQ(verdict(g, "relu_1", Backend::Replay), "host-only-op");
}

TEST(CudagraphCapturable, SymbolicSizes) {
  const char* g = R"(symbol s0 in [2, 8] hint 4
graph(arg %x : f32[sym(s0), 4]@cuda, arg %y : f32[4, 4]@cuda):
  %relu : f32[sym(s0), 4]@cuda = aten::relu(%x)
  %relu_1 : f32[4, 4]@cuda = aten::relu(%y)
  %view : f32[sym(4*s0)]@cuda = aten::view(%relu, [sym(4*s0)])
  return (%view, %relu_1))";
  EXPECT_EQ(verdict(g, "relu"), "symbolic-size");
  EXPECT_EQ(verdict(g, "view"), "symbolic-size");
  EXPECT_EQ(verdict(g, "relu_1"), "capturable");
}

TEST(CudagraphCapturable, WritesIntoCopiedInputsAndTheirViewsAreRefused) {
  const char* g = R"(graph(param %w : f32[8]@cuda, arg %x : f32[8]@cuda, arg %y : f32[8]@cuda):
  %add_ : f32[8]@cuda = aten::add_.Tensor(%x, %y, 1)
  %view : f32[2, 4]@cuda = aten::view(%y, [2, 4])
  %mul_ : f32[2, 4]@cuda = aten::mul_.Scalar(%view, 2)
  %sub_ : f32[8]@cuda = aten::sub_.Tensor(%w, %x, 1)
  return (%add_, %mul_, %sub_))";
  EXPECT_EQ(verdict(g, "add_", Backend::Cuda, {"x", "y"}), "mutates-copied-input");
  EXPECT_EQ(verdict(g, "mul_", Backend::Cuda, {"x", "y"}), "mutates-copied-input");
  // %w is static (module state): the write lands in the caller's tensor.
  EXPECT_EQ(verdict(g, "sub_", Backend::Cuda, {"x", "y"}), "capturable");
  // Reading a copied input is fine; so is writing one that is static.
  EXPECT_EQ(verdict(g, "add_", Backend::Cuda, {"y"}), "capturable");
}

TEST(CudagraphCapturable, ViewsMatmulsCollectivesAndRandomOpsAreCapturable) {
  const char* g = R"(mesh dp=2 rank 0
graph(param %w : f32[4, 4]@cuda, arg %x : f32[2, 4]@cuda):
  %mm : f32[2, 4]@cuda = aten::mm(%x, %w)
  %t : f32[4, 2]{1, 4}@cuda = aten::t(%mm)
  %ag : f32[4, 4]@cuda = _c10d_functional::all_gather_into_tensor(%w, 2, "dp")
  %wait : f32[4, 4]@cuda = _c10d_functional::wait_tensor(%ag)
  %rand : f32[2, 4]@cuda = aten::rand_like(%mm, None, None, None, None, None)
  %drop : f32[2, 4]@cuda = aten::bernoulli.p(%mm, 0.5, None)
  return (%t, %wait, %rand, %drop))";
  for (const char* name : {"mm", "t", "ag", "wait", "rand", "drop"}) EXPECT_EQ(verdict(g, name), "capturable") << name;
  auto graph = ir::parse_graph(g, "case");
  EXPECT_TRUE(passes::launches_work(*graph->find_value("mm")->producer()));
  EXPECT_FALSE(passes::launches_work(*graph->find_value("t")->producer()));
}

// ---- segments -----------------------------------------------------------------------

void expect_bitwise(const std::vector<c10::IValue>& expected, const std::vector<c10::IValue>& actual,
                    const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!expected[i].isTensor()) {
      EXPECT_EQ(expected[i], actual[i]) << what << " output " << i;
      continue;
    }
    check::TensorComparison c = check::compare_bitwise(what + " output " + std::to_string(i), expected[i].toTensor(),
                                                       actual[i].toTensor());
    EXPECT_TRUE(c.equal) << c.describe();
  }
}

void expect_module_runs_like_graph(const ir::Graph& graph, const ir::Module& module, const std::string& what) {
  const std::vector<check::VerifierIssue> issues = check::verify_module(module);
  EXPECT_TRUE(issues.empty()) << what << ": " << (issues.empty() ? "" : issues.front().message) << "\n"
                              << module.print();
  const std::vector<c10::IValue> inputs = exec::make_inputs(graph);
  exec::Executor graph_exec(graph);
  at::manual_seed(7);
  const std::vector<c10::IValue> expected = graph_exec.run(inputs);
  exec::ModuleExecutor module_exec(module);
  at::manual_seed(7);
  expect_bitwise(expected, module_exec.run(inputs), what);
}

constexpr const char* kFourStages = R"(graph(param %w : f32[4, 4], arg %x : f32[2, 4], arg %y : f32[2, 4]):
  %mm : f32[2, 4] = aten::mm(%x, %w)
  %relu : f32[2, 4] = aten::relu(%mm)
  %add : f32[2, 4] = aten::add.Tensor(%relu, %mm, 1)
  %mul : f32[2, 4] = aten::mul.Tensor(%add, %mm)
  %mm_1 : f32[2, 4] = aten::mm(%mul, %w)
  %sub : f32[2, 4] = aten::sub.Tensor(%mm_1, %relu, 1)
  return (%sub, %y, %mm, %x))";

TEST(CudagraphSegments, EverySplitOfAGraphRunsLikeTheGraph) {
  auto g = ir::parse_graph(kFourStages, "four-stages");
  // %mm is read by every later segment; %y and %x are returned unchanged.
  const std::vector<std::vector<size_t>> splits = {
      {0, 0, 0, 0, 0, 0}, {0, 1, 2, 3, 4, 5}, {0, 0, 1, 1, 2, 2}, {0, 1, 1, 1, 1, 2}};
  for (const auto& split : splits) {
    const size_t n = split.back() + 1;
    std::vector<bool> captured(n);
    for (size_t k = 0; k < n; ++k) captured[k] = k % 2 == 0;
    ir::Module m = passes::split_into_segments(*g, split, captured, "joint");
    ASSERT_EQ(m.parts.size(), n);
    EXPECT_EQ(m.parts[0].name, "joint_graph0");
    if (n > 1) EXPECT_EQ(m.parts[1].name, "joint_eager1");
    expect_module_runs_like_graph(*g, m, "split into " + std::to_string(n));
  }
}

TEST(CudagraphSegments, ValuesReadBySeveralLaterSegmentsAreOneOutputLinkedToEach) {
  auto g = ir::parse_graph(kFourStages, "four-stages");
  ir::Module m = passes::split_into_segments(*g, {0, 1, 1, 2, 3, 3}, {true, false, true, false}, "fwd");
  // Part 0 returns %mm once (read by parts 1, 2 and 3 and by the module) and passes the
  // returned inputs %y, %x through.
  const ir::Graph& first = *m.parts[0].graph;
  std::vector<std::string> names;
  for (const ir::Value* v : first.outputs()) names.push_back(v->name());
  EXPECT_EQ(names, (std::vector<std::string>{"x", "y", "mm"}));
  EXPECT_EQ(m.parts[3].name, "fwd_eager3");
  expect_module_runs_like_graph(*g, m, "several readers");
}

TEST(CudagraphSegments, RefusesAssignmentsThatAreNotConsecutive) {
  auto g = ir::parse_graph(kFourStages, "four-stages");
  EXPECT_THROW(passes::split_into_segments(*g, {0, 1, 0, 1, 1, 1}, {true, false}, "p"), std::invalid_argument);
  EXPECT_THROW(passes::split_into_segments(*g, {0, 2, 2, 2, 2, 2}, {true, false, true}, "p"), std::invalid_argument);
  EXPECT_THROW(passes::split_into_segments(*g, {0, 0, 0, 0, 0}, {true}, "p"), std::invalid_argument);
  EXPECT_THROW(passes::split_into_segments(*g, {0, 0, 0, 0, 0, 0}, {true, false}, "p"), std::invalid_argument);
}

// ---- the pass -------------------------------------------------------------------------

check::PassResult run_cudagraph(ir::Module& module, std::map<std::string, std::string> options = {},
                                check::InjectedFaults faults = {}) {
  const auto& pass = check::PassRegistry::global().get("cudagraph");
  EXPECT_TRUE(pass.is_module_pass());
  return pass.run_module(module, check::PassOptions(pass.info, options).with_faults(std::move(faults)));
}

constexpr const char* kItemInTheMiddle = R"(graph(param %w : f32[8, 8], arg %x : f32[4, 8]):
  %mm : f32[4, 8] = aten::mm(%x, %w)
  %sum : f32[] = aten::sum(%mm, None)
  %item : float = aten::_local_scalar_dense(%sum)
  %mul : f32[4, 8] = aten::mul.Scalar(%mm, %item)
  %mm_1 : f32[4, 8] = aten::mm(%mul, %w)
  %relu : f32[4, 8] = aten::relu(%mm_1)
  return (%relu, %sum))";

TEST(CudagraphPass, ItemInTheMiddleGivesTwoCapturedSegmentsAroundAnEagerIslandBitwiseOverFiveCalls) {
  auto g = ir::parse_graph(kItemInTheMiddle, "item-in-the-middle");
  ir::Module m = ir::Module::of_graph(g->clone());
  const check::PassResult r = run_cudagraph(m);
  ASSERT_TRUE(r.changed);
  ASSERT_EQ(m.parts.size(), 3u) << m.print();
  EXPECT_EQ(m.parts[0].name, "joint_graph0");
  EXPECT_EQ(m.parts[1].name, "joint_eager1");
  EXPECT_EQ(m.parts[2].name, "joint_graph2");
  ASSERT_TRUE(m.parts[0].capture && m.parts[2].capture);
  EXPECT_FALSE(m.parts[1].capture);
  EXPECT_EQ(m.parts[1].graph->num_nodes(), 2u);  // the item and the mul that reads it
  // graph0 (w, x): w static. graph2 (mul from the eager island, w): w static.
  EXPECT_EQ(m.parts[0].capture->static_inputs, std::vector<size_t>{0});
  EXPECT_EQ(m.parts[2].graph->inputs()[1]->name(), "mul");
  EXPECT_EQ(m.parts[2].capture->static_inputs, std::vector<size_t>{0});
  EXPECT_EQ(r.stats.at("captured_parts"), 2);
  EXPECT_EQ(r.stats.at("eager_parts"), 1);
  EXPECT_EQ(r.stats.at("static_inputs"), 2);
  EXPECT_EQ(r.stats.at("copied_inputs"), 2);
  EXPECT_EQ(r.rules_fired.at("split-at-uncapturable"), 1);
  EXPECT_EQ(r.guards_refused.at("data-dependent-scalar"), 2);
  EXPECT_TRUE(check::verify_module(m).empty());

  exec::Executor graph_exec(*g);
  exec::ModuleExecutor module_exec(m);
  at::Tensor w = at::randn({8, 8});
  for (int call = 0; call < 5; ++call) {
    // Fresh argument tensors with new values; the parameter updated in place.
    at::Tensor x = at::randn({4, 8});
    {
      at::NoGradGuard no_grad;
      w.add_(at::randn({8, 8}), 0.25);
    }
    const std::vector<c10::IValue> expected = graph_exec.run({w, x});
    const std::vector<c10::IValue> actual = module_exec.run({w, x});
    expect_bitwise(expected, actual, "call " + std::to_string(call + 1));
    ASSERT_FALSE(::testing::Test::HasFailure()) << "call " << call + 1;
  }
  // Calls 3..5 replayed both captured segments.
  ASSERT_EQ(module_exec.last_stats().captured.size(), 2u);
  for (const auto& c : module_exec.last_stats().captured) EXPECT_EQ(c.call.phase, exec::CaptureCall::Phase::Replay);
  // A second run changes nothing.
  EXPECT_FALSE(run_cudagraph(m).changed);
}

// passcheck::grouped_mm reads its offsets on the host inside its kernel, which a
// capturing stream refuses: it becomes an eager island between two captured segments,
// and the split module runs like the graph whatever the group sizes of each call.
TEST(CudagraphPass, AGroupedMmIsAnEagerIslandBetweenTwoCapturedSegments) {
  auto g = ir::parse_graph(R"(graph(param %w : f32[3, 8, 4], arg %x : f32[6, 8], arg %offsets : i64[3]):
  %relu : f32[6, 8] = aten::relu(%x)
  %gmm : f32[6, 4] = passcheck::grouped_mm(%relu, %w, %offsets)
  %mul : f32[6, 4] = aten::mul.Tensor(%gmm, %gmm)
  return (%mul))",
                           "grouped-mm-in-the-middle");
  ir::Module m = ir::Module::of_graph(g->clone());
  const check::PassResult r = run_cudagraph(m);
  ASSERT_TRUE(r.changed);
  ASSERT_EQ(m.parts.size(), 3u) << m.print();
  ASSERT_TRUE(m.parts[0].capture && m.parts[2].capture);
  EXPECT_FALSE(m.parts[1].capture);
  ASSERT_EQ(m.parts[1].graph->num_nodes(), 1u);
  EXPECT_EQ((*m.parts[1].graph->nodes().begin())->op(), "passcheck::grouped_mm");
  EXPECT_EQ(r.guards_refused.at("data-dependent-scalar"), 1);
  EXPECT_TRUE(check::verify_module(m).empty());

  exec::Executor graph_exec(*g);
  exec::ModuleExecutor module_exec(m);
  at::Tensor w = at::randn({3, 8, 4});
  const std::vector<std::vector<int64_t>> group_ends = {{2, 4, 6}, {0, 6, 6}, {1, 1, 3}, {6, 6, 6}, {0, 0, 0}};
  for (size_t call = 0; call < group_ends.size(); ++call) {
    const std::vector<c10::IValue> args = {w, at::randn({6, 8}), at::tensor(group_ends[call], at::kLong)};
    expect_bitwise(graph_exec.run(args), module_exec.run(args), "call " + std::to_string(call + 1));
  }
  ASSERT_EQ(module_exec.last_stats().captured.size(), 2u);
  for (const auto& c : module_exec.last_stats().captured) EXPECT_EQ(c.call.phase, exec::CaptureCall::Phase::Replay);
}

TEST(CudagraphPass, AReturnedArgumentGoesThroughTheFirstCapturedSegmentAndStaysEqual) {
  // The graph returns its argument %x and reads %mm in every later segment.
  auto g = ir::parse_graph(R"(graph(param %w : f32[8, 8], arg %x : f32[4, 8]):
  %mm : f32[4, 8] = aten::mm(%x, %w)
  %sum : f32[] = aten::sum(%mm, None)
  %item : float = aten::_local_scalar_dense(%sum)
  %mul : f32[4, 8] = aten::mul.Scalar(%mm, %item)
  %add : f32[4, 8] = aten::add.Tensor(%mul, %mm, 1)
  %nz : bool = aten::is_nonzero(%sum)
  %mm_1 : f32[4, 8] = aten::mm(%add, %w)
  %sub : f32[4, 8] = aten::sub.Tensor(%mm_1, %mm, 1)
  return (%sub, %x, %nz))",
                           "returned-argument");
  ir::Module m = ir::Module::of_graph(g->clone());
  run_cudagraph(m);
  ASSERT_EQ(m.parts.size(), 5u) << m.print();
  ASSERT_TRUE(m.parts[0].capture && m.parts[2].capture && m.parts[4].capture) << m.print();
  EXPECT_EQ(m.outputs[1].part, 0u);  // %x comes back through joint_graph0
  EXPECT_TRUE(check::verify_module(m).empty());
  exec::Executor graph_exec(*g);
  exec::ModuleExecutor module_exec(m);
  at::Tensor w = at::randn({8, 8});
  for (int call = 0; call < 5; ++call) {
    const std::vector<c10::IValue> inputs = {w, at::randn({4, 8})};
    expect_bitwise(graph_exec.run(inputs), module_exec.run(inputs), "call " + std::to_string(call + 1));
  }
}

TEST(CudagraphPass, ABoolArgumentKeepsItsReaderEagerBecauseTheWrapperTakesNoBools) {
  auto g = ir::parse_graph(R"(graph(param %w : f32[8, 8], arg %x : f32[4, 8], arg %train : bool):
  %mm : f32[4, 8] = aten::mm(%x, %w)
  %nd : f32[4, 8], %mask : b8[4, 8] = aten::native_dropout(%mm, 0.5, %train)
  %mm_1 : f32[4, 8] = aten::mm(%nd, %w)
  return (%mm_1, %mask))",
                           "bool-argument");
  ir::Module m = ir::Module::of_graph(g->clone());
  const check::PassResult r = run_cudagraph(m);
  ASSERT_EQ(m.parts.size(), 3u) << m.print();
  EXPECT_FALSE(m.parts[1].capture);
  EXPECT_EQ(r.guards_refused.at("unsupported-input-kind"), 1);
  exec::Executor graph_exec(*g);
  exec::ModuleExecutor module_exec(m);
  at::Tensor w = at::randn({8, 8});
  for (int call = 0; call < 4; ++call) {
    const std::vector<c10::IValue> inputs = {w, at::randn({4, 8}), c10::IValue(true)};
    at::manual_seed(100 + call);
    const std::vector<c10::IValue> expected = graph_exec.run(inputs);
    at::manual_seed(100 + call);
    expect_bitwise(expected, module_exec.run(inputs), "call " + std::to_string(call + 1));
  }
}

TEST(CudagraphPass, AnAllCapturablePartIsWrappedWholeInPlace) {
  auto g = ir::parse_graph(testing::kReluMlp, "relu-mlp");
  ir::Module m = ir::Module::of_graph(g->clone());
  const check::PassResult r = run_cudagraph(m, {{"check-static-addresses", "false"}});
  ASSERT_TRUE(r.changed);
  ASSERT_EQ(m.parts.size(), 1u);
  EXPECT_EQ(m.parts[0].name, "joint");
  ASSERT_TRUE(m.parts[0].capture);
  EXPECT_EQ(m.parts[0].capture->static_inputs, std::vector<size_t>{0});  // %w; %x copied
  EXPECT_FALSE(m.parts[0].capture->check_static_addresses);
  EXPECT_EQ(r.rules_fired.at("wrap-part"), 1);
  EXPECT_FALSE(run_cudagraph(m).changed);
}

TEST(CudagraphPass, ForwardBackwardStaticSetsAfterMinCut) {
  auto g = ir::parse_graph(testing::kReluMlp, "relu-mlp");
  ir::Module m = ir::Module::of_graph(g->clone());
  const auto& min_cut = check::PassRegistry::global().get("partition-min-cut");
  min_cut.run_module(m, check::PassOptions(min_cut.info, {}));
  ASSERT_EQ(m.parts.size(), 2u);
  run_cudagraph(m);
  ASSERT_TRUE(m.parts[0].capture && m.parts[1].capture) << m.print();
  for (size_t p = 0; p < 2; ++p) {
    const ir::ModulePart& part = m.parts[p];
    for (size_t i = 0; i < part.graph->inputs().size(); ++i) {
      const ir::Value* in = part.graph->inputs()[i];
      const bool is_static = std::count(part.capture->static_inputs.begin(), part.capture->static_inputs.end(), i) > 0;
      // Saved values from the captured forward and the parameter: static; the argument: copied.
      const bool want_static = part.input_sources[i].has_value() || in->role() == ir::InputRole::Parameter;
      EXPECT_EQ(is_static, want_static) << part.name << " input %" << in->name();
    }
  }
  EXPECT_GE(m.parts[1].capture->static_inputs.size(), 2u);
  // And the captured module still runs like the joint graph over several calls.
  exec::Executor joint_exec(*g);
  exec::ModuleExecutor module_exec(m);
  const std::vector<c10::IValue> base = exec::make_inputs(*g);
  for (int call = 0; call < 4; ++call) {
    std::vector<c10::IValue> inputs = {base[0], at::randn({8, 64})};
    expect_bitwise(joint_exec.run(inputs), module_exec.run(inputs), "call " + std::to_string(call + 1));
  }
}

// Runs `module` against `graph` for 3 calls with a fresh argument each call; returns
// whether some call's first result differed (a ReplayHazard propagates).
bool any_call_differs(const ir::Graph& graph, const ir::Module& module) {
  exec::Executor joint_exec(graph);
  exec::ModuleExecutor module_exec(module);
  const std::vector<c10::IValue> base = exec::make_inputs(graph);
  bool differed = false;
  for (int call = 0; call < 3; ++call) {
    std::vector<c10::IValue> inputs = {base[0], at::randn({8, 64})};
    const at::Tensor expected = joint_exec.run(inputs)[0].toTensor();
    differed = differed || !expected.equal(module_exec.run(inputs)[0].toTensor());
  }
  return differed;
}

TEST(CudagraphPass, ADisabledAddressGuardMarksArgumentsStaticWhichOnlyTheAddressCheckCatches) {
  // Historical bug 11's pass side: with input-changes-address disabled the argument is
  // marked static. The wrapper's address check refuses the replay; without the check
  // (bug 11's other half, injected) the replay silently reads the capture's argument.
  auto g = ir::parse_graph(testing::kReluMlp, "relu-mlp");
  check::InjectedFaults faults;
  faults.disabled_guards = {"input-changes-address"};
  ir::Module checked = ir::Module::of_graph(g->clone());
  const check::PassResult r = run_cudagraph(checked, {}, faults);
  ASSERT_TRUE(checked.parts[0].capture);
  EXPECT_EQ(checked.parts[0].capture->static_inputs, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(r.guards_refused.at("input-changes-address"), 1);
  EXPECT_THROW(any_call_differs(*g, checked), exec::ReplayHazard);

  faults.injected_bugs = {exec::injected_wrapper_bugs::kUncheckedStaticAddresses};
  ir::Module unchecked = ir::Module::of_graph(g->clone());
  run_cudagraph(unchecked, {}, faults);
  EXPECT_EQ(unchecked.parts[0].capture->injected_bugs,
            std::vector<std::string>{exec::injected_wrapper_bugs::kUncheckedStaticAddresses});
  EXPECT_TRUE(any_call_differs(*g, unchecked));

  // The real pass copies the argument: every call equal.
  ir::Module real = ir::Module::of_graph(g->clone());
  run_cudagraph(real);
  EXPECT_FALSE(any_call_differs(*g, real));
}

TEST(CudagraphPass, DeclaresTheWrapperBugsAsInjectable) {
  const auto& info = check::PassRegistry::global().get("cudagraph").info;
  std::vector<std::string> names;
  for (const auto& b : info.injectable_bugs) names.push_back(b.name);
  // The wrapper's bugs, then the predicate's own.
  std::vector<std::string> expected = exec::injected_wrapper_bugs::all();
  expected.push_back("grouped-mm-always-capturable");
  expected.push_back("captures-dynamic-shape-consumers");
  EXPECT_EQ(names, expected);
  EXPECT_TRUE(info.idempotent);
  EXPECT_EQ(info.numerics, check::NumericsEffect::Preserves);
}

TEST(CudagraphPass, AnUncapturablePartStaysEagerAndUnchanged) {
  auto g = ir::parse_graph(R"(graph(arg %x : f32[4]):
  %sum : f32[] = aten::sum(%x, None)
  %item : float = aten::_local_scalar_dense(%sum)
  %view : f32[2, 2] = aten::view(%x, [2, 2])
  return (%item, %view))",
                           "views-and-item");
  ir::Module m = ir::Module::of_graph(g->clone());
  const check::PassResult r = run_cudagraph(m);
  // sum launches work, so it is captured; the view after the item launches nothing.
  ASSERT_EQ(m.parts.size(), 2u) << m.print();
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.guards_refused.at("nothing-to-launch"), 1);
  ir::Module only_views = ir::Module::of_graph(ir::parse_graph(R"(graph(arg %x : f32[4]):
  %view : f32[2, 2] = aten::view(%x, [2, 2])
  return (%view))",
                                                               "views"));
  const std::string views_before = only_views.print();
  EXPECT_FALSE(run_cudagraph(only_views).changed);
  EXPECT_EQ(only_views.print(), views_before);
}

}  // namespace
}  // namespace passcheck
