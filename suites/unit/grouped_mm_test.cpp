// passcheck::grouped_mm and passcheck::grouped_mm_weight_grad (framework/exec/grouped_mm.h):
// the forward against an explicit per-group mm loop bit for bit (empty groups, transposed
// weight views, every floating dtype LibTorch's CPU mm takes), the gradients against
// autograd of that loop, traces on CPU and on meta that record the same graph with one
// node per call, the executor against eager on new inputs with other group sizes, and
// every validation error, also through `passcheck run` on graph text.
#include "framework/exec/executor.h"
#include "framework/exec/grouped_mm.h"
#include "framework/exec/op_properties.h"
#include "framework/ir/text.h"
#include "framework/trace/module_scope.h"
#include "framework/trace/tracer.h"
#include "suites/support/test_support.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace passcheck {
namespace {

at::Tensor offsets_of(const std::vector<int64_t>& ends, at::ScalarType dtype = at::kLong) {
  return at::tensor(ends, at::TensorOptions().dtype(at::kLong)).to(dtype);
}

// The reference: one at::mm per non-empty group, zero rows past the last group, joined
// with cat. Differentiable through narrow, select, mm and cat.
at::Tensor explicit_loop(const at::Tensor& x, const at::Tensor& w, const std::vector<int64_t>& ends) {
  std::vector<at::Tensor> pieces;
  int64_t start = 0;
  for (size_t g = 0; g < ends.size(); ++g) {
    if (ends[g] > start) pieces.push_back(at::mm(x.narrow(0, start, ends[g] - start), w.select(0, g)));
    start = ends[g];
  }
  if (start < x.size(0)) pieces.push_back(at::zeros({x.size(0) - start, w.size(2)}, x.options()));
  return at::cat(pieces);
}

// Random cumulative group ends over `rows` rows for `groups` groups, with empty groups
// (at the start, in the middle, at the end) and a tail of rows past the last group.
std::vector<int64_t> random_ends(int64_t rows, int64_t groups, uint64_t seed) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor cuts = std::get<0>(at::randint(0, rows + 1, {groups}, gen, at::kLong).sort());
  std::vector<int64_t> ends(cuts.data_ptr<int64_t>(), cuts.data_ptr<int64_t>() + groups);
  ends[0] = 0;                         // an empty first group
  if (groups > 3) ends[2] = ends[1];   // an empty middle group
  ends[groups - 1] = ends[groups - 2];  // an empty last group, and rows past it unless it reached rows
  return ends;
}

bool cpu_mm_supports(at::ScalarType dtype) {
  try {
    at::mm(at::ones({2, 2}, dtype), at::ones({2, 2}, dtype));
    return true;
  } catch (const c10::Error&) {
    return false;  // LibTorch 1.13 has no CPU mm for float16
  }
}

TEST(GroupedMm, ForwardEqualsThePerGroupMmLoopBitForBit) {
  for (at::ScalarType dtype : {at::kFloat, at::kDouble, at::kBFloat16, at::kHalf}) {
    SCOPED_TRACE(c10::toString(dtype));
    if (!cpu_mm_supports(dtype)) continue;
    for (uint64_t seed : {1, 2, 3}) {
      const std::vector<int64_t> ends = random_ends(23, 6, seed);
      at::Tensor x = at::randn({23, 5}).to(dtype);
      at::Tensor w = at::randn({6, 5, 7}).to(dtype);
      at::Tensor w_t = at::randn({6, 7, 5}).to(dtype).transpose(1, 2);  // a [G, K, M] view, not contiguous
      for (const at::Tensor& weight : {w, w_t}) {
        at::Tensor got = exec::grouped_mm(x, weight, offsets_of(ends));
        EXPECT_EQ(got.scalar_type(), dtype);
        EXPECT_TRUE(at::equal(got, explicit_loop(x, weight, ends))) << "seed " << seed;
        // int32 offsets are the same groups.
        EXPECT_TRUE(at::equal(exec::grouped_mm(x, weight, offsets_of(ends, at::kInt)), got));
      }
    }
  }
}

TEST(GroupedMm, RowsPastTheLastGroupAndEmptyGroupsAreZero) {
  at::Tensor x = at::randn({6, 3});
  at::Tensor w = at::randn({3, 3, 2});
  at::Tensor got = exec::grouped_mm(x, w, offsets_of({2, 2, 4}));
  EXPECT_TRUE(at::equal(got.narrow(0, 4, 2), at::zeros({2, 2})));
  EXPECT_TRUE(at::equal(got.narrow(0, 2, 2), at::mm(x.narrow(0, 2, 2), w[2])));
  EXPECT_TRUE(at::equal(exec::grouped_mm(x, w, offsets_of({0, 0, 0})), at::zeros({6, 2})));
}

// Autograd of the loop computes the input gradient as grad_rows @ w[g]^T and, for a
// row-major w[g], the weight gradient as x_rows^T @ grad_rows: the same products the op's
// backward forms, so both are equal bit for bit. For a transposed weight view autograd
// forms (grad_rows^T @ x_rows)^T instead (mm's column-major branch), a different
// summation order: there the weight gradient equals the explicit x_rows^T @ grad_rows bit
// for bit and autograd of the loop to rounding.
TEST(GroupedMm, GradientsEqualAutogradOfTheLoop) {
  for (bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "transposed weight" : "contiguous weight");
    for (uint64_t seed : {4, 5}) {
      const std::vector<int64_t> ends = random_ends(19, 5, seed);
      at::Tensor x = at::randn({19, 4});
      at::Tensor param = transposed ? at::randn({5, 6, 4}) : at::randn({5, 4, 6});
      at::Tensor grad_out = at::randn({19, 6});
      auto grads_of = [&](const std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>& f) {
        at::Tensor xi = x.clone().requires_grad_(), pi = param.clone().requires_grad_();
        at::Tensor out = f(xi, transposed ? pi.transpose(1, 2) : pi);
        return torch::autograd::grad({out}, {xi, pi}, {grad_out});
      };
      auto op = grads_of([&](const at::Tensor& a, const at::Tensor& w) { return exec::grouped_mm(a, w, offsets_of(ends)); });
      auto loop = grads_of([&](const at::Tensor& a, const at::Tensor& w) { return explicit_loop(a, w, ends); });
      EXPECT_TRUE(at::equal(op[0], loop[0])) << "input gradient, seed " << seed;
      at::Tensor op_weight_grad = transposed ? op[1].transpose(1, 2) : op[1];
      at::Tensor loop_weight_grad = transposed ? loop[1].transpose(1, 2) : loop[1];
      if (!transposed) EXPECT_TRUE(at::equal(op_weight_grad, loop_weight_grad)) << "weight gradient, seed " << seed;
      EXPECT_TRUE(at::allclose(op_weight_grad, loop_weight_grad, 1e-5, 1e-5));
      int64_t start = 0;
      for (size_t g = 0; g < ends.size(); ++g) {
        at::Tensor expected = at::mm(x.narrow(0, start, ends[g] - start).t(), grad_out.narrow(0, start, ends[g] - start));
        EXPECT_TRUE(at::equal(op_weight_grad[g], expected)) << "group " << g;  // zeros for an empty group
        start = ends[g];
      }
      EXPECT_TRUE(at::equal(exec::grouped_mm_weight_grad(x, grad_out, offsets_of(ends)), op_weight_grad));
    }
  }
}

TEST(GroupedMm, DoubleBackwardIsRefusedWithAMessage) {
  at::Tensor x = at::randn({4, 2}).requires_grad_(), w = at::randn({2, 2, 3}).requires_grad_();
  at::Tensor out = exec::grouped_mm(x, w, offsets_of({1, 4}));
  auto first = torch::autograd::grad({out.pow(2).sum()}, {w}, {}, /*retain_graph=*/true, /*create_graph=*/true);
  try {
    torch::autograd::grad({first[0].sum()}, {x});
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("grouped_mm_weight_grad has no gradient formula"), std::string::npos)
        << e.what();
  }
}

// ---- tracing and the executor ----------------------------------------------------------

// Two expert layers: [N, K] -> [N, H] -> [N, K], each expert's weight stored [G, out, in]
// and passed as its transpose, the way the MoE models call the op.
struct TwoExpertLayers : torch::nn::Module {
  explicit TwoExpertLayers(c10::Device device) {
    w1 = register_parameter("w1", at::randn({4, 6, 3}).to(device));
    w2 = register_parameter("w2", at::randn({4, 3, 6}).to(device));
  }
  at::Tensor w1, w2;
};

c10::IValue expert_step(TwoExpertLayers& m, const std::vector<c10::IValue>& args) {
  const at::Tensor& x = args[0].toTensor();
  const at::Tensor& offsets = args[1].toTensor();
  at::Tensor h = exec::grouped_mm(x, m.w1.transpose(1, 2), offsets).relu();
  at::Tensor out = exec::grouped_mm(h, m.w2.transpose(1, 2), offsets);
  at::Tensor loss = (out * out).sum();
  std::vector<at::Tensor> grads = trace::gradients({loss}, {m.w1, m.w2});
  return c10::IValue(c10::List<at::Tensor>({loss, grads[0], grads[1]}));
}

trace::TracedProgram trace_experts(const std::shared_ptr<TwoExpertLayers>& m, const std::vector<c10::IValue>& args) {
  return trace::trace_step({{"", m}}, [&](const std::vector<c10::IValue>& a) { return expert_step(*m, a); }, args);
}

std::vector<std::string> ops_in(const ir::Graph& g, ir::Phase phase) {
  std::vector<std::string> ops;
  for (const ir::Node* n : g.nodes())
    if (n->meta().phase == phase && n->op().rfind("passcheck::", 0) == 0) ops.push_back(n->op());
  return ops;
}

TEST(GroupedMm, TracesAsOneNodePerCallOnCpuAndMetaAlike) {
  auto cpu_model = std::make_shared<TwoExpertLayers>(at::kCPU);
  trace::TracedProgram cpu = trace_experts(cpu_model, {at::randn({10, 3}), offsets_of({2, 2, 7, 9})});
  const ir::Graph& g = cpu.graph();
  EXPECT_EQ(ops_in(g, ir::Phase::Forward),
            (std::vector<std::string>{"passcheck::grouped_mm", "passcheck::grouped_mm"}));
  // Layer 2's input gradient, then both weight gradients; layer 1's input is an argument
  // without a gradient, so its input gradient is not formed.
  std::vector<std::string> backward = ops_in(g, ir::Phase::Backward);
  std::sort(backward.begin(), backward.end());
  EXPECT_EQ(backward, (std::vector<std::string>{"passcheck::grouped_mm", "passcheck::grouped_mm_weight_grad",
                                                "passcheck::grouped_mm_weight_grad"}));
  for (const ir::Node* n : g.nodes()) EXPECT_NE(n->op(), "aten::mm") << "a kernel's inner mm was recorded";

  auto meta_model = std::make_shared<TwoExpertLayers>(at::kMeta);
  trace::TracedProgram meta =
      trace_experts(meta_model, {at::empty({10, 3}, at::kMeta), at::empty({4}, at::dtype(at::kLong).device(at::kMeta))});
  ir::retarget_device(meta.mutable_graph(), at::kMeta, at::kCPU);
  EXPECT_EQ(ir::print_graph(g), ir::print_graph(meta.graph()));
}

TEST(GroupedMm, TheExecutorReproducesEagerOnNewGroupSizes) {
  auto model = std::make_shared<TwoExpertLayers>(at::kCPU);
  trace::TracedProgram program = trace_experts(model, {at::randn({10, 3}), offsets_of({2, 2, 7, 9})});
  for (const std::vector<int64_t>& ends :
       std::vector<std::vector<int64_t>>{{0, 5, 5, 10}, {10, 10, 10, 10}, {1, 2, 3, 4}, {0, 0, 0, 0}}) {
    at::Tensor x = at::randn({10, 3});
    std::vector<c10::IValue> args = {x, offsets_of(ends)};
    const std::vector<at::Tensor> traced = program(args).toTensorVector();
    const std::vector<at::Tensor> eager = expert_step(*model, args).toTensorVector();
    ASSERT_EQ(traced.size(), eager.size());
    for (size_t i = 0; i < traced.size(); ++i) EXPECT_TRUE(at::equal(traced[i], eager[i])) << "output " << i;
  }
}

TEST(GroupedMm, BothOpsReadDeviceDataOnTheHost) {
  EXPECT_TRUE(exec::reads_device_data_on_host("passcheck::grouped_mm"));
  EXPECT_TRUE(exec::reads_device_data_on_host("passcheck::grouped_mm_weight_grad"));
  EXPECT_FALSE(exec::reads_device_data_on_host("aten::mm"));
}

// ---- validation ------------------------------------------------------------------------

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

#define EXPECT_CONTAINS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

TEST(GroupedMm, EveryBadArgumentIsNamed) {
  at::Tensor x = at::randn({8, 3}), w = at::randn({3, 3, 2});
  at::Tensor good = offsets_of({2, 4, 8});
  for (c10::Device device : {c10::Device(at::kCPU), c10::Device(at::kMeta)}) {
    SCOPED_TRACE(device.str());
    auto gmm = [&](const at::Tensor& a, const at::Tensor& b, const at::Tensor& o) {
      return error_of([&] { exec::grouped_mm(a.to(device), b.to(device), o.to(device)); });
    };
    EXPECT_CONTAINS(gmm(x[0], w, good), "passcheck::grouped_mm: input must be 2-D [N, K], got sizes [3]");
    EXPECT_CONTAINS(gmm(x, w[0], good), "weight must be 3-D [G, K, M], got sizes [3, 2]");
    EXPECT_CONTAINS(gmm(x, at::randn({3, 4, 2}), good), "input [8, 3] has K = 3 but weight [3, 4, 2] has K = 4");
    EXPECT_CONTAINS(gmm(x, w, offsets_of({4, 8})), "offsets has 2 entries but weight [3, 3, 2] has 3 groups");
    EXPECT_CONTAINS(gmm(x, w, good.view({1, 3})), "offsets must be 1-D, got sizes [1, 3]");
    EXPECT_CONTAINS(gmm(x, w, good.to(at::kFloat)), "offsets must be int64 or int32, got Float");
    EXPECT_CONTAINS(gmm(x, w.to(at::kDouble), good), "weight is Double but input is Float");
    EXPECT_CONTAINS(gmm(x.to(at::kLong), w.to(at::kLong), good), "input must be a floating tensor, got Long");
    auto wgrad = [&](const at::Tensor& a, const at::Tensor& g, const at::Tensor& o) {
      return error_of([&] { exec::grouped_mm_weight_grad(a.to(device), g.to(device), o.to(device)); });
    };
    EXPECT_CONTAINS(wgrad(x, at::randn({7, 2}), good),
                    "passcheck::grouped_mm_weight_grad: input [8, 3] has N = 8 rows but grad_output [7, 2] has 7");
    EXPECT_CONTAINS(wgrad(x, at::randn({8}), good), "grad_output must be 2-D [N, M], got sizes [8]");
    EXPECT_CONTAINS(wgrad(x, at::randn({8, 2}), good.view({3, 1})), "offsets must be 1-D");
  }
  // Values are read only by the CPU and CUDA kernels.
  EXPECT_CONTAINS(error_of([&] { exec::grouped_mm(x, w, offsets_of({4, 2, 8})); }),
                  "passcheck::grouped_mm: offsets[1] = 2 is below offsets[0] = 4");
  EXPECT_CONTAINS(error_of([&] { exec::grouped_mm(x, w, offsets_of({-1, 2, 8})); }),
                  "offsets[0] = -1 is negative");
  EXPECT_CONTAINS(error_of([&] { exec::grouped_mm(x, w, offsets_of({2, 4, 9}, at::kInt)); }),
                  "offsets[2] = 9 is past the 8 rows of the input");
  EXPECT_CONTAINS(error_of([&] { exec::grouped_mm_weight_grad(x, at::randn({8, 2}), offsets_of({2, 9, 9})); }),
                  "passcheck::grouped_mm_weight_grad: offsets[1] = 9 is past the 8 rows of the input");
  EXPECT_EQ(error_of([&] { exec::grouped_mm(x, w, good); }), "no error");
}

// Graph text whose offsets come out of the graph: `passcheck run` answers exit 2 and the
// op's own message, never a LibTorch assert.
TEST(GroupedMm, BadGraphTextFailsWithExitTwoAndTheMessage) {
  const std::string dir = testing::make_temp_dir();
  auto run = [&](const std::string& name, const std::string& weight, const std::string& offsets_expr) {
    std::ofstream(dir + "/" + name) << "graph(arg %x : f32[6, 3], arg %w : " << weight << "):\n"
                                    << "  %off : i64[3] = " << offsets_expr << "\n"
                                    << "  %y : f32[6, 2] = passcheck::grouped_mm(%x, %w, %off)\n"
                                    << "  return (%y)\n";
    return testing::run_command(testing::passcheck_binary() + " run " + dir + "/" + name);
  };
  auto ok = run("ok.txt", "f32[3, 3, 2]", "aten::arange.start_step(2, 8, 2, torch.int64, None, None, None)");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  auto decreasing = run("down.txt", "f32[3, 3, 2]", "aten::arange.start_step(6, 0, -2, torch.int64, None, None, None)");
  EXPECT_EQ(decreasing.exit_code, 2) << decreasing.output;
  EXPECT_CONTAINS(decreasing.output, "passcheck::grouped_mm: offsets[1] = 4 is below offsets[0] = 6");
  auto past = run("past.txt", "f32[3, 3, 2]", "aten::arange.start_step(3, 12, 3, torch.int64, None, None, None)");
  EXPECT_EQ(past.exit_code, 2) << past.output;
  EXPECT_CONTAINS(past.output, "offsets[2] = 9 is past the 6 rows of the input");
  auto k_mismatch = run("k.txt", "f32[3, 4, 2]", "aten::arange.start_step(2, 8, 2, torch.int64, None, None, None)");
  EXPECT_EQ(k_mismatch.exit_code, 2) << k_mismatch.output;
  EXPECT_CONTAINS(k_mismatch.output, "input [6, 3] has K = 3 but weight [3, 4, 2] has K = 4");
}

}  // namespace
}  // namespace passcheck
