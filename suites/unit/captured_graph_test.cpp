// The CUDA-graph wrapper on its CPU replay backend (framework/exec/captured_graph.h): the
// seed's call sequence (warm-up, capture, replays that copy only what is not static), the
// memory identity a replay has on a GPU (stale reads of inputs not copied or moved, outputs
// overwritten by the next replay), the hazards it refuses with the input and addresses
// named, the injected historical bugs 11 and 15, teardown, and the capture line of module
// text.
#include "framework/check/verifier.h"
#include "framework/exec/captured_graph.h"
#include "framework/exec/module_executor.h"
#include "framework/ir/module.h"
#include "framework/ir/text.h"
#include "suites/mutants/cudagraph_mutants.h"

#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace passcheck {
namespace {

using ::testing::HasSubstr;

const char* const kLinear = mutants::kLinearStepGraph;

struct Wrapped {
  std::unique_ptr<ir::Graph> graph;
  std::unique_ptr<exec::Executor> executor;
  std::shared_ptr<exec::CapturePool> pool;
  std::unique_ptr<exec::CapturedGraph> wrapper;
};

Wrapped wrap(const char* text, std::vector<size_t> static_inputs, std::vector<std::string> bugs = {},
             bool check_addresses = true) {
  Wrapped w;
  w.graph = ir::parse_graph(text, "<test>");
  w.executor = std::make_unique<exec::Executor>(*w.graph, exec::ExecutorOptions{true});
  w.pool = std::make_shared<exec::CapturePool>(ir::CaptureSpec::Backend::Replay);
  ir::CaptureSpec spec;
  spec.static_inputs = std::move(static_inputs);
  spec.injected_bugs = std::move(bugs);
  spec.check_static_addresses = check_addresses;
  w.wrapper = std::make_unique<exec::CapturedGraph>("linear", *w.executor, *w.graph, spec, w.pool);
  return w;
}

at::Tensor expected_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  return at::add(at::mm(x, w), b);
}

bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() && at::equal(a, b);
}

class CapturedGraphTest : public ::testing::Test {
 protected:
  void SetUp() override { at::manual_seed(7); }
  at::Tensor w = at::randn({3, 3}), b = at::randn({3});
  at::Tensor batch(int k) { return at::randn({2, 3}) + k; }
};

TEST_F(CapturedGraphTest, WarmsUpCapturesThenReplaysCopyingOnlyTheArgument) {
  Wrapped g = wrap(kLinear, {0, 2});
  for (int call = 1; call <= 5; ++call) {
    at::Tensor x = batch(call);
    auto out = (*g.wrapper)({w, x, b});
    EXPECT_TRUE(same_bits(out.at(0).toTensor(), expected_linear(x, w, b))) << "call " << call;
    const exec::CaptureCall& c = g.wrapper->last_call();
    auto expected_phase = call == 1 ? exec::CaptureCall::Phase::WarmUp
                                    : call == 2 ? exec::CaptureCall::Phase::Capture : exec::CaptureCall::Phase::Replay;
    EXPECT_EQ(c.phase, expected_phase) << "call " << call;
    EXPECT_EQ(c.copies, call >= 3 ? 1 : 0) << "call " << call;
    EXPECT_EQ(c.copy_bytes, call >= 3 ? 2 * 3 * 4 : 0) << "call " << call;
    // The optimizer's in-place update: same storage, new values, read by the next replay.
    w.mul_(0.5).add_(0.25);
  }
  EXPECT_GT(g.pool->pool_bytes(), 0);
}

TEST_F(CapturedGraphTest, ReplayOverwritesTheOutputsOfThePreviousReplay) {
  Wrapped g = wrap(kLinear, {0, 2});
  (*g.wrapper)({w, batch(1), b});
  (*g.wrapper)({w, batch(2), b});
  at::Tensor held = (*g.wrapper)({w, batch(3), b}).at(0).toTensor();
  at::Tensor x4 = batch(4);
  at::Tensor fourth = (*g.wrapper)({w, x4, b}).at(0).toTensor();
  EXPECT_TRUE(held.is_same(fourth)) << "a replay returns the captured output tensors";
  EXPECT_TRUE(same_bits(held, expected_linear(x4, w, b))) << "the output of replay 3 now holds replay 4's values";
}

TEST_F(CapturedGraphTest, AStaticInputThatMovedIsRefusedNamingItsIndexAndAddresses) {
  Wrapped g = wrap(kLinear, {0, 2});
  (*g.wrapper)({w, batch(1), b});
  (*g.wrapper)({w, batch(2), b});
  const void* recorded = w.data_ptr();
  at::Tensor moved = w.clone();  // e.g. a parameter re-allocated by a checkpoint load
  try {
    (*g.wrapper)({moved, batch(3), b});
    FAIL() << "a moved static input was replayed";
  } catch (const exec::ReplayHazard& e) {
    std::ostringstream old_address;
    old_address << recorded;
    EXPECT_THAT(e.what(), HasSubstr("input 0 (%w) is static but moved"));
    EXPECT_THAT(e.what(), HasSubstr("stale buffer at " + old_address.str()));
  }
}

// The three ways a replay reads stale memory, each a known-buggy wrapper: the value a
// correct wrapper computes differs from what the buggy one returns.
TEST_F(CapturedGraphTest, HistoricalBug11AnArgumentNotCopiedIsReadStale) {
  Wrapped g = wrap(kLinear, {0, 2}, {exec::injected_wrapper_bugs::kSkipNonStaticCopy});
  (*g.wrapper)({w, batch(1), b});
  at::Tensor x2 = batch(2);
  (*g.wrapper)({w, x2, b});
  at::Tensor x3 = batch(3);
  at::Tensor out = (*g.wrapper)({w, x3, b}).at(0).toTensor();
  EXPECT_FALSE(same_bits(out, expected_linear(x3, w, b)));
  EXPECT_TRUE(same_bits(out, expected_linear(x2, w, b))) << "the replay read call 2's argument";
}

TEST_F(CapturedGraphTest, HistoricalBug15TheSelfComparingCheckReplaysAMovedStaticInputSilently) {
  Wrapped g = wrap(kLinear, {0, 2}, {exec::injected_wrapper_bugs::kSelfComparedAddressCheck});
  (*g.wrapper)({w, batch(1), b});
  (*g.wrapper)({w, batch(2), b});
  at::Tensor moved = w.clone().mul_(3);
  at::Tensor x3 = batch(3);
  at::Tensor out = (*g.wrapper)({moved, x3, b}).at(0).toTensor();
  EXPECT_FALSE(same_bits(out, expected_linear(x3, moved, b)));
  EXPECT_TRUE(same_bits(out, expected_linear(x3, w, b))) << "the replay read the old storage of %w";
}

TEST_F(CapturedGraphTest, HistoricalBug11WithoutTheCheckAMovedStaticInputIsReadFromItsFreedStorage) {
  for (bool via_option : {true, false}) {
    SCOPED_TRACE(via_option ? "check-static-addresses=false" : "injected unchecked-static-addresses");
    Wrapped g = via_option ? wrap(kLinear, {0, 2}, {}, false)
                           : wrap(kLinear, {0, 2}, {exec::injected_wrapper_bugs::kUncheckedStaticAddresses});
    at::Tensor param = w.clone();
    (*g.wrapper)({param, batch(1), b});
    (*g.wrapper)({param, batch(2), b});
    // The caller re-points its tensor at new memory: the capture keeps reading the old
    // storage, which only the wrapper still holds. On a GPU that block was freed and may
    // hold anything; the replay model poisons it, so the result is NaN, not stale values
    // that might happen to be right.
    param.set_(param.clone().mul_(3));
    at::Tensor x3 = batch(3);
    at::Tensor out = (*g.wrapper)({param, x3, b}).at(0).toTensor();
    EXPECT_EQ(g.wrapper->last_call().poisoned, 1);
    EXPECT_TRUE(out.isnan().all().item<bool>()) << out;
  }
}

TEST_F(CapturedGraphTest, AStaticInputItsCallerStillHoldsIsNeverPoisoned) {
  Wrapped g = wrap(kLinear, {0, 2}, {}, false);
  at::Tensor param = w.clone();
  for (int call = 1; call <= 4; ++call) {
    at::Tensor x = batch(call);
    at::Tensor out = (*g.wrapper)({param, x, b}).at(0).toTensor();
    EXPECT_EQ(g.wrapper->last_call().poisoned, 0);
    EXPECT_TRUE(same_bits(out, expected_linear(x, param, b))) << "call " << call;
  }
}

TEST_F(CapturedGraphTest, RefusesScalarsThatChangeAndArgumentKindsItCannotCapture) {
  const char* text = R"(graph(
    arg %x : f32[4],
    arg %n : int):
  %y : f32[4] = aten::mul.Scalar(%x, %n)
  return (%y)
)";
  Wrapped g = wrap(text, {});
  (*g.wrapper)({at::ones({4}), int64_t{2}});
  (*g.wrapper)({at::ones({4}), int64_t{2}});
  auto out = (*g.wrapper)({at::full({4}, 3.0), int64_t{2}});
  EXPECT_TRUE(same_bits(out.at(0).toTensor(), at::full({4}, 6.0)));
  EXPECT_THAT([&] { (*g.wrapper)({at::ones({4}), int64_t{5}}); },
              ::testing::ThrowsMessage<exec::ReplayHazard>(HasSubstr("input 1 (%n) was 2 at capture and is 5 now")));
  EXPECT_THAT([&] { (*g.wrapper)({at::ones({5}), int64_t{2}}); },
              ::testing::ThrowsMessage<exec::ReplayHazard>(HasSubstr("input 0 (%x) is Float[5]")));

  const char* with_bool = R"(graph(
    arg %x : f32[4],
    arg %flag : bool):
  %y : f32[4] = aten::relu(%x)
  return (%y)
)";
  Wrapped h = wrap(with_bool, {});
  (*h.wrapper)({at::ones({4}), true});
  EXPECT_THAT([&] { (*h.wrapper)({at::ones({4}), true}); },
              ::testing::ThrowsMessage<exec::ExecError>(HasSubstr("input 1 (%flag) is a Bool")));
}

TEST_F(CapturedGraphTest, TeardownReleasesOnceAndWarnsTheSecondTime) {
  Wrapped g = wrap(kLinear, {0, 2});
  (*g.wrapper)({w, batch(1), b});
  (*g.wrapper)({w, batch(2), b});
  EXPECT_EQ(g.pool->teardown(), std::nullopt);
  auto warning = g.pool->teardown();
  ASSERT_TRUE(warning.has_value());
  EXPECT_THAT(*warning, HasSubstr("already torn down"));
  EXPECT_THAT([&] { (*g.wrapper)({w, batch(3), b}); },
              ::testing::ThrowsMessage<exec::ExecError>(HasSubstr("called after teardown")));
}

TEST_F(CapturedGraphTest, ThePoolSharedByTwoCapturesIsSmallerThanTwoPools) {
  auto graph = ir::parse_graph(kLinear, "<test>");
  exec::Executor first(*graph, exec::ExecutorOptions{true}), second(*graph, exec::ExecutorOptions{true});
  auto pool = std::make_shared<exec::CapturePool>(ir::CaptureSpec::Backend::Replay);
  ir::CaptureSpec spec;
  spec.static_inputs = {0, 2};
  exec::CapturedGraph a("a", first, *graph, spec, pool), c("c", second, *graph, spec, pool);
  for (int call = 1; call <= 2; ++call) {
    a({w, batch(call), b});
    c({w, batch(call), b});
  }
  EXPECT_GT(pool->pool_bytes(), 0);
  EXPECT_LT(pool->pool_bytes(), pool->unshared_pool_bytes());
  EXPECT_EQ(pool->kept_input_bytes(), 2 * (2 * 3 * 4));
}

// A module whose part carries a capture: text round trip, parse errors, verifier, and the
// module executor running it under the wrapper.
const std::string kCapturedModule =
    std::string("module inputs (%w, %x, %b) returns (linear.0)\npart linear cudagraph(backend=replay, static=[0, 2])\n") +
    kLinear;

TEST(CaptureSpecText, RoundTripsAndRunsUnderTheWrapper) {
  ir::Module m = ir::parse_module(kCapturedModule, "<test>");
  ASSERT_TRUE(m.parts.at(0).capture.has_value());
  EXPECT_EQ(m.parts[0].capture->static_inputs, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(m.print(), ir::parse_module(m.print(), "<again>").print());
  EXPECT_THAT(m.print(), HasSubstr("part linear cudagraph(backend=replay, static=[0, 2])"));
  EXPECT_TRUE(check::verify_module(m).empty());

  exec::ModuleExecutor run(m);
  at::manual_seed(3);
  at::Tensor w = at::randn({3, 3}), b = at::randn({3});
  for (int call = 1; call <= 4; ++call) {
    at::Tensor x = at::randn({2, 3});
    auto out = run.run({w, x, b});
    EXPECT_TRUE(same_bits(out.at(0).toTensor(), expected_linear(x, w, b)));
    ASSERT_EQ(run.last_stats().captured.size(), 1u);
    EXPECT_EQ(run.last_stats().copies(), call >= 3 ? 1 : 0);
  }
  EXPECT_GT(run.last_stats().pool_bytes, 0);
  EXPECT_EQ(run.teardown(), std::nullopt);
  EXPECT_TRUE(run.teardown().has_value());
}

TEST(CaptureSpecText, RefusesMalformedCaptureLinesWithTheirColumn) {
  auto parse_error = [](const std::string& line) {
    std::string text = kCapturedModule;
    text.replace(text.find("cudagraph("), text.find('\n', text.find("cudagraph(")) - text.find("cudagraph("), line);
    try {
      ir::parse_module(text, "m.txt");
    } catch (const ir::ParseError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(parse_error("cudagraph(backend=gpu)"), HasSubstr("m.txt:2:31: unknown cudagraph backend 'gpu'"));
  EXPECT_THAT(parse_error("cudagraph(static=[0, 3])"), HasSubstr("static input 3 is out of range: the part has 3 inputs"));
  EXPECT_THAT(parse_error("cudagraph(static=[2, 0])"), HasSubstr("increasing order"));
  EXPECT_THAT(parse_error("cudagraph(speed=fast)"), HasSubstr("unknown cudagraph option 'speed'"));
  EXPECT_THAT(parse_error("cudagraph(backend=cuda, backend=replay)"), HasSubstr("given twice"));
}

TEST(CaptureSpecText, TheVerifierRefusesAStaticInputThatIsNoTensor) {
  ir::Module m = ir::parse_module(kCapturedModule, "<test>");
  m.parts[0].capture->static_inputs = {0, 1, 2};
  EXPECT_TRUE(check::verify_module(m).empty());
  m.parts[0].capture->static_inputs = {2, 1};
  ASSERT_FALSE(check::verify_module(m).empty());
  EXPECT_THAT(check::verify_module(m)[0].message, HasSubstr("out of order"));
}

TEST(CaptureSpecText, AnUnknownInjectedBugIsRefusedWhenTheModuleIsPlanned) {
  std::string text = kCapturedModule;
  text.replace(text.find("static=[0, 2]"), 13, "static=[0, 2], injected=[no-such-bug]");
  ir::Module m = ir::parse_module(text, "<test>");
  EXPECT_THAT([&] { exec::ModuleExecutor run(m); },
              ::testing::ThrowsMessage<exec::ExecError>(HasSubstr("unknown injected wrapper bug 'no-such-bug'")));
}

}  // namespace
}  // namespace passcheck
