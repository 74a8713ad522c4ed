// The AC tagging passes on tiny graphs: one intent per case, graph text in, tags out.
#include "framework/check/pipeline.h"
#include "framework/ir/text.h"

#include <gtest/gtest.h>

namespace passcheck {
namespace {

std::unique_ptr<ir::Graph> run(const std::string& text, const std::string& pipeline) {
  auto g = ir::parse_graph(text, "case.graph");
  check::Pipeline::parse(pipeline).run(*g);
  return g;
}

ir::RecomputePolicy tag_of(const ir::Graph& g, const std::string& value) {
  return g.find_value(value)->producer()->meta().recompute;
}

const char* kLayerPair = R"(graph(param %w : f32[4, 4], buffer %count : f32[4], arg %x : f32[4, 4]):
  %a : f32[4, 4] = aten::mm(%x, %w)  #{fqn="layers.0.ffn"}
  %b : f32[4, 4] = aten::relu(%a)  #{fqn="layers.0.ffn"}
  %c : f32[4, 4] = aten::sin(%b)  #{fqn="layers.1.ffn"}
  %n : f32[4] = aten::add_.Tensor(%count, %w, 1)  #{fqn="layers.1.router"}
  %s : f32[] = aten::sum(%c, None)  #{phase=loss, fqn="loss"}
  %g : f32[4, 4] = aten::cos(%b)  #{phase=backward, fqn="layers.1.ffn"}
  return (%s, %g)
)";

TEST(SacTag, DefaultPolicySavesMatmulsAndRecomputesTheRest) {
  auto g = run(kLayerPair, "ac-regions,sac-tag");
  EXPECT_EQ(tag_of(*g, "a"), ir::RecomputePolicy::MustSave);         // mm is in the save list
  EXPECT_EQ(tag_of(*g, "c"), ir::RecomputePolicy::PreferRecompute);  // sin is not
}

TEST(SacTag, RecomputableNodeFeedingAHigherLayerIsSaved) {
  // relu (layer 0) feeds sin (layer 1): recomputing it would cross the layer boundary.
  auto g = run(kLayerPair, "ac-regions,sac-tag");
  EXPECT_EQ(tag_of(*g, "b"), ir::RecomputePolicy::MustSave);
}

TEST(SacTag, InPlaceWriteToABufferIsNeverRecomputable) {
  auto g = run(kLayerPair, "ac-regions,sac-tag{policy=full}");
  EXPECT_EQ(tag_of(*g, "n"), ir::RecomputePolicy::MustSave);  // running it twice would double the update
  EXPECT_EQ(tag_of(*g, "c"), ir::RecomputePolicy::MustRecompute);
}

TEST(SacTag, LossAndBackwardNodesAreLeftUntagged) {
  auto g = run(kLayerPair, "ac-regions,sac-tag{policy=full}");
  EXPECT_EQ(tag_of(*g, "s"), ir::RecomputePolicy::Unset);
  EXPECT_EQ(tag_of(*g, "g"), ir::RecomputePolicy::Unset);
}

TEST(SacTag, ForceSaveWins) {
  std::string text = kLayerPair;
  text.replace(text.find("#{fqn=\"layers.1.ffn\"}"), 21, "#{fqn=\"layers.1.ffn\", custom={\"force_save\": \"1\"}}");
  auto g = run(text, "ac-regions,sac-tag{policy=full}");
  EXPECT_EQ(tag_of(*g, "c"), ir::RecomputePolicy::MustSave);
}

TEST(SacTag, GeneratorStateOpsAreSaved) {
  auto g = run(R"(graph(arg %x : f32[4]):
  %state : Tensor = passcheck::rng_state(device("cpu"))  #{fqn="layers.0"}
  %y : f32[4] = aten::sin(%x)  #{fqn="layers.0"}
  return (%state, %y)
)",
               "ac-regions,sac-tag{policy=full}");
  EXPECT_EQ(tag_of(*g, "state"), ir::RecomputePolicy::MustSave);
  EXPECT_EQ(tag_of(*g, "y"), ir::RecomputePolicy::MustRecompute);
}

TEST(SacTag, FullPolicySelectorsSaveMatchingNodes) {
  auto g = run(kLayerPair, "ac-regions,sac-tag{policy=full,selectors=[layers.*.ffn::sin]}");
  EXPECT_EQ(tag_of(*g, "c"), ir::RecomputePolicy::MustSave);
  EXPECT_EQ(tag_of(*g, "b"), ir::RecomputePolicy::MustRecompute);  // relu feeds a saved node now
}

TEST(SacTag, MalformedSelectorIsAnErrorNamingIt) {
  auto g = ir::parse_graph(kLayerPair, "case.graph");
  try {
    check::Pipeline::parse("sac-tag{policy=full,selectors=[layers.*.ffn]}").run(*g);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("invalid selector 'layers.*.ffn'"), std::string::npos) << e.what();
  }
}

TEST(SacTag, UnknownPolicyIsAnError) {
  EXPECT_THROW(check::Pipeline::parse("sac-tag{policy=lazy}"), check::PassConfigError);
}

TEST(ApplyAc, SelectiveEveryOtherLayer) {
  auto g = run(kLayerPair, "ac-regions,apply-ac{mode=selective,option=2}");
  EXPECT_EQ(tag_of(*g, "a"), ir::RecomputePolicy::MustRecompute);  // layer 0 is checkpointed
  EXPECT_EQ(tag_of(*g, "c"), ir::RecomputePolicy::Unset);          // layer 1 is not
}

TEST(ApplyAc, BadModeAndOptionAreErrors) {
  auto g = ir::parse_graph(kLayerPair, "case.graph");
  EXPECT_THROW(check::Pipeline::parse("apply-ac{mode=some}"), check::PassConfigError);
  try {
    check::Pipeline::parse("apply-ac{mode=selective,option=-3}").run(*g);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("option 'option': expected 'op' or a layer interval: expected an integer in [0, 1048576]; got '-3'"),
              std::string::npos)
        << e.what();
  }
}

TEST(AcRegions, NumbersLayersAndLeavesOthersUnset) {
  auto g = run(kLayerPair, "ac-regions");
  EXPECT_EQ(g->find_value("a")->producer()->meta().ac_region_id, 0);
  EXPECT_EQ(g->find_value("c")->producer()->meta().ac_region_id, 1);
  EXPECT_EQ(g->find_value("s")->producer()->meta().ac_region_id, std::nullopt);
}

}  // namespace
}  // namespace passcheck
