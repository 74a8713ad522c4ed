// Tracer: the joint graph of real programs (exact op lists), backward marking and
// metadata inheritance, composite decomposition, state lifting and re-reading, result
// structure, meta tracing, and every clear error a user can meet.
#include "framework/ir/text.h"
#include "framework/trace/module_scope.h"
#include "framework/trace/tracer.h"
#include "oracles/models/layers.h"
#include "oracles/models/subject.h"
#include "oracles/training_driver.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>
#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/module.h>
#include <torch/utils.h>

namespace passcheck {
namespace {

std::vector<std::string> op_sequence(const ir::Graph& g) {
  std::vector<std::string> ops;
  for (const ir::Node* n : g.nodes()) ops.push_back(n->op_base());
  return ops;
}

// Two parameters w1 [4, 8] and w2 [8, 4].
struct TwoWeights : torch::nn::Module {
  TwoWeights() {
    w1 = register_parameter("w1", at::randn({4, 8}));
    w2 = register_parameter("w2", at::randn({8, 4}));
  }
  at::Tensor w1, w2;
};

TEST(Tracer, TwoMatmulJointGraphHasExactlyTheMakeFxOps) {
  auto subject = models::make_subject("two_matmul");
  trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), false);
  std::vector<std::string> expected = {"mm", "gelu", "mm", "sum", "ones_like", "expand", "t",
                                       "mm", "t",    "mm", "gelu_backward", "t", "mm"};
  EXPECT_EQ(op_sequence(program.graph()), expected);
  int mm = 0;
  for (const ir::Node* n : program.graph().nodes()) mm += n->op() == "aten::mm";
  EXPECT_EQ(mm, 5);  // no activation checkpointing yet: the forward mm is not recomputed
}

TEST(Tracer, BackwardNodesAreMarkedAndInheritForwardAnnotations) {
  auto subject = models::make_subject("two_matmul");
  trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), false);
  const ir::Graph& g = program.graph();
  std::vector<const ir::Node*> nodes(g.nodes().begin(), g.nodes().end());
  // mm, gelu, mm forward in module "layer"; sum is the loss.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(nodes[i]->meta().phase, ir::Phase::Forward) << i;
    EXPECT_EQ(nodes[i]->meta().module_fqn, "layer") << i;
    EXPECT_GE(nodes[i]->meta().seq_nr, 0) << i;
  }
  EXPECT_EQ(nodes[3]->meta().phase, ir::Phase::Loss);
  EXPECT_EQ(nodes[3]->meta().module_fqn, "loss");
  for (size_t i = 4; i < nodes.size(); ++i) EXPECT_EQ(nodes[i]->meta().phase, ir::Phase::Backward) << i;
  // gelu_backward carries gelu's sequence number and module.
  EXPECT_EQ(nodes[10]->op(), "aten::gelu_backward");
  EXPECT_EQ(nodes[10]->meta().seq_nr, nodes[1]->meta().seq_nr);
  EXPECT_EQ(nodes[10]->meta().module_fqn, "layer");
  // The graph returns loss then the gradients of w1 and w2.
  ASSERT_EQ(g.outputs().size(), 3u);
  EXPECT_EQ(g.outputs()[0], nodes[3]->output());
  EXPECT_EQ(g.outputs()[1], nodes[12]->output());
  EXPECT_EQ(g.outputs()[2], nodes[7]->output());
}

TEST(Tracer, BackwardNodesCopyCustomAnnotationsButKeepTheirOwn) {
  auto m = std::make_shared<TwoWeights>();
  at::Tensor x = at::randn({2, 4});
  trace::TracedProgram program = trace::trace_step(
      {{"", m}},
      [&](const std::vector<c10::IValue>& args) {
        at::Tensor y;
        {
          trace::AnnotationScope annotate(std::map<std::string, std::string>{{"stage", "block"}, {"owner", "forward"}});
          y = trace::call_module("block", args[0].toTensor(),
                                 [&](const at::Tensor& in) { return at::mm(at::mm(in, m->w1).relu(), m->w2); });
        }
        at::Tensor loss = y.sum();
        trace::AnnotationScope backward_annotation(std::map<std::string, std::string>{{"owner", "backward"}});
        return c10::IValue(c10::List<at::Tensor>(trace::gradients({loss}, {m->w1, m->w2})));
      },
      {x});
  int backward_mm = 0, forward_mm = 0;
  for (const ir::Node* n : program.graph().nodes()) {
    if (n->op() != "aten::mm") continue;
    const auto& custom = n->meta().custom;
    EXPECT_EQ(n->meta().module_fqn, "block");
    EXPECT_EQ(custom.count("stage"), 1u) << ir::print_node(*n);
    if (n->meta().phase == ir::Phase::Backward) {
      ++backward_mm;
      EXPECT_EQ(custom.at("owner"), "backward");  // its own key wins over the forward's
    } else {
      ++forward_mm;
      EXPECT_EQ(custom.at("owner"), "forward");
    }
  }
  EXPECT_EQ(forward_mm, 2);
  EXPECT_EQ(backward_mm, 3);  // grads of w2, of the hidden activation, and of w1
}

TEST(Tracer, CompositeOpsAreDecomposedToPrimitives) {
  auto subject = models::make_subject("mlp");
  trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), false);
  for (const ir::Node* n : program.graph().nodes()) {
    auto handle = c10::Dispatcher::singleton().findSchema({n->op_name(), n->overload()});
    ASSERT_TRUE(handle.has_value()) << n->op();
    bool composite_only = handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) &&
                          !handle->hasKernelForDispatchKey(c10::DispatchKey::CPU) &&
                          !handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd);
    EXPECT_FALSE(composite_only) << n->op() << " should have been decomposed";
    EXPECT_NE(n->op(), "aten::linear");
  }
}

TEST(Tracer, OpsWithBothBackendAndCompositeKernelsAreRecorded) {
  // silu_backward has a CPU kernel and a composite fallback: it must be one node.
  auto m = std::make_shared<TwoWeights>();
  trace::TracedProgram program = trace::trace_step(
      {{"", m}},
      [&](const std::vector<c10::IValue>& args) {
        at::Tensor loss = at::silu(at::mm(args[0].toTensor(), m->w1)).sum();
        return c10::IValue(c10::List<at::Tensor>(trace::gradients({loss}, {m->w1})));
      },
      {at::randn({2, 4})});
  int silu_backward = 0;
  for (const ir::Node* n : program.graph().nodes()) silu_backward += n->op() == "aten::silu_backward";
  EXPECT_EQ(silu_backward, 1);
}

// In-place updates of private temporaries are recorded functionally; updates of inputs
// and of storage another tensor shares stay in place.
std::map<std::string, int> ops_of(const trace::TraceOptions& options) {
  auto m = std::make_shared<TwoWeights>();
  trace::TracedProgram program = trace::trace_step(
      {{"", m}},
      [&](const std::vector<c10::IValue>& args) {
        at::Tensor x = args[0].toTensor();
        at::Tensor private_temp = at::exp(x);
        private_temp.add_(1.0);  // nobody else sees it: add
        at::Tensor shared = at::exp(x);
        at::Tensor view = shared.view({8});
        shared.mul_(2.0);  // the view sees it: mul_ stays
        x.add_(private_temp);  // an input: add_ stays
        x.mul_(0.5).sub_(1.0);  // an input through an earlier update's result: sub_ stays
        return c10::IValue(private_temp + view.view({2, 4}));
      },
      {at::randn({2, 4})}, options);
  std::map<std::string, int> ops;
  for (const ir::Node* n : program.graph().nodes()) ++ops[n->op()];
  return ops;
}

TEST(Tracer, InPlaceUpdatesOfPrivateTemporariesAreRecordedFunctionally) {
  std::map<std::string, int> ops = ops_of({});
  EXPECT_EQ(ops["aten::add.Scalar"], 1);
  EXPECT_EQ(ops["aten::add_.Scalar"], 0);
  EXPECT_EQ(ops["aten::mul_.Scalar"], 2);  // the shared temporary and the input
  EXPECT_EQ(ops["aten::add_.Tensor"], 1);
  EXPECT_EQ(ops["aten::sub_.Scalar"], 1);
  EXPECT_EQ(ops["aten::sub.Scalar"], 0);
  // The option off records every update as the program made it.
  trace::TraceOptions as_made;
  as_made.functionalize_temporaries = false;
  std::map<std::string, int> raw = ops_of(as_made);
  EXPECT_EQ(raw["aten::add_.Scalar"], 1);
  EXPECT_EQ(raw["aten::add.Scalar"], 0);
}

TEST(Tracer, LiftsParametersThenBuffersByFqnThenArguments) {
  auto subject = models::make_subject("llama3", {0, c10::Device(c10::DeviceType::CPU), 1, 8});
  trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), false);
  const auto& inputs = program.graph().inputs();
  EXPECT_EQ(inputs[0]->name(), "tok_embeddings.weight");
  EXPECT_EQ(inputs[0]->role(), ir::InputRole::Parameter);
  EXPECT_EQ(inputs[1]->name(), "layers.0.attention.wqkv.weight");
  size_t params = program.num_parameters();
  EXPECT_EQ(inputs[params - 1]->name(), "output.weight");
  EXPECT_EQ(inputs[params]->name(), "freqs_cos");
  EXPECT_EQ(inputs[params]->role(), ir::InputRole::Buffer);
  EXPECT_EQ(program.num_state_inputs(), params + 2);
  EXPECT_EQ(inputs[program.num_state_inputs()]->role(), ir::InputRole::Argument);
  EXPECT_EQ(inputs.size(), program.num_state_inputs() + 2);  // tokens and labels
}

TEST(Tracer, TracedProgramRereadsStateOnEveryCall) {
  auto m = std::make_shared<TwoWeights>();
  at::Tensor x = at::randn({2, 4});
  trace::TracedProgram program = trace::trace_step(
      {{"model", m}}, [&](const std::vector<c10::IValue>& args) { return c10::IValue(at::mm(args[0].toTensor(), m->w1)); },
      {x});
  EXPECT_EQ(program.state_fqns(), (std::vector<std::string>{"model.w1", "model.w2"}));
  at::Tensor before = program({x}).toTensor();
  {
    torch::NoGradGuard no_grad;
    m->w1.mul_(2);
  }
  at::Tensor after = program({x}).toTensor();
  EXPECT_TRUE(at::equal(after, before * 2));
  EXPECT_FALSE(after.requires_grad());  // executed under no-grad
}

TEST(Tracer, ResultStructureIsRestored) {
  auto m = std::make_shared<TwoWeights>();
  trace::TracedProgram program = trace::trace_step(
      {{"", m}},
      [&](const std::vector<c10::IValue>& args) {
        at::Tensor a = at::mm(args[0].toTensor(), m->w1);
        c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
        dict.insert("sum", a.sum());
        dict.insert("scale", 3);
        return c10::IValue(c10::ivalue::Tuple::create({a, dict, c10::IValue("tag")}));
      },
      {at::randn({2, 4})});
  c10::IValue out = program({at::randn({2, 4})});
  ASSERT_TRUE(out.isTuple());
  const auto& elems = out.toTupleRef().elements();
  ASSERT_EQ(elems.size(), 3u);
  EXPECT_TRUE(elems[0].isTensor());
  ASSERT_TRUE(elems[1].isGenericDict());
  EXPECT_TRUE(elems[1].toGenericDict().at("sum").isTensor());
  EXPECT_EQ(elems[1].toGenericDict().at("scale").toInt(), 3);
  EXPECT_EQ(elems[2].toStringRef(), "tag");
  EXPECT_EQ(program.result_spec().str(), "(Tensor, {\"sum\": Tensor, \"scale\": 3}, \"tag\")");
}

TEST(Tracer, SingleTensorResultStaysATensor) {
  auto m = std::make_shared<TwoWeights>();
  trace::TracedProgram program = trace::trace_step(
      {{"", m}}, [&](const std::vector<c10::IValue>& args) { return c10::IValue(at::mm(args[0].toTensor(), m->w1)); },
      {at::randn({2, 4})});
  EXPECT_TRUE(program({at::randn({2, 4})}).isTensor());
}

TEST(Tracer, UnsupportedLeafTypeIsAClearError) {
  auto m = std::make_shared<TwoWeights>();
  try {
    trace::trace_step({{"", m}}, [&](const std::vector<c10::IValue>&) { return c10::IValue(m->w1 * 2); },
                      {at::randn({2}), c10::IValue(c10::Device(c10::DeviceType::CPU))});
    FAIL() << "expected TraceError";
  } catch (const trace::TraceError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("args[1] has type Device"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Capture this value inside the traced function"), std::string::npos) << msg;
  }
}

TEST(Tracer, ChangedModuleFqnsAreReportedWithBothLists) {
  auto m = std::make_shared<TwoWeights>();
  at::Tensor x = at::randn({2, 4});
  trace::TracedProgram program = trace::trace_step(
      {{"", m}}, [&](const std::vector<c10::IValue>& args) { return c10::IValue(at::mm(args[0].toTensor(), m->w1)); },
      {x});
  auto other = std::make_shared<torch::nn::Module>();
  other->register_parameter("w1", at::randn({4, 8}));
  other->register_parameter("w3", at::randn({8, 4}));
  program.bind({{"", other}});
  try {
    program({x});
    FAIL() << "expected TraceError";
  } catch (const trace::TraceError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("traced:  w1, w2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("now:     w1, w3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("missing: w2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("extra:   w3"), std::string::npos) << msg;
  }
}

TEST(Tracer, ChangedArgumentStructureIsAnError) {
  auto m = std::make_shared<TwoWeights>();
  trace::TracedProgram program = trace::trace_step(
      {{"", m}},
      [&](const std::vector<c10::IValue>& args) {
        return c10::IValue(at::mm(args[0].toTensor(), m->w1) * args[1].toInt());
      },
      {at::randn({2, 4}), int64_t{2}});
  EXPECT_NO_THROW(program({at::randn({2, 4}), int64_t{2}}));
  try {
    program({at::randn({2, 4}), int64_t{3}});  // the constant was specialized at trace time
    FAIL() << "expected TraceError";
  } catch (const trace::TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("argument structure differs from trace time: traced with (Tensor, 2), called "
                                         "with (Tensor, 3)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(program({at::randn({2, 4})}), trace::TraceError);
}

TEST(Tracer, TensorFromOutsideTheTraceIsAClearError) {
  auto m = std::make_shared<TwoWeights>();
  at::Tensor captured = at::randn({8, 4});  // neither state nor argument
  try {
    trace::trace_step({{"", m}},
                      [&](const std::vector<c10::IValue>& args) {
                        return c10::IValue(at::mm(at::mm(args[0].toTensor(), m->w1), captured));
                      },
                      {at::randn({2, 4})});
    FAIL() << "expected TraceError";
  } catch (const trace::TraceError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("argument 'mat2' of aten::mm is a tensor the tracer has not seen (f32[8, 4] on cpu)"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("Register constant tensors as module buffers"), std::string::npos) << msg;
  }
}

// Meta and CPU traces of every debug model: Conformance.EveryModelTracesTheSameOnMetaAndCpu.

TEST(Tracer, TracingLeavesNoModeBehind) {
  auto subject = models::make_subject("two_matmul");
  oracles::trace_subject(*subject, subject->batch(0), false);
  EXPECT_FALSE(c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::TESTING_ONLY_GenericMode));
  // Ops run after tracing are plain eager ops again.
  at::Tensor y = at::mm(at::randn({2, 2}), at::randn({2, 2}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 2}));
}

// A C++ scalar operand (`x * 0.25`, mul.Scalar) stays a constant of the node; the tensor
// its backward builds outside the dispatcher becomes a scalar_tensor node.
TEST(Tracer, ScalarOperandsStayConstants) {
  auto m = std::make_shared<TwoWeights>();
  trace::TracedProgram program = trace::trace_step(
      {{"", m}},
      [&](const std::vector<c10::IValue>& args) {
        at::Tensor loss = (at::mm(args[0].toTensor(), m->w1) * 0.25).sum();
        return c10::IValue(c10::List<at::Tensor>(trace::gradients({loss}, {m->w1})));
      },
      {at::randn({2, 4})});
  at::Tensor x = at::randn({2, 4});
  at::Tensor w1 = m->w1.detach().clone().requires_grad_();
  at::Tensor expected = torch::autograd::grad({(at::mm(x, w1) * 0.25).sum()}, {w1})[0];
  auto outputs = program({x}).toTensorVector();
  ASSERT_EQ(outputs.size(), 1u);
  at::Tensor got = outputs[0];
  EXPECT_TRUE(at::equal(got, expected));
  std::string text = ir::print_graph(program.graph());
  EXPECT_NE(text.find("aten::mul.Scalar(%mm, 0.25)"), std::string::npos) << text;
}

// bool mask * -1e4 stays float32 through the graph (a 0-dim float64 tensor would promote
// the result to float64).
TEST(Tracer, ScalarOperandOnABoolMaskKeepsEagerDtype) {
  auto m = std::make_shared<TwoWeights>();
  at::Tensor mask = at::rand({2, 3}).lt(0.5);
  trace::TracedProgram program = trace::trace_step(
      {{"", m}},
      [&](const std::vector<c10::IValue>& args) {
        at::Tensor bias = args[1].toTensor() * -1e4;
        at::Tensor loss = (at::mm(args[0].toTensor(), m->w1).narrow(1, 0, 3) + bias).sum();
        return c10::IValue(c10::List<at::Tensor>(trace::gradients({loss}, {m->w1})));
      },
      {at::randn({2, 4}), mask});
  for (const ir::Node* n : program.graph().nodes())
    for (const ir::Value* v : n->outputs())
      if (v->meta()) EXPECT_NE(v->meta()->dtype, at::kDouble) << ir::print_node(*n);
}

}  // namespace
}  // namespace passcheck
