// Executor: running parsed graphs through the dispatcher, lifetimes and live bytes,
// multi-output and list-returning operators, default arguments, and every error path
// (unknown operator, bad arity, bad inputs, metadata mismatch) naming node and line.
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/ir/text.h"
#include "suites/support/test_support.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace passcheck {
namespace {

using testing::parse_graph_text;

TEST(Executor, RunsTwoMatmulForwardAndMatchesEager) {
  auto g = parse_graph_text(R"(graph(
    param %w1 : f32[4, 8],
    param %w2 : f32[8, 4],
    arg %x : f32[2, 4]):
  %mm : f32[2, 8] = aten::mm(%x, %w1)
  %gelu : f32[2, 8] = aten::gelu(%mm, "none")
  %mm_1 : f32[2, 4] = aten::mm(%gelu, %w2)
  return (%mm_1)
)");
  at::Tensor w1 = at::randn({4, 8}), w2 = at::randn({8, 4}), x = at::randn({2, 4});
  exec::Executor executor(*g);
  auto out = executor.run({w1, w2, x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(at::equal(out[0].toTensor(), at::mm(at::gelu(at::mm(x, w1)), w2)));
  EXPECT_EQ(executor.last_stats().nodes_run, 3);
}

TEST(Executor, UnpacksListReturnsAndTupleReturns) {
  auto g = parse_graph_text(R"(graph(arg %x : f32[4, 6]):
  %a : f32[2, 6], %b : f32[2, 6] = aten::split.Tensor(%x, 2, 0)
  %values : f32[2], %indices : i64[2] = aten::max.dim(%b, 1, False)
  %sum : f32[2, 6] = aten::add.Tensor(%a, %b, 1)
  return (%sum, %values, %indices)
)");
  at::Tensor x = at::randn({4, 6});
  exec::Executor executor(*g);
  auto out = executor.run({x});
  auto parts = x.split(2, 0);
  EXPECT_TRUE(at::equal(out[0].toTensor(), parts[0] + parts[1]));
  auto [values, indices] = parts[1].max(1);
  EXPECT_TRUE(at::equal(out[1].toTensor(), values));
  EXPECT_TRUE(at::equal(out[2].toTensor(), indices));
}

TEST(Executor, FillsOmittedTrailingArgumentsWithSchemaDefaults) {
  auto g = parse_graph_text(R"(graph(arg %x : f32[3]):
  %y : f32[3] = aten::add.Tensor(%x, %x)
  return (%y)
)");
  at::Tensor x = at::randn({3});
  auto out = exec::Executor(*g).run({x});
  EXPECT_TRUE(at::equal(out[0].toTensor(), x * 2));
}

TEST(Executor, FreesValuesAfterTheirLastUse) {
  // A chain of four 1 MiB intermediates: with freeing at most two are alive at once.
  auto g = parse_graph_text(R"(graph(arg %x : f32[512, 512]):
  %a : f32[512, 512] = aten::mul.Tensor(%x, %x)
  %b : f32[512, 512] = aten::mul.Tensor(%a, %a)
  %c : f32[512, 512] = aten::mul.Tensor(%b, %b)
  %d : f32[512, 512] = aten::mul.Tensor(%c, %c)
  %e : f32[] = aten::sum(%d, None)
  return (%e)
)");
  const int64_t mib = 512 * 512 * 4;
  exec::ExecutorOptions with_free;
  with_free.track_live_bytes = true;
  exec::ExecutorOptions without_free = with_free;
  without_free.free_after_last_use = false;
  at::Tensor x = at::randn({512, 512});
  exec::Executor freeing(*g, with_free), keeping(*g, without_free);
  freeing.run({x});
  keeping.run({x});
  EXPECT_EQ(freeing.last_stats().input_bytes, mib);
  EXPECT_EQ(freeing.last_stats().peak_bytes_above_inputs(), 2 * mib);
  EXPECT_GE(keeping.last_stats().peak_bytes_above_inputs(), 4 * mib);
}

TEST(Executor, ViewsOfOneStorageAreCountedOnce) {
  auto g = parse_graph_text(R"(graph(arg %x : f32[256, 256]):
  %a : f32[256, 256] = aten::mul.Tensor(%x, %x)
  %t : f32[256, 256]{1, 256} = aten::t(%a)
  %v : f32[65536] = aten::view(%a, [65536])
  %s : f32[] = aten::sum(%t, None)
  %s2 : f32[] = aten::sum(%v, None)
  %r : f32[] = aten::add.Tensor(%s, %s2, 1)
  return (%r)
)");
  exec::ExecutorOptions opts;
  opts.track_live_bytes = true;
  exec::Executor executor(*g, opts);
  executor.run({at::randn({256, 256})});
  // %a, %t and %v share one 256 KiB storage; two 4-byte scalars may be live beside it.
  EXPECT_LE(executor.last_stats().peak_bytes_above_inputs(), 256 * 256 * 4 + 8);
  EXPECT_GE(executor.last_stats().peak_bytes_above_inputs(), 256 * 256 * 4);
}

TEST(Executor, UnknownOperatorNamesTheNodeAndLine) {
  auto g = parse_graph_text("graph(arg %x : f32[2]):\n  %y : f32[2] = aten::no_such_op(%x)\n  return (%y)\n");
  try {
    exec::Executor executor(*g);
    FAIL() << "expected ExecError";
  } catch (const exec::ExecError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("unknown operator 'aten::no_such_op'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(test.graph:2:17)"), std::string::npos) << msg;
  }
}

TEST(Executor, TooManyArgumentsAndMissingArgumentsAreErrors) {
  auto many = parse_graph_text("graph(arg %x : f32[2]):\n  %y : f32[2] = aten::neg(%x, 1, 2)\n  return (%y)\n");
  EXPECT_THROW(
      {
        try {
          exec::Executor e(*many);
        } catch (const exec::ExecError& err) {
          EXPECT_NE(std::string(err.what()).find("takes 1 arguments but 3 were given"), std::string::npos) << err.what();
          throw;
        }
      },
      exec::ExecError);
  auto missing = parse_graph_text("graph(arg %x : f32[2, 2]):\n  %y : f32[2, 2] = aten::mm(%x)\n  return (%y)\n");
  try {
    exec::Executor e(*missing);
    FAIL() << "expected ExecError";
  } catch (const exec::ExecError& err) {
    EXPECT_NE(std::string(err.what()).find("missing argument 'mat2'"), std::string::npos) << err.what();
  }
}

TEST(Executor, WrongOutputCountIsAnError) {
  auto g = parse_graph_text("graph(arg %x : f32[2, 3]):\n  %v : f32[2] = aten::max.dim(%x, 1, False)\n  return (%v)\n");
  try {
    exec::Executor e(*g);
    FAIL() << "expected ExecError";
  } catch (const exec::ExecError& err) {
    EXPECT_NE(std::string(err.what()).find("returns 2 value(s) but the node defines 1"), std::string::npos) << err.what();
  }
}

TEST(Executor, InputCountAndShapeAreChecked) {
  auto g = parse_graph_text("graph(arg %x : f32[2, 3]):\n  %y : f32[2, 3] = aten::neg(%x)\n  return (%y)\n");
  exec::Executor executor(*g);
  EXPECT_THROW(executor.run({}), exec::ExecError);
  try {
    executor.run({at::randn({3, 2})});
    FAIL() << "expected ExecError";
  } catch (const exec::ExecError& err) {
    EXPECT_NE(std::string(err.what()).find("input %x expects f32[2, 3]"), std::string::npos) << err.what();
  }
}

TEST(Executor, KernelErrorsNameTheFailingNode) {
  auto g = parse_graph_text("graph(arg %x : f32[2, 3]):\n  %y : f32[2, 3] = aten::mm(%x, %x)\n  return (%y)\n");
  exec::Executor executor(*g);
  try {
    executor.run({at::randn({2, 3})});
    FAIL() << "expected ExecError";
  } catch (const exec::ExecError& err) {
    std::string msg = err.what();
    EXPECT_NE(msg.find("while running node `%y : f32[2, 3] = aten::mm(%x, %x)` (test.graph:2:20)"), std::string::npos) << msg;
  }
}

TEST(Executor, MetadataCheckCatchesAWrongRecordedShape) {
  auto g = parse_graph_text("graph(arg %x : f32[2, 3]):\n  %y : f32[3, 3] = aten::neg(%x)\n  return (%y)\n");
  exec::ExecutorOptions opts;
  opts.check_metadata = true;
  exec::Executor checking(*g, opts);
  try {
    checking.run({at::randn({2, 3})});
    FAIL() << "expected ExecError";
  } catch (const exec::ExecError& err) {
    EXPECT_NE(std::string(err.what()).find("output %y has sizes [2, 3] but the graph says [3, 3]"), std::string::npos)
        << err.what();
  }
  exec::Executor lenient(*g);  // without the check the run succeeds
  EXPECT_NO_THROW(lenient.run({at::randn({2, 3})}));
}

TEST(Executor, RunsUnderNoGrad) {
  auto g = parse_graph_text("graph(param %w : f32[3]):\n  %y : f32[3] = aten::mul.Tensor(%w, %w)\n  return (%y)\n");
  at::Tensor w = at::randn({3}).requires_grad_();
  auto out = exec::Executor(*g).run({w});
  EXPECT_FALSE(out[0].toTensor().requires_grad());
}

TEST(Inputs, GeneratedInputsFollowMetaAndSeed) {
  auto g = parse_graph_text(R"(graph(
    param %w : f32[4, 3]{1, 4},
    arg %ids : i64[5],
    arg %flag : b8[2],
    arg %h : bf16[2, 2]):
  return (%w)
)");
  exec::InputOptions opts;
  opts.seed = 7;
  opts.int_high = 3;
  auto a = exec::make_inputs(*g, opts);
  auto b = exec::make_inputs(*g, opts);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0].toTensor().strides().vec(), (std::vector<int64_t>{1, 4}));
  EXPECT_TRUE(at::equal(a[0].toTensor(), b[0].toTensor()));
  EXPECT_EQ(a[1].toTensor().scalar_type(), at::kLong);
  EXPECT_GE(a[1].toTensor().min().item<int64_t>(), 0);
  EXPECT_LT(a[1].toTensor().max().item<int64_t>(), 3);
  EXPECT_EQ(a[2].toTensor().scalar_type(), at::kBool);
  EXPECT_EQ(a[3].toTensor().scalar_type(), at::kBFloat16);
  opts.seed = 8;
  EXPECT_FALSE(at::equal(exec::make_inputs(*g, opts)[0].toTensor(), a[0].toTensor()));
}

TEST(Inputs, TensorInputWithoutMetaIsAnError) {
  auto g = parse_graph_text("graph(arg %x : Tensor):\n  return (%x)\n");
  EXPECT_THROW(exec::make_inputs(*g), std::invalid_argument);
}

}  // namespace
}  // namespace passcheck
