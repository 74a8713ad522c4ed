// Node classification, split_joint / join_module and partition-min-cut on the debug
// models: a split module run part after part equals the joint graph bit for bit for
// every saved set tried, a re-imported module runs like the module, and min-cut's
// decisions follow PyTorch's rules on small graphs written out by hand.
#include "framework/check/verifier.h"
#include "passes/partition/partition_passes.h"
#include "suites/unit/partition_test_support.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

namespace passcheck {
namespace {

using testing::kReluMlp;

using passes::Classification;
using passes::NodeClass;

std::vector<const ir::Value*> values_named(const ir::Graph& g, const std::vector<std::string>& names) {
  std::vector<const ir::Value*> out;
  for (const std::string& n : names) {
    const ir::Value* v = g.find_value(n);
    if (!v) throw std::runtime_error("no value %" + n);
    out.push_back(v);
  }
  return out;
}

ir::Module min_cut(const ir::Graph& joint, std::map<std::string, std::string> options = {}) {
  return testing::run_partitioner(joint, "partition-min-cut", std::move(options));
}

using testing::saved_names;

TEST(PartitionClassify, MlpForwardLossAndBackward) {
  const auto& m = testing::traced_joint("mlp");
  const Classification c = passes::classify_nodes(*m.graph);
  EXPECT_EQ(c.output_is_backward, (std::vector<bool>{false, true, true}));
  for (const ir::Node* n : m.graph->nodes()) {
    const bool bw = n->meta().phase == ir::Phase::Backward;
    EXPECT_EQ(c.is_backward(n), bw) << ir::print_node(*n);
    if (!bw) EXPECT_EQ(c.class_of(n), NodeClass::RequiredForward) << ir::print_node(*n);
  }
  // What the backward reads of the forward: the loss (ones_like), mm (gelu_backward),
  // gelu and t_1 (the fc2 matmuls).
  std::vector<std::string> read;
  for (const ir::Value* v : passes::forward_values_read_by_backward(*m.graph, c)) read.push_back(v->name());
  EXPECT_EQ(read, (std::vector<std::string>{"mm", "gelu", "t_1", "sum"}));
}

TEST(PartitionClassify, UsersOfBackwardNodesAreBackwardAndDeadForwardNodesUnclaimed) {
  auto g = ir::parse_graph(R"(graph(arg %x : f32[4]):
  %neg : f32[4] = aten::neg(%x)
  %sum : f32[] = aten::sum(%neg, None)  #{phase=loss}
  %ones_like : f32[] = aten::ones_like(%sum, None, None, None, None, torch.contiguous_format)  #{phase=backward}
  %mul : f32[4] = aten::mul.Tensor(%x, %ones_like)
  %exp : f32[4] = aten::exp(%x)
  return (%sum, %mul))");
  const Classification c = passes::classify_nodes(*g);
  EXPECT_EQ(c.class_of(g->find_value("mul")->producer()), NodeClass::RequiredBackward);
  EXPECT_EQ(c.class_of(g->find_value("exp")->producer()), NodeClass::Unclaimed);
  EXPECT_EQ(c.class_of(g->find_value("neg")->producer()), NodeClass::RequiredForward);
}

class SplitModels : public ::testing::TestWithParam<std::string> {};

TEST_P(SplitModels, EverySavedSetRunsLikeTheJointGraph) {
  const auto& m = testing::traced_joint(GetParam());
  const Classification c = passes::classify_nodes(*m.graph);
  const std::vector<const ir::Value*> everything = passes::forward_values_read_by_backward(*m.graph, c);
  // A value the backward reads that cannot be recomputed: its producer, or a node it
  // depends on in the forward, is random or writes in place (dropout's mask, and its
  // scaled copy).
  std::map<const ir::Value*, bool> memo;  // the forward is a DAG: each value decided once
  std::function<bool(const ir::Value*)> unrecomputable = [&](const ir::Value* v) {
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    const ir::Node* p = v->producer();
    bool result = false;
    if (p && passes::unsafe_to_recompute(*p)) result = true;
    if (p && !result)
      for (const ir::Value* in : p->operands())
        if (unrecomputable(in)) {
          result = true;
          break;
        }
    memo[v] = result;
    return result;
  };
  std::vector<const ir::Value*> random_only;
  for (const ir::Value* v : everything)
    if (unrecomputable(v)) random_only.push_back(v);
  std::vector<const ir::Value*> every_other;
  for (size_t i = 0; i < everything.size(); i += 2) every_other.push_back(everything[i]);
  for (const ir::Value* v : random_only) every_other.push_back(v);
  for (const auto& [label, saved] : std::vector<std::pair<std::string, std::vector<const ir::Value*>>>{
           {"nothing but unrecomputable values", random_only},
           {"everything the backward reads", everything},
           {"every other value", every_other}}) {
    SCOPED_TRACE(label);
    passes::SplitResult split = passes::split_joint(*m.graph, saved, c);
    testing::expect_module_matches_joint(*m.graph, split.module, m.inputs);
    // Consuming the joint graph (how the partitioner passes split) gives the same module,
    // with exact use lists in both parts.
    std::unique_ptr<ir::Graph> joint = m.graph->clone();
    const Classification joint_classes = passes::classify_nodes(*joint);
    std::vector<const ir::Value*> same_saved;
    for (const ir::Value* v : saved) same_saved.push_back(joint->find_value(v->name()));
    passes::SplitResult consumed = passes::split_joint_consuming(joint, same_saved, joint_classes);
    EXPECT_EQ(joint, nullptr);
    EXPECT_EQ(consumed.module.print(), split.module.print());
    EXPECT_EQ(consumed.saved, split.saved);
    EXPECT_EQ(consumed.recomputed_nodes, split.recomputed_nodes);
    for (const check::VerifierIssue& issue : check::verify_module(consumed.module)) ADD_FAILURE() << issue.message;
    // The re-imported module runs like the joint graph too.
    auto joined = passes::join_module(split.module);
    testing::expect_module_matches_joint(*m.graph, ir::Module::of_graph(std::move(joined)), m.inputs);
  }
  ir::Module cut = min_cut(*m.graph);
  testing::expect_module_matches_joint(*m.graph, cut, m.inputs);
}

INSTANTIATE_TEST_SUITE_P(Models, SplitModels, ::testing::Values("mlp", "dropout_mlp", "llama3"));

TEST(PartitionSplit, SavingNothingRecomputesTheForwardInTheBackward) {
  const auto& m = testing::traced_joint("mlp");
  passes::SplitResult split = passes::split_joint(*m.graph, {});
  EXPECT_TRUE(split.saved.empty());
  EXPECT_EQ(split.module.linked_bytes(0), 0);
  EXPECT_GT(split.recomputed_nodes, 0);
  const ir::Graph& backward = *split.module.parts[1].graph;
  for (const ir::Node* n : backward.nodes())
    if (n->meta().custom.count("recomputed_from")) EXPECT_EQ(n->meta().phase, ir::Phase::Backward);
  testing::expect_module_matches_joint(*m.graph, split.module, m.inputs);
}

// dropout_mlp's mask is bernoulli_ (random, in place on empty_like) then its scaled copy
// (div, functional: the tracer records the update of that private temporary so): the
// backward reads the copy, which cannot be recomputed without drawing the mask again.
TEST(PartitionSplit, RefusesToRecomputeTheDropoutMaskAndNamesIt) {
  const auto& m = testing::traced_joint("dropout_mlp");
  try {
    passes::split_joint(*m.graph, {});
    FAIL() << "expected a refusal";
  } catch (const check::RefusedInput& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("but `%bernoulli_ : f32[8, 32] = aten::bernoulli_.float(%empty_like, 0.75, None)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("cannot be recomputed (random) and is not saved"), std::string::npos) << what;
  }
}

TEST(PartitionSplit, AConsumingSplitThatRefusesLeavesTheJointGraphAsItWas) {
  const auto& m = testing::traced_joint("dropout_mlp");
  std::unique_ptr<ir::Graph> joint = m.graph->clone();
  const std::string before = joint->print();
  const Classification c = passes::classify_nodes(*joint);
  EXPECT_THROW(passes::split_joint_consuming(joint, {}, c), check::RefusedInput);
  ASSERT_NE(joint, nullptr);
  EXPECT_EQ(joint->print(), before);
  for (const check::VerifierIssue& issue : check::verify_graph(*joint)) ADD_FAILURE() << issue.message;
}

// A dead forward node and a forward node only the backward reads (recomputed there):
// neither stays in the consumed joint graph that becomes the forward part.
TEST(PartitionSplit, AConsumingSplitErasesWhatTheForwardPartDoesNotRun) {
  const char* text = R"(graph(arg %x : f32[4]):
  %neg : f32[4] = aten::neg(%x)
  %cos : f32[4] = aten::cos(%x)
  %exp : f32[4] = aten::exp(%x)
  %sum : f32[] = aten::sum(%neg, None)  #{phase=loss}
  %ones_like : f32[] = aten::ones_like(%sum, None, None, None, None, torch.contiguous_format)  #{phase=backward}
  %mul : f32[4] = aten::mul.Tensor(%cos, %ones_like)  #{phase=backward}
  return (%sum, %mul))";
  const auto copied_from = ir::parse_graph(text, "joint");
  const passes::SplitResult copied = passes::split_joint(*copied_from, {});
  std::unique_ptr<ir::Graph> joint = ir::parse_graph(text, "joint");
  const Classification c = passes::classify_nodes(*joint);
  const passes::SplitResult consumed = passes::split_joint_consuming(joint, {}, c);
  EXPECT_EQ(consumed.module.print(), copied.module.print());
  const ir::Graph& forward = *consumed.module.parts[0].graph;
  EXPECT_EQ(forward.num_nodes(), 2u);  // neg, sum
  EXPECT_EQ(forward.find_value("cos"), nullptr);
  EXPECT_EQ(forward.find_value("exp"), nullptr);
  EXPECT_EQ(consumed.recomputed_nodes, 3);  // neg and sum (for ones_like), cos
  EXPECT_EQ(consumed.recomputed_nodes, copied.recomputed_nodes);
  for (const check::VerifierIssue& issue : check::verify_module(consumed.module)) ADD_FAILURE() << issue.message;
}

TEST(PartitionSplit, RefusesABackwardValueAsASavedValue) {
  const auto& m = testing::traced_joint("mlp");
  EXPECT_THROW(passes::split_joint(*m.graph, values_named(*m.graph, {"mm_2"})), check::RefusedInput);
}

TEST(PartitionSplit, ModuleOutputsFollowTheJointOutputs) {
  const auto& m = testing::traced_joint("mlp");
  passes::SplitResult split = passes::split_joint(*m.graph, values_named(*m.graph, {"mm", "gelu"}));
  EXPECT_EQ(split.saved, (std::vector<std::string>{"mm", "gelu"}));
  ASSERT_EQ(split.module.outputs.size(), 3u);
  EXPECT_EQ(split.module.outputs[0], (ir::PartOutput{0, 0}));
  EXPECT_EQ(split.module.outputs[1], (ir::PartOutput{1, 0}));
  EXPECT_EQ(split.module.outputs[2], (ir::PartOutput{1, 1}));
  EXPECT_EQ(split.module.parts[0].name, "forward");
  EXPECT_EQ(split.module.parts[1].name, "backward");
  // Forward outputs: the loss, then the saved values; the backward links them and reads
  // the module inputs it needs by name.
  EXPECT_EQ(split.module.parts[0].graph->outputs().size(), 3u);
  const auto& sources = split.module.parts[1].input_sources;
  ASSERT_GE(sources.size(), 2u);
  EXPECT_EQ(sources[0], (std::optional<ir::PartOutput>{ir::PartOutput{0, 1}}));
  EXPECT_EQ(sources[1], (std::optional<ir::PartOutput>{ir::PartOutput{0, 2}}));
}


TEST(PartitionMinCut, SavesTheBannedMatmulAndRecomputesTheCheapRelu) {
  auto g = ir::parse_graph(kReluMlp);
  ir::Module module = min_cut(*g);
  // relu would cost 8*64*4 bytes x 1.1 and mm as much: mm is further from the backward
  // (x 1.21), so the cheaper cut is relu's... but relu is what the backward reads, and
  // the loss (4 bytes) is cheaper to save than recompute through the banned mm_1.
  EXPECT_EQ(saved_names(module), (std::vector<std::string>{"relu", "sum"}));
  testing::expect_module_matches_joint(*g, module, exec::make_inputs(*g));
}

TEST(PartitionMinCut, MustRecomputeForcesTheRecomputationAndMustSaveTheSave) {
  auto g = ir::parse_graph(kReluMlp);
  g->find_value("relu")->producer()->mutable_meta().recompute = ir::RecomputePolicy::MustRecompute;
  ir::Module module = min_cut(*g);
  EXPECT_EQ(saved_names(module), (std::vector<std::string>{"mm", "sum"}));
  auto h = ir::parse_graph(kReluMlp);
  ir::Node* relu = h->find_value("relu")->producer();
  relu->mutable_meta().recompute = ir::RecomputePolicy::PreferRecompute;  // PyTorch: must_recompute too
  EXPECT_EQ(saved_names(min_cut(*h)), (std::vector<std::string>{"mm", "sum"}));
}

TEST(PartitionMinCut, RefusesAModuleThatIsAlreadyPartitioned) {
  auto g = ir::parse_graph(kReluMlp);
  ir::Module module = min_cut(*g);
  const auto& pass = check::PassRegistry::global().get("partition-min-cut");
  try {
    pass.run_module(module, check::PassOptions(pass.info, {}));
    FAIL() << "expected a refusal";
  } catch (const check::RefusedInput& e) {
    EXPECT_NE(std::string(e.what()).find("2 parts (forward, backward)"), std::string::npos) << e.what();
  }
}

TEST(PartitionMinCut, BudgetBelowOneRecomputesAMatmulToSaveLess) {
  auto g = ir::parse_graph(kReluMlp);
  g->find_value("relu")->producer()->mutable_meta().recompute = ir::RecomputePolicy::MustRecompute;
  const int64_t plain = min_cut(*g).linked_bytes(0);
  ir::Module budgeted = min_cut(*g, {{"memory-budget", "0.1"}});
  EXPECT_LT(budgeted.linked_bytes(0), plain);
  EXPECT_EQ(saved_names(budgeted), (std::vector<std::string>{"sum"}));
  testing::expect_module_matches_joint(*g, budgeted, exec::make_inputs(*g));
}

// PyTorch gives a must-recompute node an edge to the sink whatever reads it: the cut pulls
// its banned input in even when the backward never reads either (the split then drops the
// unread value). A network that keeps only what leads to the backward must keep it too.
TEST(PartitionMinCut, AMustRecomputeNodeTheBackwardNeverReadsStillPullsItsBannedInputIntoTheCut) {
  auto g = ir::parse_graph(R"(graph(param %w : f32[64, 64], arg %x : f32[8, 64]):
  %mm : f32[8, 64] = aten::mm(%x, %w)
  %side : f32[8, 64] = aten::sin(%mm)  #{recompute=must_recompute}
  %sum : f32[] = aten::sum(%mm, None)  #{phase=loss}
  %ones_like : f32[] = aten::ones_like(%sum, None, None, None, None, torch.contiguous_format)  #{phase=backward}
  %expand : f32[8, 64]{0, 0} = aten::expand(%ones_like, [8, 64], False)  #{phase=backward}
  %t : f32[64, 8]{1, 64} = aten::t(%x)  #{phase=backward}
  %mm_1 : f32[64, 64] = aten::mm(%t, %expand)  #{phase=backward}
  return (%sum, %side, %mm_1))");
  const check::PassInfo info = passes::partition_min_cut_pass_info();
  const check::PassOptions options(info, {});
  check::PassResult scratch;
  check::Decisions d(scratch, options);
  const passes::Classification classes = passes::classify_nodes(*g);
  const passes::MinCutResult cut = passes::min_cut_saved_values(*g, classes, passes::MinCutOptions{}, d);
  std::vector<std::string> names;
  for (const ir::Value* v : cut.saved) names.push_back(v->name());
  EXPECT_EQ(names, (std::vector<std::string>{"mm", "sum"}));
  EXPECT_EQ(cut.unbudgeted_bytes, 8 * 64 * 4 + 4);
  // The split keeps what the backward reads.
  EXPECT_EQ(saved_names(min_cut(*g)), (std::vector<std::string>{"sum"}));
}

TEST(PartitionMinCut, RejectsABudgetOutsideZeroToOne) {
  const auto& pass = check::PassRegistry::global().get("partition-min-cut");
  EXPECT_THROW(check::PassOptions(pass.info, {{"memory-budget", "1.5"}}), check::PassConfigError);
  EXPECT_THROW(check::PassOptions(pass.info, {{"memory-budget", "half"}}), check::PassConfigError);
}

}  // namespace
}  // namespace passcheck
