// The partition round trip of seed 467 (historical bug 8) on the debug models and on a
// per-rank FSDP llama3 graph: the second, tag-replaying partition makes the first
// min-cut's decisions (same forward all_gather count, same saved set, same peak), and
// runs like the joint graph. Also cse's metadata merge (historical bug 16) on which the
// round trip relies.
#include "framework/exec/op_properties.h"
#include "passes/cleanup/cleanup_passes.h"
#include "passes/partition/partition_passes.h"
#include "suites/unit/partition_test_support.h"

#include <gtest/gtest.h>

namespace passcheck {
namespace {

class RoundTripModels : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTripModels, SecondPartitionReplaysTheFirst) {
  const auto& m = testing::traced_joint(GetParam());
  passes::RoundTripResult rt = passes::partition_round_trip(*m.graph);
  EXPECT_TRUE(rt.agree()) << rt.report();
  EXPECT_FALSE(rt.first_summary.saved.empty());
  EXPECT_EQ(rt.first_summary.saved.size(), rt.second_summary.saved.size()) << rt.report();
  testing::expect_module_matches_joint(*m.graph, rt.first, m.inputs);
  testing::expect_module_matches_joint(*m.graph, rt.second, m.inputs);
  std::cout << GetParam() << ":\n" << rt.report();
}

INSTANTIATE_TEST_SUITE_P(Models, RoundTripModels, ::testing::Values("mlp", "dropout_mlp", "llama3"));

TEST(RoundTripFsdp, Llama3RankGraphKeepsItsAllGatherCountAndSavedSet) {
  std::unique_ptr<ir::Graph> rank = testing::fsdp_llama3_rank_graph();
  passes::RoundTripResult rt = passes::partition_round_trip(*rank);
  EXPECT_TRUE(rt.agree()) << rt.report();
  EXPECT_GT(rt.first_summary.forward_all_gathers, 0);
  EXPECT_EQ(rt.first_summary.forward_all_gathers, rt.second_summary.forward_all_gathers);
  std::cout << rt.report();
}

// force_recompute_fsdp_all_gather as autoparallel main does it (after #469 and seed
// 467's fix 1): the all_gather, its wait and the chain of views downstream of the wait
// are MUST_RECOMPUTE, so the backward gathers the weights again.
int64_t force_recompute_all_gathers(ir::Graph& g) {
  int64_t tagged = 0;
  for (ir::Node* n : g.nodes()) {
    if (n->op() != "_c10d_functional::all_gather_into_tensor" || n->meta().phase == ir::Phase::Backward) continue;
    std::vector<ir::Node*> chain{n};
    while (!chain.empty()) {
      ir::Node* c = chain.back();
      chain.pop_back();
      c->mutable_meta().recompute = ir::RecomputePolicy::MustRecompute;
      ++tagged;
      for (const ir::Use& u : c->output(0)->uses())
        if (!u.is_graph_output() && u.user->meta().phase != ir::Phase::Backward &&
            (u.user->op() == "_c10d_functional::wait_tensor" || exec::aliases_input(*u.user)))
          chain.push_back(u.user);
    }
  }
  return tagged;
}

TEST(RoundTripFsdp, Llama3RankGraphWithRecomputedAllGathersKeepsItsCounts) {
  std::unique_ptr<ir::Graph> rank = testing::fsdp_llama3_rank_graph();
  ASSERT_GT(force_recompute_all_gathers(*rank), 0);
  passes::RoundTripResult rt = passes::partition_round_trip(*rank);
  EXPECT_TRUE(rt.agree()) << rt.report();
  EXPECT_EQ(rt.first_summary.forward_all_gathers, rt.second_summary.forward_all_gathers);
  int64_t backward_gathers = 0;
  for (const ir::Node* n : rt.first.parts[1].graph->nodes())
    backward_gathers += n->op() == "_c10d_functional::all_gather_into_tensor";
  EXPECT_GT(backward_gathers, 0);
  std::cout << rt.report();
}

TEST(RoundTripFsdp, Llama3RankGraphWithABudgetStillRoundTrips) {
  std::unique_ptr<ir::Graph> rank = testing::fsdp_llama3_rank_graph();
  passes::RoundTripOptions options;
  options.first_options = {{"memory-budget", "0.5"}};
  passes::RoundTripResult rt = passes::partition_round_trip(*rank, options);
  EXPECT_TRUE(rt.agree()) << rt.report();
}

// --- cse metadata merge ---

check::PassResult run_cse(ir::Graph& g, std::map<std::string, std::string> options = {}) {
  return passes::cse_pass(g, check::PassOptions(passes::cse_pass_info(), options));
}

TEST(CseMetadataMerge, TheKeptNodeTakesTheErasedOnesSaveTag) {
  auto g = ir::parse_graph(R"(graph(param %w : f32[4, 4], arg %x : f32[2, 4]):
  %mm : f32[2, 4] = aten::mm(%x, %w)
  %mm_1 : f32[2, 4] = aten::mm(%x, %w)  #{custom={"ap_must_save": "1"}}
  %add : f32[2, 4] = aten::add.Tensor(%mm, %mm_1, 1)
  return (%add))");
  check::PassResult r = run_cse(*g);
  EXPECT_EQ(r.stats["erased_nodes"], 1);
  EXPECT_EQ(r.stats["merged_metadata"], 1);
  EXPECT_EQ(g->find_value("mm")->producer()->meta().custom.at("ap_must_save"), "1");
}

TEST(CseMetadataMerge, SavedOutputsAreTheUnionOrAllWhenEitherListsNone) {
  const char* text = R"(graph(arg %x : f32[4, 3]):
  %values : f32[4], %indices : i64[4] = aten::max.dim(%x, 1, False)  #{custom={"ap_must_save": "1", "ap_save_outputs": "0"}}
  %values_1 : f32[4], %indices_1 : i64[4] = aten::max.dim(%x, 1, False)  #{custom={"ap_must_save": "1", "ap_save_outputs": "1"}}
  return (%values, %indices_1))";
  auto g = ir::parse_graph(text);
  run_cse(*g);
  EXPECT_EQ(g->find_value("values")->producer()->meta().custom.at("ap_save_outputs"), "0,1");
  auto h = ir::parse_graph(text);
  h->find_value("values_1")->producer()->mutable_meta().custom.erase("ap_save_outputs");
  run_cse(*h);
  EXPECT_EQ(h->find_value("values")->producer()->meta().custom.count("ap_save_outputs"), 0u);
}

TEST(CseMetadataMerge, RecomputePolicyMustSaveBeatsRecomputeWhichBeatsPreferSave) {
  auto policy_after = [](const char* first, const char* second) {
    auto g = ir::parse_graph(std::string(R"(graph(param %w : f32[4, 4], arg %x : f32[2, 4]):
  %mm : f32[2, 4] = aten::mm(%x, %w)  #{recompute=)") + first + R"(}
  %mm_1 : f32[2, 4] = aten::mm(%x, %w)  #{recompute=)" + second + R"(}
  %add : f32[2, 4] = aten::add.Tensor(%mm, %mm_1, 1)
  return (%add))");
    passes::cse_pass(*g, {});
    return g->find_value("mm")->producer()->meta().recompute;
  };
  EXPECT_EQ(policy_after("must_recompute", "must_save"), ir::RecomputePolicy::MustSave);
  EXPECT_EQ(policy_after("prefer_save", "prefer_recompute"), ir::RecomputePolicy::PreferRecompute);
  EXPECT_EQ(policy_after("prefer_recompute", "must_recompute"), ir::RecomputePolicy::MustRecompute);
  EXPECT_EQ(policy_after("must_save", "prefer_recompute"), ir::RecomputePolicy::MustSave);
}

TEST(CseMergeCollectives, MergesEqualAllGatherChainsOnlyWhenAsked) {
  const char* text = R"(graph(param %w : f32[2, 4]):
  %all_gather_into_tensor : f32[4, 4] = _c10d_functional::all_gather_into_tensor(%w, 2, "dp")
  %wait_tensor : f32[4, 4] = _c10d_functional::wait_tensor(%all_gather_into_tensor)
  %all_gather_into_tensor_1 : f32[4, 4] = _c10d_functional::all_gather_into_tensor(%w, 2, "dp")  #{phase=backward}
  %wait_tensor_1 : f32[4, 4] = _c10d_functional::wait_tensor(%all_gather_into_tensor_1)  #{phase=backward}
  %add : f32[4, 4] = aten::add.Tensor(%wait_tensor, %wait_tensor_1, 1)  #{phase=backward}
  return (%add))";
  auto g = ir::parse_graph(text);
  EXPECT_FALSE(run_cse(*g).changed);
  EXPECT_EQ(g->num_nodes(), 5u);
  check::PassResult r = run_cse(*g, {{"merge-collectives", "true"}});
  EXPECT_EQ(r.stats["erased_nodes"], 2);
  EXPECT_EQ(g->num_nodes(), 3u);
  // The verifier's rule holds: the kept all_gather is read only by its wait.
  EXPECT_EQ(g->find_value("all_gather_into_tensor")->uses().size(), 1u);
}

}  // namespace
}  // namespace passcheck
