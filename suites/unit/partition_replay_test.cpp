// The saved-set replay of autoparallel PR 467 / #485 (specs/distributed.md
// "Partitioners"), ported from its 13 upstream unit tests (tagging in the first compile,
// partition-save-all in the second), each named after the upstream behaviour it checks.
#include "passes/partition/partition_passes.h"
#include "suites/unit/partition_test_support.h"

#include <gtest/gtest.h>

namespace passcheck {
namespace {

using testing::kReluMlp;
using testing::run_partitioner;
using testing::saved_names;

std::string custom_of(const ir::Graph& g, const std::string& value, const std::string& key) {
  const auto& custom = g.find_value(value)->producer()->meta().custom;
  auto it = custom.find(key);
  return it == custom.end() ? "<none>" : it->second;
}


// A multi-output producer: max.dim's values feed the loss, its indices the backward.
// The reduction (output 4x smaller than its input) is banned from recomputation.
constexpr const char* kMaxDim = R"(graph(arg %x : f32[2, 64]):
  %values : f32[2], %indices : i64[2] = aten::max.dim(%x, 1, False)
  %exp : f32[2] = aten::exp(%values)
  %sum : f32[] = aten::sum(%exp, None)  #{phase=loss}
  %ones_like : f32[] = aten::ones_like(%sum, None, None, None, None, torch.contiguous_format)  #{phase=backward}
  %expand : f32[2]{0} = aten::expand(%ones_like, [2], False)  #{phase=backward}
  %mul : f32[2] = aten::mul.Tensor(%expand, %exp)  #{phase=backward}
  %grad : f32[2, 64] = aten::value_selecting_reduction_backward(%mul, 1, %indices, [2, 64], False)  #{phase=backward}
  return (%sum, %grad))";

std::unique_ptr<ir::Graph> with(const char* text, const std::function<void(ir::Graph&)>& edit) {
  auto g = ir::parse_graph(text);
  edit(*g);
  return g;
}

void set_custom(ir::Graph& g, const std::string& value, const std::string& key, const std::string& v) {
  g.find_value(value)->producer()->mutable_meta().custom[key] = v;
}
void set_policy(ir::Graph& g, const std::string& value, ir::RecomputePolicy p) {
  g.find_value(value)->producer()->mutable_meta().recompute = p;
}

// 1. test_tag_marks_forward_outputs_saved_by_min_cut
TEST(PartitionReplay, TaggingMarksForwardOutputsSavedByMinCut) {
  auto g = ir::parse_graph(kReluMlp);
  ir::Module first = run_partitioner(*g, "partition-min-cut", {{"tag-saves", "true"}});
  ASSERT_EQ(saved_names(first), (std::vector<std::string>{"relu", "sum"}));
  const ir::Graph& fwd = *first.parts[0].graph;
  EXPECT_EQ(custom_of(fwd, "relu", "ap_must_save"), "1");
  EXPECT_EQ(custom_of(fwd, "sum", "ap_must_save"), "1");
  EXPECT_EQ(custom_of(fwd, "mm", "ap_must_save"), "<none>");
  EXPECT_EQ(custom_of(fwd, "mm_1", "ap_must_save"), "<none>");
  // The re-imported graph carries the same tags.
  auto joined = passes::join_module(first);
  EXPECT_EQ(custom_of(*joined, "relu", "ap_must_save"), "1");
  EXPECT_EQ(custom_of(*joined, "mm", "ap_must_save"), "<none>");
}

// 2. test_tag_multi_output_producer_with_getitem_indices
TEST(PartitionReplay, TaggingMarksAMultiOutputProducerWithItsSavedIndices) {
  auto g = ir::parse_graph(kMaxDim);
  ir::Module first = run_partitioner(*g, "partition-min-cut", {{"tag-saves", "true"}});
  EXPECT_EQ(saved_names(first), (std::vector<std::string>{"indices", "exp"}));
  EXPECT_EQ(custom_of(*first.parts[0].graph, "values", "ap_must_save"), "1");
  EXPECT_EQ(custom_of(*first.parts[0].graph, "values", "ap_save_outputs"), "1");
  auto joined = passes::join_module(first);
  EXPECT_EQ(custom_of(*joined, "indices", "ap_save_outputs"), "1");
}

// 3. test_no_tags_without_flag
TEST(PartitionReplay, NothingIsTaggedWithoutTheFlag) {
  auto g = ir::parse_graph(kMaxDim);
  ir::Module first = run_partitioner(*g, "partition-min-cut");
  for (const ir::ModulePart& part : first.parts)
    for (const ir::Node* n : part.graph->nodes()) {
      EXPECT_EQ(n->meta().custom.count("ap_must_save"), 0u) << ir::print_node(*n);
      EXPECT_EQ(n->meta().custom.count("ap_save_outputs"), 0u) << ir::print_node(*n);
    }
}

// 4. test_save_all_saves_ap_must_save_despite_prefer_recompute
TEST(PartitionReplay, ApMustSaveIsSavedDespitePreferRecompute) {
  auto g = with(kReluMlp, [](ir::Graph& g) {
    set_custom(g, "relu", "ap_must_save", "1");
    set_policy(g, "relu", ir::RecomputePolicy::PreferRecompute);
  });
  ir::Module second = run_partitioner(*g, "partition-save-all");
  EXPECT_EQ(saved_names(second), (std::vector<std::string>{"relu"}));
  testing::expect_module_matches_joint(*g, second, exec::make_inputs(*g));
}

// 5. test_save_all_pr467_prefer_recompute_blocks_save (the draft's semantics)
TEST(PartitionReplay, Pr467PreferRecomputeBlocksTheSave) {
  auto g = with(kReluMlp, [](ir::Graph& g) {
    set_custom(g, "relu", "ap_must_save", "1");
    set_policy(g, "relu", ir::RecomputePolicy::PreferRecompute);
  });
  ir::Module second = run_partitioner(*g, "partition-save-all", {{"semantics", "pr467"}});
  EXPECT_TRUE(saved_names(second).empty());
  testing::expect_module_matches_joint(*g, second, exec::make_inputs(*g));
}

// 6. test_save_all_honours_must_save
TEST(PartitionReplay, MustSaveIsHonouredWithoutATag) {
  auto g = with(kReluMlp, [](ir::Graph& g) { set_policy(g, "mm", ir::RecomputePolicy::MustSave); });
  EXPECT_EQ(saved_names(run_partitioner(*g, "partition-save-all")), (std::vector<std::string>{"mm"}));
  // The draft ignored MUST_SAVE: everything is recomputed from the module inputs.
  EXPECT_TRUE(saved_names(run_partitioner(*g, "partition-save-all", {{"semantics", "pr467"}})).empty());
}

// 7. test_save_all_must_recompute_blocks_save
TEST(PartitionReplay, MustRecomputeBlocksASave) {
  auto g = with(kReluMlp, [](ir::Graph& g) {
    set_custom(g, "relu", "ap_must_save", "1");
    set_custom(g, "mm", "ap_must_save", "1");
    set_policy(g, "relu", ir::RecomputePolicy::MustRecompute);
  });
  ir::Module second = run_partitioner(*g, "partition-save-all");
  EXPECT_EQ(saved_names(second), (std::vector<std::string>{"mm"}));
  int64_t recomputed_relu = 0;
  for (const ir::Node* n : second.parts[1].graph->nodes())
    recomputed_relu += n->op() == "aten::relu" && n->meta().custom.count("recomputed_from");
  EXPECT_EQ(recomputed_relu, 1);
}

// 8. test_save_all_must_recompute_blocks_save_multi_output
TEST(PartitionReplay, MustRecomputeBlocksASaveOfAMultiOutputProducer) {
  auto g = with(kMaxDim, [](ir::Graph& g) {
    set_custom(g, "values", "ap_must_save", "1");
    set_custom(g, "values", "ap_save_outputs", "1");
    set_policy(g, "values", ir::RecomputePolicy::MustRecompute);
  });
  ir::Module second = run_partitioner(*g, "partition-save-all");
  EXPECT_TRUE(saved_names(second).empty());
  testing::expect_module_matches_joint(*g, second, exec::make_inputs(*g));
}

// 9. test_save_all_must_recompute_blocks_save_opaque: a node the partitioner cannot see
// into (a collective's wait) tagged MUST_RECOMPUTE is recomputed although tagged.
TEST(PartitionReplay, MustRecomputeBlocksASaveOfAnOpaqueCollective) {
  auto g = ir::parse_graph(R"(graph(param %w : f32[32, 8], arg %x : f32[4, 8]):
  %all_gather_into_tensor : f32[64, 8] = _c10d_functional::all_gather_into_tensor(%w, 2, "dp")  #{recompute=must_recompute, custom={"ap_must_save": "1"}}
  %wait_tensor : f32[64, 8] = _c10d_functional::wait_tensor(%all_gather_into_tensor)  #{recompute=must_recompute, custom={"ap_must_save": "1"}}
  %t : f32[8, 64]{1, 8} = aten::t(%wait_tensor)  #{recompute=must_recompute}
  %mm : f32[4, 64] = aten::mm(%x, %t)
  %sum : f32[] = aten::sum(%mm, None)  #{phase=loss}
  %ones_like : f32[] = aten::ones_like(%sum, None, None, None, None, torch.contiguous_format)  #{phase=backward}
  %expand : f32[4, 64]{0, 0} = aten::expand(%ones_like, [4, 64], False)  #{phase=backward}
  %t_1 : f32[64, 8]{8, 1} = aten::t(%t)  #{phase=backward}
  %mm_1 : f32[4, 8] = aten::mm(%expand, %t_1)  #{phase=backward}
  return (%sum, %mm_1))");
  ir::Module second = run_partitioner(*g, "partition-save-all");
  EXPECT_TRUE(saved_names(second).empty());
  int64_t gathers = 0;
  for (const ir::Node* n : second.parts[1].graph->nodes()) gathers += n->op() == "_c10d_functional::all_gather_into_tensor";
  EXPECT_EQ(gathers, 1);
}

// 10. test_save_all_only_indexed_getitems_replayed
TEST(PartitionReplay, OnlyTheRecordedOutputsOfAMultiOutputProducerAreReplayed) {
  auto g = with(kMaxDim, [](ir::Graph& g) {
    set_custom(g, "values", "ap_must_save", "1");
    set_custom(g, "values", "ap_save_outputs", "1");
    // The backward also reads the values: they are recomputed, not saved.
    ir::Node* mul = g.find_value("mul")->producer();
    mul->replace_operand(1, g.find_value("values"));
  });
  ir::Module second = run_partitioner(*g, "partition-save-all");
  EXPECT_EQ(saved_names(second), (std::vector<std::string>{"indices"}));
  testing::expect_module_matches_joint(*g, second, exec::make_inputs(*g));
  // pr467 saved every output of a tagged producer.
  EXPECT_EQ(saved_names(run_partitioner(*g, "partition-save-all", {{"semantics", "pr467"}})),
            (std::vector<std::string>{"values", "indices"}));
}

// 11. test_save_all_must_save_overrides_getitem_indices
TEST(PartitionReplay, MustSaveSavesEveryOutputDespiteRecordedIndices) {
  auto g = with(kMaxDim, [](ir::Graph& g) {
    set_custom(g, "values", "ap_must_save", "1");
    set_custom(g, "values", "ap_save_outputs", "1");
    set_policy(g, "values", ir::RecomputePolicy::MustSave);
    g.find_value("mul")->producer()->replace_operand(1, g.find_value("values"));
  });
  EXPECT_EQ(saved_names(run_partitioner(*g, "partition-save-all")), (std::vector<std::string>{"values", "indices"}));
}

// 12. test_save_all_dce_drops_unread_saves: a tagged value the backward does not need
// (relu is saved, so nothing recomputes mm) is not handed over (upstream:
// _extract_fwd_bwd_modules' DCE). The loss is recomputed from relu through mm_1.
TEST(PartitionReplay, ATaggedValueTheBackwardDoesNotReadIsNotSaved) {
  auto g = with(kReluMlp, [](ir::Graph& g) {
    set_custom(g, "mm", "ap_must_save", "1");
    set_custom(g, "relu", "ap_must_save", "1");
  });
  EXPECT_EQ(saved_names(run_partitioner(*g, "partition-save-all")), (std::vector<std::string>{"relu"}));
}

// 13. test_recompute_tags_survive_retrace_through_collectives
TEST(PartitionReplay, RecomputeTagsSurviveAReTraceThroughCollectives) {
  auto g = ir::parse_graph(R"(graph(param %w : f32[32, 64], arg %x : f32[8, 64]):
  %all_gather_into_tensor : f32[64, 64] = _c10d_functional::all_gather_into_tensor(%w, 2, "dp")  #{recompute=must_recompute}
  %wait_tensor : f32[64, 64] = _c10d_functional::wait_tensor(%all_gather_into_tensor)  #{recompute=must_recompute}
  %t : f32[64, 64]{1, 64} = aten::t(%wait_tensor)  #{recompute=must_recompute}
  %mm : f32[8, 64] = aten::mm(%x, %t)
  %relu : f32[8, 64] = aten::relu(%mm)
  %sum : f32[] = aten::sum(%relu, None)  #{phase=loss}
  %ones_like : f32[] = aten::ones_like(%sum, None, None, None, None, torch.contiguous_format)  #{phase=backward}
  %expand : f32[8, 64]{0, 0} = aten::expand(%ones_like, [8, 64], False)  #{phase=backward}
  %threshold_backward : f32[8, 64] = aten::threshold_backward(%expand, %relu, 0)  #{phase=backward}
  %t_1 : f32[64, 8]{1, 64} = aten::t(%x)  #{phase=backward}
  %mm_1 : f32[64, 64] = aten::mm(%t_1, %threshold_backward)  #{phase=backward}
  %t_2 : f32[64, 64]{1, 64} = aten::t(%mm_1)  #{phase=backward}
  %reduce_scatter_tensor : f32[32, 64] = _c10d_functional::reduce_scatter_tensor(%t_2, "sum", 2, "dp")  #{phase=backward}
  %wait_tensor_1 : f32[32, 64] = _c10d_functional::wait_tensor(%reduce_scatter_tensor)  #{phase=backward}
  %t_3 : f32[64, 64]{1, 64} = aten::t(%t)  #{phase=backward}
  %mm_2 : f32[8, 64] = aten::mm(%threshold_backward, %t_3)  #{phase=backward}
  return (%sum, %wait_tensor_1, %mm_2))");
  passes::RoundTripResult rt = passes::partition_round_trip(*g);
  EXPECT_TRUE(rt.agree()) << rt.report();
  EXPECT_EQ(rt.first_summary.forward_all_gathers, 1);
  EXPECT_EQ(rt.second_summary.forward_all_gathers, 1);
  // The first backward's recomputed chain keeps MUST_RECOMPUTE through the re-import.
  auto joined = passes::join_module(rt.first);
  int64_t tagged_recomputed = 0;
  for (const ir::Node* n : joined->nodes())
    if (n->meta().custom.count("recomputed_from")) {
      EXPECT_EQ(n->meta().recompute, ir::RecomputePolicy::MustRecompute) << ir::print_node(*n);
      ++tagged_recomputed;
    }
  EXPECT_EQ(tagged_recomputed, 3);
  for (const std::string& saved : rt.second_summary.saved) EXPECT_NE(saved.rfind("wait_tensor", 0), 0u) << saved;
}

}  // namespace
}  // namespace passcheck
