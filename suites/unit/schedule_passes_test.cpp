// The scheduling family on hand-made graphs: the stable topological sort (ties keep the
// current order, extra dependencies honoured, barriers never crossed, a cycle described
// and the graph left untouched), the recording of the compute order, and
// cap-compute-batch-size's chunking and its cycle fallback. Its historical bug 14 is
// caught in suites/mutants/distributed_mutants_test.cpp, the per-rank llama3 graphs are
// in suites/dist/fsdp_schedule_test.cpp.
#include "framework/check/pipeline.h"
#include "framework/ir/text.h"
#include "passes/schedule/schedule_passes.h"
#include "passes/schedule/stable_topo_sort.h"
#include "suites/mutants/distributed_mutants.h"
#include "suites/support/test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace passcheck {
namespace {

using ::testing::HasSubstr;

using testing::parse_graph_text;

ir::Node* node(const ir::Graph& g, const std::string& name) { return g.find_value(name)->producer(); }

std::vector<std::string> order(const ir::Graph& g) {
  std::vector<std::string> names;
  for (const ir::Node* n : g.nodes()) names.push_back(n->output(0)->name());
  return names;
}

// Two independent chains, interleaved; a random draw in the middle.
const char* const kTwoChains = R"(graph(arg %x : f32[4, 4], arg %y : f32[4, 4]):
  %a : f32[4, 4] = aten::mm(%x, %x)
  %b : f32[4, 4] = aten::mm(%y, %y)
  %a_1 : f32[4, 4] = aten::relu(%a)
  %b_1 : f32[4, 4] = aten::relu(%b)
  return (%a_1, %b_1)
)";

TEST(StableTopoSort, KeepsAValidOrderWithoutExtraDependencies) {
  auto g = parse_graph_text(kTwoChains);
  bool changed = true;
  EXPECT_EQ(passes::stable_topological_sort(*g, {}, &changed), std::nullopt);
  EXPECT_FALSE(changed);
  EXPECT_THAT(order(*g), ::testing::ElementsAre("a", "b", "a_1", "b_1"));
}

TEST(StableTopoSort, HonoursExtraDependenciesAndKeepsTiesInOrder) {
  auto g = parse_graph_text(kTwoChains);
  bool changed = false;
  // b after a_1: a_1 moves up; b_1 stays after b.
  EXPECT_EQ(passes::stable_topological_sort(*g, {{node(*g, "a_1"), node(*g, "b")}}, &changed), std::nullopt);
  EXPECT_TRUE(changed);
  EXPECT_THAT(order(*g), ::testing::ElementsAre("a", "a_1", "b", "b_1"));
}

TEST(StableTopoSort, ACycleIsDescribedAndLeavesTheGraphUntouched) {
  auto g = parse_graph_text(kTwoChains);
  std::string text = g->print();
  auto cycle = passes::stable_topological_sort(*g, {{node(*g, "a_1"), node(*g, "a")}});
  ASSERT_TRUE(cycle.has_value());
  EXPECT_EQ(*cycle, "%a -> %a_1 -> %a");
  EXPECT_EQ(g->print(), text);
}

TEST(StableTopoSort, NeverMovesANodeAcrossARandomDraw) {
  auto g = parse_graph_text(R"(graph(arg %x : f32[4, 4]):
  %a : f32[4, 4] = aten::mm(%x, %x)
  %r : f32[4, 4] = aten::rand_like(%x, None, None, None, None, None)
  %b : f32[4, 4] = aten::relu(%x)
  return (%a, %r, %b)
)");
  // b before a would cross the draw: a cycle through the barrier, nothing moves.
  EXPECT_TRUE(passes::stable_topological_sort(*g, {{node(*g, "b"), node(*g, "a")}}).has_value());
  EXPECT_THAT(order(*g), ::testing::ElementsAre("a", "r", "b"));
}

// Compute recorded before a scheduler deferred the reduce_scatter behind mm_2 and mm_3.
const char* const kDeferredReduceScatter = R"(mesh dp=2 rank 0
graph(arg %x : f32[4, 4], arg %y : f32[4, 4]):
  %mm : f32[4, 4] = aten::mm(%x, %x)  #{custom={"schedule_rank": "0", "schedule_rs_before": ""}}
  %mm_1 : f32[4, 4] = aten::mm(%mm, %x)  #{custom={"schedule_rank": "1", "schedule_rs_before": ""}}
  %mm_2 : f32[4, 4] = aten::mm(%y, %y)  #{custom={"schedule_rank": "2", "schedule_rs_before": "rs"}}
  %mm_3 : f32[4, 4] = aten::mm(%mm_2, %y)  #{custom={"schedule_rank": "3", "schedule_rs_before": "rs"}}
  %rs : f32[2, 4] = _c10d_functional::reduce_scatter_tensor(%mm_1, "sum", 2, "dp")
  %wait : f32[2, 4] = _c10d_functional::wait_tensor(%rs)
  return (%wait, %mm_3)
)";

std::vector<check::PassRecord> run(const std::string& pipeline, ir::Graph& g) {
  return check::Pipeline::parse(pipeline).run(g);
}

TEST(CapComputeBatchSize, OrdersEachChunkAfterItsRecordedReduceScatter) {
  auto g = parse_graph_text(kDeferredReduceScatter);
  auto records = run("cap-compute-batch-size{max-consecutive=2}", *g);
  EXPECT_TRUE(records.back().changed);
  EXPECT_EQ(records.back().stats.at("capped_runs"), 1);
  EXPECT_THAT(order(*g), ::testing::ElementsAre("mm", "mm_1", "rs", "mm_2", "mm_3", "wait"));
  EXPECT_FALSE(run("cap-compute-batch-size{max-consecutive=2}", *g).back().changed);
}

TEST(CapComputeBatchSize, WithoutARecordingKeepsTheCurrentOrder) {
  auto g = parse_graph_text(kTwoChains);
  auto records = run("cap-compute-batch-size{max-consecutive=1}", *g);
  EXPECT_FALSE(records.back().changed);
  EXPECT_EQ(records.back().guards_refused.at("no-recorded-order"), 1);
}

TEST(CapComputeBatchSize, ACycleLeavesTheGraphUntouchedAndIsReported) {
  auto g = parse_graph_text(mutants::kReversedRanks);
  std::string text = g->print();
  auto records = run("cap-compute-batch-size{max-consecutive=1}", *g);
  EXPECT_FALSE(records.back().changed);
  EXPECT_EQ(records.back().stats.at("cycle_fallbacks"), 1);
  EXPECT_EQ(records.back().guards_refused.at("cycle"), 1);
  EXPECT_EQ(g->print(), text);
}

TEST(RecordComputeOrder, RecordsRankAndNearestReduceScatterOnce) {
  auto g = parse_graph_text(R"(mesh dp=2 rank 0
graph(arg %x : f32[4, 4]):
  %mm : f32[4, 4] = aten::mm(%x, %x)
  %rs : f32[2, 4] = _c10d_functional::reduce_scatter_tensor(%mm, "sum", 2, "dp")
  %wait : f32[2, 4] = _c10d_functional::wait_tensor(%rs)
  %relu : f32[4, 4] = aten::relu(%mm)
  %mm_1 : f32[4, 4] = aten::mm(%relu, %x)
  return (%wait, %mm_1)
)");
  EXPECT_EQ(passes::record_compute_order(*g), 2);
  EXPECT_EQ(node(*g, "mm_1")->meta().custom.at(passes::kScheduleRankKey), "1");
  EXPECT_EQ(node(*g, "mm_1")->meta().custom.at(passes::kScheduleReduceScatterKey), "rs");
  EXPECT_EQ(node(*g, "mm")->meta().custom.at(passes::kScheduleReduceScatterKey), "");
  EXPECT_FALSE(node(*g, "relu")->meta().custom.count(passes::kScheduleRankKey));
  EXPECT_EQ(passes::record_compute_order(*g), 0) << "the first recording is kept";
}

TEST(PrefetchFsdpAllGathers, MovesGathersToTheTopAndBucketsReduceScatters) {
  auto g = parse_graph_text(R"(mesh dp=2 rank 0
graph(param %w : f32[2, 4] placed(S(0)), arg %x : f32[4, 4]):
  %mm : f32[4, 4] = aten::mm(%x, %x)
  %ag : f32[4, 4] = _c10d_functional::all_gather_into_tensor(%w, 2, "dp")
  %wait : f32[4, 4] = _c10d_functional::wait_tensor(%ag)
  %mm_1 : f32[4, 4] = aten::mm(%mm, %wait)
  %rs : f32[2, 4] = _c10d_functional::reduce_scatter_tensor(%mm_1, "sum", 2, "dp")  #{phase=backward}
  %wait_1 : f32[2, 4] = _c10d_functional::wait_tensor(%rs)  #{phase=backward}
  %mm_2 : f32[4, 4] = aten::mm(%mm_1, %x)  #{phase=backward}
  %rs_1 : f32[2, 4] = _c10d_functional::reduce_scatter_tensor(%mm_2, "sum", 2, "dp")  #{phase=backward}
  %wait_2 : f32[2, 4] = _c10d_functional::wait_tensor(%rs_1)  #{phase=backward}
  return (%wait_1, %wait_2)
)");
  auto records = run("prefetch-fsdp-all-gathers{bucket-reduce-scatters=2}", *g);
  EXPECT_TRUE(records.back().changed);
  EXPECT_THAT(order(*g), ::testing::ElementsAre("ag", "mm", "wait", "mm_1", "mm_2", "rs", "rs_1", "wait_1", "wait_2"));
  EXPECT_EQ(node(*g, "mm_2")->meta().custom.at(passes::kScheduleReduceScatterKey), "rs");
  EXPECT_FALSE(run("prefetch-fsdp-all-gathers{bucket-reduce-scatters=2}", *g).back().changed);
}

}  // namespace
}  // namespace passcheck
