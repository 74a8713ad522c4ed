// Unit tests for the activation-checkpoint policies (framework/check/ac_policy.h): policy
// names, the default save list (base names in any namespace, all_gather excluded), the
// eager policy's per-layer mm counter, the op policy's global counter and first-add rule,
// the full policy's RNG rule and "FQN_PATTERN::OP" selectors (parsing, fnmatch per
// component, errors naming the selector), and layer_of.
#include "framework/check/ac_policy.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace passcheck::check {
namespace {

using P = ir::RecomputePolicy;

TEST(AcPolicyNames, ParseAndPrintRoundTrip) {
  for (const char* name : {"default", "eager", "full", "op"}) EXPECT_STREQ(to_string(parse_ac_policy(name)), name);
  try {
    parse_ac_policy("selective");
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'selective'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("default, eager, full, op"), std::string::npos) << e.what();
  }
}

TEST(AcPolicyLists, OpBaseNameStripsNamespaceAndOverload) {
  EXPECT_EQ(op_base_name("aten::max.dim"), "max");
  EXPECT_EQ(op_base_name("_c10d_functional::all_to_all_single"), "all_to_all_single");
  EXPECT_EQ(op_base_name("mm"), "mm");
  EXPECT_EQ(op_base_name("aten::add_.Tensor"), "add_");
}

TEST(AcPolicyLists, DefaultSaveListComparesBaseNames) {
  for (const char* op :
       {"mm", "bmm", "addmm", "linear", "convolution", "convolution_backward", "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_attention_math", "_flash_attention_forward", "_efficient_attention_forward",
        "flex_attention", "max", "topk", "_scaled_mm", "reduce_scatter_tensor", "all_to_all"})
    EXPECT_TRUE(in_default_save_list(op)) << op;
  // Any namespace, any overload.
  EXPECT_TRUE(in_default_save_list("aten::max.dim"));
  EXPECT_TRUE(in_default_save_list("aten::mm.default"));
  EXPECT_TRUE(in_default_save_list("_c10d_functional::reduce_scatter_tensor"));
  EXPECT_TRUE(in_default_save_list("_c10d_functional::all_to_all_single"));
  // all_gather is deliberately not saved; neither are cheap pointwise ops.
  EXPECT_FALSE(in_default_save_list("all_gather_into_tensor"));
  EXPECT_FALSE(in_default_save_list("_c10d_functional::all_gather_into_tensor"));
  for (const char* op : {"add", "mul", "gelu", "softmax", "_softmax", "maximum", "max_pool2d", "mm_backward", "amax"})
    EXPECT_FALSE(in_default_save_list(op)) << op;
}

TEST(AcPolicyLists, MatmulCountingAndAttentionKernels) {
  EXPECT_TRUE(is_matmul_for_counting("mm"));
  EXPECT_TRUE(is_matmul_for_counting("aten::linear"));
  EXPECT_FALSE(is_matmul_for_counting("bmm"));
  EXPECT_FALSE(is_matmul_for_counting("addmm"));
  EXPECT_TRUE(is_attention_kernel("aten::_scaled_dot_product_flash_attention"));
  EXPECT_TRUE(is_attention_kernel("flex_attention"));
  EXPECT_FALSE(is_attention_kernel("mm"));
  EXPECT_FALSE(is_attention_kernel("softmax"));
}

TEST(AcPolicyDefault, SaveListIsMustSaveRestPreferRecompute) {
  AcPolicy p(AcPolicyKind::Default);
  EXPECT_EQ(p.decide("mm", "layers.0.attention.wqkv", 0, false), P::MustSave);
  EXPECT_EQ(p.decide("mm", "layers.0.attention.wo", 0, false), P::MustSave);  // no counter
  EXPECT_EQ(p.decide("bmm", "layers.0.attention", 0, false), P::MustSave);
  EXPECT_EQ(p.decide("max", "layers.0", 0, false), P::MustSave);
  EXPECT_EQ(p.decide("add", "layers.0", 0, false), P::PreferRecompute);
  EXPECT_EQ(p.decide("all_gather_into_tensor", "layers.0", 0, false), P::PreferRecompute);
  // Random ops are not special outside the full policy.
  EXPECT_EQ(p.decide("bernoulli_", "layers.0", 0, true), P::PreferRecompute);
}

TEST(AcPolicyEager, EveryOtherMmPerLayerCounterResetsOnLayerChange) {
  AcPolicy p(AcPolicyKind::Eager);
  std::vector<P> layer0, layer1;
  // 1st, 3rd, 5th mm of a layer saved; linear counts as an mm.
  layer0.push_back(p.decide("mm", "layers.0.attention.wqkv", 0, false));
  layer0.push_back(p.decide("bmm", "layers.0.attention", 0, false));  // save list, not counted
  layer0.push_back(p.decide("mm", "layers.0.attention.wo", 0, false));
  layer0.push_back(p.decide("add", "layers.0", 0, false));
  layer0.push_back(p.decide("linear", "layers.0.feed_forward.w1", 0, false));
  layer0.push_back(p.decide("mm", "layers.0.feed_forward.w3", 0, false));
  layer0.push_back(p.decide("mm", "layers.0.feed_forward.w2", 0, false));
  EXPECT_EQ(layer0, (std::vector<P>{P::MustSave, P::MustSave, P::PreferRecompute, P::PreferRecompute, P::MustSave,
                                    P::PreferRecompute, P::MustSave}));
  // A new layer starts counting from one again (a global counter would say recompute).
  layer1.push_back(p.decide("mm", "layers.1.attention.wqkv", 1, false));
  layer1.push_back(p.decide("mm", "layers.1.attention.wo", 1, false));
  EXPECT_EQ(layer1, (std::vector<P>{P::MustSave, P::PreferRecompute}));
  // Leaving the layers also changes the layer id.
  EXPECT_EQ(p.decide("mm", "output", std::nullopt, false), P::MustSave);
}

TEST(AcPolicyOp, GlobalMmCounterAttentionAndFirstAddOfEachBlock) {
  AcPolicy p(AcPolicyKind::Op);
  EXPECT_EQ(p.decide("mm", "layers.0.attention.wqkv", 0, false), P::MustSave);  // 1
  EXPECT_EQ(p.decide("add", "layers.0", 0, false), P::MustSave);                // first add of block 0
  EXPECT_EQ(p.decide("add", "layers.0", 0, false), P::PreferRecompute);         // second add
  EXPECT_EQ(p.decide("_scaled_dot_product_flash_attention", "layers.0.attention", 0, false), P::MustSave);
  EXPECT_EQ(p.decide("mm", "layers.0.attention.wo", 0, false), P::PreferRecompute);  // 2
  EXPECT_EQ(p.decide("mm", "layers.0.feed_forward.w1", 0, false), P::MustSave);      // 3
  // Layer 1: the counter is not reset (the 4th mm overall is even), the add rule is.
  EXPECT_EQ(p.decide("mm", "layers.1.attention.wqkv", 1, false), P::PreferRecompute);  // 4
  EXPECT_EQ(p.decide("add", "layers.1", 1, false), P::MustSave);
  EXPECT_EQ(p.decide("add", "layers.1", 1, false), P::PreferRecompute);
  EXPECT_EQ(p.decide("linear", "layers.1.feed_forward.w2", 1, false), P::MustSave);  // 5
  EXPECT_EQ(p.decide("bmm", "layers.1.attention", 1, false), P::PreferRecompute);    // not counted, not saved
  EXPECT_EQ(p.decide("mul", "layers.1", 1, false), P::PreferRecompute);
}

TEST(AcPolicyFull, RandomAndSelectedOpsSavedEverythingElseMustRecompute) {
  AcPolicy p(AcPolicyKind::Full, {OpSelector::parse("layers.*.attention.wqkv::mm"), OpSelector::parse("layers.1::*")});
  EXPECT_EQ(p.decide("bernoulli_", "layers.0.feed_forward", 0, true), P::MustSave);
  EXPECT_EQ(p.decide("mm", "layers.0.attention.wqkv", 0, false), P::MustSave);
  EXPECT_EQ(p.decide("aten::mm", "layers.7.attention.wqkv", 7, false), P::MustSave);  // qualified name
  EXPECT_EQ(p.decide("mm", "layers.0.attention.wo", 0, false), P::MustRecompute);
  EXPECT_EQ(p.decide("bmm", "layers.0.attention.wqkv", 0, false), P::MustRecompute);  // wrong op
  EXPECT_EQ(p.decide("add", "layers.1", 1, false), P::MustSave);                      // "*" op
  EXPECT_EQ(p.decide("add", "layers.1.attention", 1, false), P::MustRecompute);       // more components
  AcPolicy plain(AcPolicyKind::Full);
  EXPECT_EQ(plain.decide("mm", "layers.0.attention.wqkv", 0, false), P::MustRecompute);
  EXPECT_EQ(plain.decide("normal_", "layers.0", 0, true), P::MustSave);
}

TEST(OpSelectorTest, ParsesComponentsAndMatchesPerComponent) {
  OpSelector s = OpSelector::parse("layers.[0-2].feed_forward.w?::mm");
  EXPECT_EQ(s.fqn_components, (std::vector<std::string>{"layers", "[0-2]", "feed_forward", "w?"}));
  EXPECT_EQ(s.op, "mm");
  EXPECT_TRUE(s.matches("layers.2.feed_forward.w3", "mm"));
  EXPECT_FALSE(s.matches("layers.3.feed_forward.w3", "mm"));
  EXPECT_FALSE(s.matches("layers.2.feed_forward.w13", "mm"));
  EXPECT_FALSE(s.matches("layers.2.feed_forward", "mm"));
  // "*" matches within one component only: it does not cross dots.
  OpSelector star = OpSelector::parse("layers.*::*");
  EXPECT_TRUE(star.matches("layers.10", "anything"));
  EXPECT_FALSE(star.matches("layers.1.attention", "mm"));
  EXPECT_FALSE(star.matches("", "mm"));
}

TEST(OpSelectorTest, MalformedSelectorsNameTheSelector) {
  for (const char* bad : {"layers.*", "::mm", "layers.*::", "layers..x::mm", ".layers::mm", "layers.*::aten::mm",
                          "layers.*::mm.default", "layers.*::m m"}) {
    try {
      OpSelector::parse(bad);
      FAIL() << "accepted " << bad;
    } catch (const std::invalid_argument& e) {
      std::string expected = std::string("invalid selector '") + bad + "': ";
      EXPECT_EQ(std::string(e.what()).rfind(expected, 0), 0u) << e.what();
      EXPECT_GT(std::string(e.what()).size(), expected.size()) << "no reason given";
    }
  }
}

TEST(LayerOf, ReadsTheIndexAfterLayers) {
  EXPECT_EQ(layer_of("layers.3.attention.wqkv"), 3);
  EXPECT_EQ(layer_of("layers.12"), 12);
  EXPECT_EQ(layer_of("layers.0.feed_forward"), 0);
  EXPECT_EQ(layer_of("layers"), std::nullopt);
  EXPECT_EQ(layer_of("layers."), std::nullopt);
  EXPECT_EQ(layer_of("layers.x.attention"), std::nullopt);
  EXPECT_EQ(layer_of("tok_embeddings"), std::nullopt);
  EXPECT_EQ(layer_of("model.layers.3"), std::nullopt);
  EXPECT_EQ(layer_of("layersX.3"), std::nullopt);
  EXPECT_EQ(layer_of(""), std::nullopt);
}

}  // namespace
}  // namespace passcheck::check
