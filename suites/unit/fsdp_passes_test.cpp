// force-recompute-fsdp-all-gather on hand-made per-rank graphs: which nodes of an FSDP
// unshard it tags (and which it must not), the force-save variant, and the property its
// historical bug 5 breaks: after the pass and remat, no value derived only from an
// all-gathered parameter is held across the forward/backward boundary. The per-rank
// llama3 graphs are in suites/dist/fsdp_schedule_test.cpp.
#include "framework/check/distributed_properties.h"
#include "framework/check/pipeline.h"
#include "framework/ir/text.h"
#include "generators/distributed_situations.h"
#include "passes/fsdp/fsdp_passes.h"
#include "suites/support/test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace passcheck {
namespace {

using ::testing::HasSubstr;

const char* const kJoint = gen::fsdp_joint_graph();

using testing::parse_graph_text;

std::vector<check::PassRecord> run(const std::string& pipeline, ir::Graph& g) {
  return check::Pipeline::parse(pipeline).run(g);
}

const ir::Node* node(const ir::Graph& g, const std::string& name) { return g.find_value(name)->producer(); }

bool recompute_tagged(const ir::Graph& g, const std::string& name) {
  const ir::Node* n = node(g, name);
  return n->meta().recompute == ir::RecomputePolicy::MustRecompute &&
         n->meta().ac_region_id == passes::kFsdpUnshardRegion;
}

TEST(ForceRecomputeFsdp, TagsTheWholeSingleInputChainButNotItsReaders) {
  auto g = parse_graph_text(kJoint);
  auto records = run("force-recompute-fsdp-all-gather", *g);
  EXPECT_TRUE(recompute_tagged(*g, "ag"));
  EXPECT_TRUE(recompute_tagged(*g, "wait"));
  EXPECT_TRUE(recompute_tagged(*g, "t"));
  // %t has two users: the walk stops there; mm reads %x as well; backward nodes never.
  EXPECT_EQ(node(*g, "mm")->meta().recompute, ir::RecomputePolicy::Unset);
  EXPECT_EQ(node(*g, "t_1")->meta().recompute, ir::RecomputePolicy::Unset);
  EXPECT_EQ(records.back().stats.at("fsdp_unshards"), 1);
  EXPECT_EQ(records.back().stats.at("tagged_nodes"), 3);
}

TEST(ForceRecomputeFsdp, AddOfTheSameValueCountsAsOneInput) {
  auto g = parse_graph_text(R"(mesh dp=4 rank 0
graph(param %w : f32[4, 8] placed(S(0)), arg %x : f32[2, 16]):
  %ag : f32[16, 8] = _c10d_functional::all_gather_into_tensor(%w, 4, "dp")
  %wait : f32[16, 8] = _c10d_functional::wait_tensor(%ag)
  %double : f32[16, 8] = aten::add.Tensor(%wait, %wait, 1)
  %sum : f32[16, 8] = aten::add.Tensor(%double, %x, 1)
  return (%sum)
)");
  // %sum's shapes do not matter here: only the tags are checked, never executed.
  run("force-recompute-fsdp-all-gather", *g);
  EXPECT_TRUE(recompute_tagged(*g, "double"));
  EXPECT_EQ(node(*g, "sum")->meta().recompute, ir::RecomputePolicy::Unset);
}

// The text of a distributed situation (generators/distributed_situations.h) by name.
const char* situation_text(const std::string& name) {
  for (const gen::DistributedSituation& s : gen::distributed_situations())
    if (s.name == name) return s.text.c_str();
  throw std::runtime_error("no distributed situation '" + name + "'");
}

// A gather of a computed value and a backward unshard.
TEST(ForceRecomputeFsdp, LeavesBackwardWaitsAndComputedGathersAlone) {
  auto g = parse_graph_text(situation_text("fsdp-not-unshards"));

  auto records = run("force-recompute-fsdp-all-gather", *g);
  EXPECT_FALSE(records.back().changed);
  EXPECT_EQ(records.back().guards_refused.at("gathers-computed-value"), 1);
  EXPECT_EQ(records.back().guards_refused.at("not-forward"), 1);
}

TEST(ForceRecomputeFsdp, ForceSaveWalksBackOverViewsToTheWait) {
  auto g = parse_graph_text(kJoint);
  run("force-recompute-fsdp-all-gather{reshard-after-forward=false}", *g);
  EXPECT_EQ(node(*g, "wait")->meta().recompute, ir::RecomputePolicy::MustSave);
  EXPECT_EQ(node(*g, "wait")->meta().ac_region_id, passes::kFsdpUnshardRegion);
  EXPECT_EQ(node(*g, "t")->meta().recompute, ir::RecomputePolicy::Unset);
  EXPECT_EQ(node(*g, "ag")->meta().recompute, ir::RecomputePolicy::Unset);
}

TEST(ForceRecomputeFsdp, AfterRematNoGatheredWeightCrossesTheBoundary) {
  auto g = parse_graph_text(kJoint);
  // Before any tagging the backward reads the forward's transposed weight.
  EXPECT_THAT(check::check_gathered_parameters_not_saved(*g), ::testing::SizeIs(1));
  run("force-recompute-fsdp-all-gather,remat", *g);
  EXPECT_THAT(check::check_gathered_parameters_not_saved(*g), ::testing::IsEmpty()) << g->print();
  // The backward transposes a regathered weight; the forward %t serves the forward mm only.
  EXPECT_EQ(g->find_value("t_1")->producer()->operand(0)->name(), "t_recomputed") << g->print();
  EXPECT_EQ(g->find_value("t_recomputed")->producer()->operand(0)->producer()->operand(0)->name(), "ag_recomputed");
}

TEST(ForceRecomputeFsdp, IsIdempotent) {
  auto g = parse_graph_text(kJoint);
  run("force-recompute-fsdp-all-gather", *g);
  EXPECT_FALSE(run("force-recompute-fsdp-all-gather", *g).back().changed);
}

}  // namespace
}  // namespace passcheck
