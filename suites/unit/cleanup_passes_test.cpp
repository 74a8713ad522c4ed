// Tests of the cleanup passes (passes/cleanup): graph text in, graph text out, one
// intent per case and at least as many "must not change" cases as rewrites, since a
// cleanup pass that fires where it must not (merging two random draws, deleting an
// in-place update) silently changes training. Every case runs through the pipeline
// gate (changed claim checked against the hash, verifier after the pass) and then a
// second time, which must report no change (idempotence). The last tests run every
// cleanup pass on the traced two_matmul, mlp and llama3 graphs and require the
// executor's results to stay bit for bit equal.
#include "suites/support/test_support.h"
#include "framework/check/compare.h"
#include "framework/check/pipeline.h"
#include "framework/check/verifier.h"
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/exec/op_properties.h"
#include "framework/ir/text.h"
#include "oracles/training_driver.h"
#include "passes/cleanup/cleanup_passes.h"

#include <ATen/ATen.h>
#include "suites/support/pass_oracle.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

namespace passcheck {
namespace {

using check::PassRecord;
using check::Pipeline;

using testing::parse_graph_text;

// Runs `pipeline` (registered passes) on `input` through the gate and checks the
// printed result against `expected` (normalized through parse and print), the changed
// flag against whether the text changed, and that a second run changes nothing.
// Returns the first run's record for stat checks.
PassRecord expect_rewrite(const std::string& pipeline, const std::string& input, const std::string& expected) {
  auto g = parse_graph_text(input);
  const std::string before = g->print();
  const std::string want = parse_graph_text(expected)->print();
  std::vector<PassRecord> first = Pipeline::parse(pipeline).run(*g);
  EXPECT_EQ(g->print(), want) << pipeline;
  EXPECT_EQ(first.at(0).changed, want != before) << pipeline;
  std::vector<PassRecord> second = Pipeline::parse(pipeline).run(*g);
  EXPECT_FALSE(second.at(0).changed) << pipeline << " is not idempotent on this case";
  EXPECT_EQ(g->print(), want) << pipeline << " second run";
  return first.at(0);
}

// The "must not change" form: the pass leaves `input` exactly as it is.
void expect_unchanged(const std::string& pipeline, const std::string& input) {
  PassRecord r = expect_rewrite(pipeline, input, input);
  EXPECT_FALSE(r.changed);
}

// ---- dce ----------------------------------------------------------------------------

TEST(Dce, ErasesAnUnusedChainInOneRun) {
  // neg is unused; once it goes, relu is unused too.
  PassRecord r = expect_rewrite("dce", R"(graph(arg %x : f32[2]):
  %relu : f32[2] = aten::relu(%x)
  %neg : f32[2] = aten::neg(%relu)
  %exp : f32[2] = aten::exp(%x)
  return (%exp)
)",
                                R"(graph(arg %x : f32[2]):
  %exp : f32[2] = aten::exp(%x)
  return (%exp)
)");
  EXPECT_EQ(r.stats.at("erased_nodes"), 2);
}

TEST(Dce, TreatsAsyncAssertsAsPure) {
  // An assert guarding a value nobody reads goes, and with it what it checked.
  expect_rewrite("dce", R"(graph(arg %x : f32[2]):
  %gt : b8[2] = aten::gt.Scalar(%x, 0)
  %all : b8[] = aten::all(%gt)
  () = aten::_assert_async(%all)
  return (%x)
)",
                 R"(graph(arg %x : f32[2]):
  return (%x)
)");
}

TEST(Dce, KeepsAnInPlaceUpdateWithoutUsers) {
  // add_ writes %buf: its effect is the mutation, not its output.
  expect_unchanged("dce", R"(graph(buffer %buf : f32[2], arg %x : f32[2]):
  %add_ : f32[2] = aten::add_.Tensor(%buf, %x, 1)
  return (%x)
)");
}

TEST(Dce, KeepsAnUnusedRandomDraw) {
  // Dropping bernoulli would shift every later random number.
  expect_unchanged("dce", R"(graph(arg %x : f32[2]):
  %bernoulli : f32[2] = aten::bernoulli(%x, None)
  %randn : f32[2] = aten::randn([2], None, None, None, None)
  return (%x)
)");
}

TEST(Dce, KeepsCollectivesAndWaits) {
  // Every rank must run the same collectives, used or not.
  expect_unchanged("dce", R"(graph(arg %x : f32[2]):
  %all_reduce : f32[2] = _c10d_functional::all_reduce(%x, "sum", "dp")
  %wait_tensor : f32[2] = _c10d_functional::wait_tensor(%all_reduce)
  %ar2 : f32[2] = _c10d_functional::all_reduce(%x, "sum", "0")
  %wait2 : f32[2] = _c10d_functional::wait_tensor(%ar2)
  return (%x)
)");
}

TEST(Dce, KeepsRngStateOps) {
  // Reading and swapping the generator state brackets replayed random ops.
  expect_unchanged("dce", R"(graph(arg %x : f32[2]):
  %rng_state : u8[5056] = passcheck::rng_state(device("cpu"))
  return (%x)
)");
}

TEST(Dce, KeepsUnknownOperators) {
  // An operator the dispatcher does not know may have any effect.
  expect_unchanged("dce", R"(graph(arg %x : f32[2]):
  %op : f32[2] = mylib::mystery(%x)
  return (%x)
)");
}

// ---- remove-detach ------------------------------------------------------------------

TEST(RemoveDetach, ForwardsUsesToTheInput) {
  // Including graph outputs, and a detach of a detach.
  PassRecord r = expect_rewrite("remove-detach", R"(graph(arg %x : f32[2]):
  %detach : f32[2] = aten::detach(%x)
  %detach_1 : f32[2] = aten::detach(%detach)
  %relu : f32[2] = aten::relu(%detach_1)
  return (%relu, %detach)
)",
                                R"(graph(arg %x : f32[2]):
  %relu : f32[2] = aten::relu(%x)
  return (%relu, %x)
)");
  EXPECT_EQ(r.stats.at("erased_nodes"), 2);
  EXPECT_EQ(r.stats.at("rewired_uses"), 3);
}

TEST(RemoveDetach, LeavesInPlaceDetachAndOtherAliasesAlone) {
  // detach_ and alias are other operators; only aten::detach is an identity here.
  expect_unchanged("remove-detach", R"(graph(arg %x : f32[2]):
  %alias : f32[2] = aten::alias(%x)
  %detach_ : f32[2] = aten::detach_(%alias)
  return (%detach_)
)");
}

// ---- remove-identity-view -----------------------------------------------------------

TEST(RemoveIdentityView, RemovesViewsThatKeepTheShape) {
  // view, reshape (with an inferred -1) and _unsafe_view to the input's own sizes.
  expect_rewrite("remove-identity-view", R"(graph(arg %x : f32[2, 3]):
  %view : f32[2, 3] = aten::view(%x, [2, 3])
  %reshape : f32[2, 3] = aten::reshape(%view, [2, -1])
  %_unsafe_view : f32[2, 3] = aten::_unsafe_view(%reshape, [2, 3])
  %relu : f32[2, 3] = aten::relu(%_unsafe_view)
  return (%relu)
)",
                 R"(graph(arg %x : f32[2, 3]):
  %relu : f32[2, 3] = aten::relu(%x)
  return (%relu)
)");
}

TEST(RemoveIdentityView, RemovesAReshapeAliasWithTheInputsStrides) {
  // A non-contiguous input viewed with its own sizes and strides is itself.
  expect_rewrite("remove-identity-view", R"(graph(arg %x : f32[3, 2]{1, 3}):
  %_reshape_alias : f32[3, 2]{1, 3} = aten::_reshape_alias(%x, [3, 2], [1, 3])
  return (%_reshape_alias)
)",
                 R"(graph(arg %x : f32[3, 2]{1, 3}):
  return (%x)
)");
}

TEST(RemoveIdentityView, KeepsViewsThatChangeTheShape) {
  // [2, 3] -> [3, 2] and [6] are real reshapes.
  expect_unchanged("remove-identity-view", R"(graph(arg %x : f32[2, 3]):
  %view : f32[3, 2] = aten::view(%x, [3, 2])
  %reshape : f32[6] = aten::reshape(%x, [6])
  return (%view, %reshape)
)");
}

TEST(RemoveIdentityView, KeepsAReshapeAliasThatRestrides) {
  // Same sizes, other strides: a transposed reading of the storage, not the input.
  expect_unchanged("remove-identity-view", R"(graph(arg %x : f32[2, 2]):
  %_reshape_alias : f32[2, 2]{1, 2} = aten::_reshape_alias(%x, [2, 2], [1, 2])
  return (%_reshape_alias)
)");
}

TEST(RemoveIdentityView, KeepsADtypeView) {
  // view.dtype reinterprets bits; it is not a shape view.
  expect_unchanged("remove-identity-view", R"(graph(arg %x : f32[2]):
  %view : i32[2] = aten::view.dtype(%x, torch.int32)
  return (%view)
)");
}

TEST(RemoveIdentityView, SkipsWhenMetadataIsMissing) {
  // Without the output's TensorMeta the shape is not provable.
  auto g = parse_graph_text(R"(graph(arg %x : f32[2, 3]):
  %view : f32[2, 3] = aten::view(%x, [2, 3])
  return (%view)
)");
  g->find_value("view")->set_meta(std::nullopt);
  check::PassResult r = passes::remove_identity_view_pass(*g);
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(g->num_nodes(), 1u);
}

// ---- remove-b2b-transpose -----------------------------------------------------------

TEST(RemoveB2bTranspose, RemovesTOfTAndTheUnusedInnerT) {
  // t(t(w)) is w; the inner t has no other user and goes too.
  PassRecord r = expect_rewrite("remove-b2b-transpose", R"(graph(param %w : f32[4, 8], arg %x : f32[2, 4]):
  %t : f32[8, 4]{1, 8} = aten::t(%w)
  %t_1 : f32[4, 8] = aten::t(%t)
  %mm : f32[2, 8] = aten::mm(%x, %t_1)
  return (%mm)
)",
                                R"(graph(param %w : f32[4, 8], arg %x : f32[2, 4]):
  %mm : f32[2, 8] = aten::mm(%x, %w)
  return (%mm)
)");
  EXPECT_EQ(r.stats.at("erased_nodes"), 2);
}

TEST(RemoveB2bTranspose, RemovesTransposePairsWithTheSameDimsInEitherOrder) {
  // (0, 1) then (1, 0), and (-1, -2) then (1, 2) on a 3-d tensor.
  expect_rewrite("remove-b2b-transpose", R"(graph(arg %x : f32[2, 3, 4]):
  %transpose : f32[3, 2, 4]{4, 12, 1} = aten::transpose.int(%x, 0, 1)
  %transpose_1 : f32[2, 3, 4] = aten::transpose.int(%transpose, 1, 0)
  %transpose_2 : f32[2, 4, 3]{12, 1, 4} = aten::transpose.int(%x, -1, -2)
  %transpose_3 : f32[2, 3, 4] = aten::transpose.int(%transpose_2, 1, 2)
  %add : f32[2, 3, 4] = aten::add.Tensor(%transpose_1, %transpose_3, 1)
  return (%add)
)",
                 R"(graph(arg %x : f32[2, 3, 4]):
  %add : f32[2, 3, 4] = aten::add.Tensor(%x, %x, 1)
  return (%add)
)");
}

TEST(RemoveB2bTranspose, KeepsTheInnerTransposeWhileItHasOtherUsers) {
  // %t still feeds mm; only the outer t is forwarded.
  expect_rewrite("remove-b2b-transpose", R"(graph(param %w : f32[4, 8], arg %x : f32[2, 8]):
  %t : f32[8, 4]{1, 8} = aten::t(%w)
  %t_1 : f32[4, 8] = aten::t(%t)
  %mm : f32[2, 4] = aten::mm(%x, %t)
  return (%mm, %t_1)
)",
                 R"(graph(param %w : f32[4, 8], arg %x : f32[2, 8]):
  %t : f32[8, 4]{1, 8} = aten::t(%w)
  %mm : f32[2, 4] = aten::mm(%x, %t)
  return (%mm, %w)
)");
}

TEST(RemoveB2bTranspose, CollapsesFourTransposesInOneRun) {
  // Forwarding in order makes t(t(t(t(x)))) collapse fully, so a second run has no work.
  expect_rewrite("remove-b2b-transpose", R"(graph(arg %x : f32[2, 3]):
  %t : f32[3, 2]{1, 3} = aten::t(%x)
  %t_1 : f32[2, 3] = aten::t(%t)
  %t_2 : f32[3, 2]{1, 3} = aten::t(%t_1)
  %t_3 : f32[2, 3] = aten::t(%t_2)
  return (%t_3)
)",
                 R"(graph(arg %x : f32[2, 3]):
  return (%x)
)");
}

TEST(RemoveB2bTranspose, KeepsTransposesOfDifferentDims) {
  // (0, 1) then (1, 2) is a rotation of the dims, not an identity.
  expect_unchanged("remove-b2b-transpose", R"(graph(arg %x : f32[2, 3, 4]):
  %transpose : f32[3, 2, 4]{4, 12, 1} = aten::transpose.int(%x, 0, 1)
  %transpose_1 : f32[3, 4, 2]{4, 1, 12} = aten::transpose.int(%transpose, 1, 2)
  return (%transpose_1)
)");
}

TEST(RemoveB2bTranspose, KeepsASingleTransposeAndMixedPairs) {
  // t after transpose.int is not matched: only the same operator twice is.
  expect_unchanged("remove-b2b-transpose", R"(graph(arg %x : f32[2, 3]):
  %transpose : f32[3, 2]{1, 3} = aten::transpose.int(%x, 0, 1)
  %t : f32[2, 3] = aten::t(%transpose)
  %t_1 : f32[3, 2]{1, 3} = aten::t(%x)
  return (%t, %t_1)
)");
}

TEST(RemoveB2bTranspose, KeepsTransposesWithSymbolicDims) {
  // A dimension read from a graph value is not a provable match.
  expect_unchanged("remove-b2b-transpose", R"(graph(arg %x : f32[2, 3], arg %d : int):
  %transpose : f32[3, 2]{1, 3} = aten::transpose.int(%x, %d, 1)
  %transpose_1 : f32[2, 3] = aten::transpose.int(%transpose, %d, 1)
  return (%transpose_1)
)");
}

// ---- remove-identity-slice ----------------------------------------------------------

TEST(RemoveIdentitySlice, RemovesFullSlices) {
  // end equal to the size, end past it (INT64_MAX), end None, negative dim.
  PassRecord r = expect_rewrite("remove-identity-slice", R"(graph(buffer %freqs : f32[16, 8]):
  %slice : f32[16, 8] = aten::slice.Tensor(%freqs, 0, 0, 16, 1)
  %slice_1 : f32[16, 8] = aten::slice.Tensor(%slice, 1, 0, 9223372036854775807, 1)
  %slice_2 : f32[16, 8] = aten::slice.Tensor(%slice_1, -1, None, None, 1)
  %slice_3 : f32[16, 8] = aten::slice.Tensor(%slice_2)
  %neg : f32[16, 8] = aten::neg(%slice_3)
  return (%neg)
)",
                                R"(graph(buffer %freqs : f32[16, 8]):
  %neg : f32[16, 8] = aten::neg(%freqs)
  return (%neg)
)");
  EXPECT_EQ(r.stats.at("erased_nodes"), 4);
}

TEST(RemoveIdentitySlice, KeepsASliceStartingPastZero) {
  // start 1 drops the first row.
  expect_unchanged("remove-identity-slice", R"(graph(arg %x : f32[16, 8]):
  %slice : f32[15, 8] = aten::slice.Tensor(%x, 0, 1, 16, 1)
  return (%slice)
)");
}

TEST(RemoveIdentitySlice, KeepsASliceEndingShortOfTheSize) {
  // end 8 of 16 keeps half.
  expect_unchanged("remove-identity-slice", R"(graph(arg %x : f32[16, 8]):
  %slice : f32[8, 8] = aten::slice.Tensor(%x, 0, 0, 8, 1)
  return (%slice)
)");
}

TEST(RemoveIdentitySlice, KeepsAStridedSlice) {
  // step 2 takes every other row even over the full range.
  expect_unchanged("remove-identity-slice", R"(graph(arg %x : f32[16, 8]):
  %slice : f32[8, 8]{16, 1} = aten::slice.Tensor(%x, 0, 0, 16, 2)
  return (%slice)
)");
}

TEST(RemoveIdentitySlice, KeepsASliceWithASymbolicBound) {
  // end comes from a graph value: nothing provable about it.
  expect_unchanged("remove-identity-slice", R"(graph(arg %x : f32[16, 8], arg %n : int):
  %slice : f32[16, 8] = aten::slice.Tensor(%x, 0, 0, %n, 1)
  return (%slice)
)");
}

// ---- normalize-views ----------------------------------------------------------------

TEST(NormalizeViews, RewritesViewAndUnsafeViewAsReshape) {
  // Names, types and metadata stay; only the operator changes.
  PassRecord r = expect_rewrite("normalize-views", R"(graph(arg %x : f32[2, 3]):
  %view : f32[3, 2] = aten::view(%x, [3, 2])  #{fqn="layer", seq=4}
  %mm : f32[3, 3] = aten::mm(%view, %x)
  %_unsafe_view : f32[9] = aten::_unsafe_view(%mm, [9])  #{phase=backward}
  return (%_unsafe_view, %view)
)",
                                R"(graph(arg %x : f32[2, 3]):
  %view : f32[3, 2] = aten::reshape(%x, [3, 2])  #{fqn="layer", seq=4}
  %mm : f32[3, 3] = aten::mm(%view, %x)
  %_unsafe_view : f32[9] = aten::reshape(%mm, [9])  #{phase=backward}
  return (%_unsafe_view, %view)
)");
  EXPECT_EQ(r.stats.at("rewritten_nodes"), 2);
}

TEST(NormalizeViews, RewritesANonContiguousViewKeepingItsStrides) {
  // A view of a split piece: reshape returns the same view, strides included.
  expect_rewrite("normalize-views", R"(graph(arg %x : f32[2, 6]):
  %a : f32[2, 3]{6, 1}, %b : f32[2, 3]{6, 1} = aten::split.Tensor(%x, 3, 1)
  %view : f32[2, 3, 1]{6, 1, 1} = aten::view(%a, [2, 3, 1])
  return (%view, %b)
)",
                 R"(graph(arg %x : f32[2, 6]):
  %a : f32[2, 3]{6, 1}, %b : f32[2, 3]{6, 1} = aten::split.Tensor(%x, 3, 1)
  %view : f32[2, 3, 1]{6, 1, 1} = aten::reshape(%a, [2, 3, 1])
  return (%view, %b)
)");
}

TEST(NormalizeViews, LeavesReshapeAndReshapeAliasAlone) {
  // Already normal, and _reshape_alias carries strides a reshape cannot express.
  expect_unchanged("normalize-views", R"(graph(arg %x : f32[2, 3]):
  %reshape : f32[3, 2] = aten::reshape(%x, [3, 2])
  %_reshape_alias : f32[6] = aten::_reshape_alias(%x, [6], [1])
  return (%reshape, %_reshape_alias)
)");
}

TEST(NormalizeViews, LeavesDtypeViewsAlone) {
  // view.dtype is another overload with other semantics.
  expect_unchanged("normalize-views", R"(graph(arg %x : f32[2]):
  %view : i32[2] = aten::view.dtype(%x, torch.int32)
  return (%view)
)");
}

// ---- canonicalize -------------------------------------------------------------------

TEST(Canonicalize, RunsEveryCanonicalization) {
  // detach, identity view, b2b transpose, identity slice, then view -> reshape.
  expect_rewrite("canonicalize", R"(graph(param %w : f32[4, 8], arg %x : f32[2, 4]):
  %detach : f32[4, 8] = aten::detach(%w)
  %view : f32[4, 8] = aten::view(%detach, [4, 8])
  %t : f32[8, 4]{1, 8} = aten::t(%view)
  %t_1 : f32[4, 8] = aten::t(%t)
  %slice : f32[2, 4] = aten::slice.Tensor(%x, 0, 0, 2, 1)
  %mm : f32[2, 8] = aten::mm(%slice, %t_1)
  %view_1 : f32[16] = aten::view(%mm, [16])
  return (%view_1)
)",
                 R"(graph(param %w : f32[4, 8], arg %x : f32[2, 4]):
  %mm : f32[2, 8] = aten::mm(%x, %w)
  %view_1 : f32[16] = aten::reshape(%mm, [16])
  return (%view_1)
)");
}

TEST(Canonicalize, ReachesAFixpointWhenASliceSeparatedTwoTransposes) {
  // Removing the slice puts the two t's back to back after the transpose step ran;
  // canonicalize repeats its round, so one run finishes the job.
  PassRecord r = expect_rewrite("canonicalize", R"(graph(arg %x : f32[2, 3]):
  %t : f32[3, 2]{1, 3} = aten::t(%x)
  %slice : f32[3, 2]{1, 3} = aten::slice.Tensor(%t, 0, 0, 3, 1)
  %t_1 : f32[2, 3] = aten::t(%slice)
  return (%t_1)
)",
                                R"(graph(arg %x : f32[2, 3]):
  return (%x)
)");
  EXPECT_EQ(r.stats.at("rounds"), 3);  // slice round, transpose round, quiet round
}

TEST(Canonicalize, LeavesACanonicalGraphAlone) {
  // reshapes that change shape, a single t, a partial slice: nothing to do.
  expect_unchanged("canonicalize", R"(graph(arg %x : f32[4, 6]):
  %reshape : f32[6, 4] = aten::reshape(%x, [6, 4])
  %t : f32[4, 6]{1, 4} = aten::t(%reshape)
  %slice : f32[2, 6]{1, 4} = aten::slice.Tensor(%t, 0, 0, 2, 1)
  return (%slice)
)");
}

// ---- cse ----------------------------------------------------------------------------

TEST(Cse, MergesIdenticalComputationsKeepingTheFirst) {
  // The second mm and, once merged, the second relu repeat the first ones.
  PassRecord r = expect_rewrite("cse", testing::kRepeatedMmReluGraph,
                                R"(graph(param %w : f32[4, 4], arg %x : f32[2, 4]):
  %mm : f32[2, 4] = aten::mm(%x, %w)  #{seq=0}
  %relu : f32[2, 4] = aten::relu(%mm)
  %add : f32[2, 4] = aten::add.Tensor(%relu, %relu, 1)  #{phase=backward}
  return (%add, %mm)
)");
  EXPECT_EQ(r.stats.at("erased_nodes"), 2);
  EXPECT_EQ(r.stats.at("rewired_uses"), 3);
}

TEST(Cse, MergesFactoryCallsWithEqualConstants) {
  // Two ones([16, 16], bool) masks, as llama3's attention layers build them.
  expect_rewrite("cse", R"(graph(arg %x : f32[2]):
  %ones : b8[16, 16] = aten::ones([16, 16], torch.bool, None, device("cpu"), None)
  %ones_1 : b8[16, 16] = aten::ones([16, 16], torch.bool, None, device("cpu"), None)
  %both : b8[16, 16] = aten::logical_and(%ones, %ones_1)
  return (%both)
)",
                 R"(graph(arg %x : f32[2]):
  %ones : b8[16, 16] = aten::ones([16, 16], torch.bool, None, device("cpu"), None)
  %both : b8[16, 16] = aten::logical_and(%ones, %ones)
  return (%both)
)");
}

TEST(Cse, KeepsTwoReturnedDuplicatesDistinct) {
  // Merged, the graph would return one tensor for two outputs: a write into one would
  // change the other (guard distinct-outputs), also when one is returned through a view.
  for (const char* ret : {"return (%ones, %ones_1)", "return (%ones, %v)"}) {
    const std::string text = std::string(R"(graph(arg %x : f32[2]):
  %ones : b8[16, 16] = aten::ones([16, 16], torch.bool, None, device("cpu"), None)
  %ones_1 : b8[16, 16] = aten::ones([16, 16], torch.bool, None, device("cpu"), None)
  %v : b8[256] = aten::view(%ones_1, [256])
  )") + ret + "\n";
    auto g = ir::parse_graph(text, "t");
    const std::string before = g->print();
    auto records = check::Pipeline::parse("cse").run(*g);
    EXPECT_EQ(g->print(), before) << ret;
    EXPECT_EQ(records.at(0).guards_refused.count("distinct-outputs"), 1u) << ret;
  }
}

TEST(Cse, MergesMultiOutputNodes) {
  // Both outputs of the duplicate max.dim go to the first one's outputs.
  expect_rewrite("cse", R"(graph(arg %x : f32[4, 3]):
  %values : f32[4], %indices : i64[4] = aten::max.dim(%x, 1, False)
  %values_1 : f32[4], %indices_1 : i64[4] = aten::max.dim(%x, 1, False)
  %add : f32[4] = aten::add.Tensor(%values, %values_1, 1)
  return (%add, %indices_1)
)",
                 R"(graph(arg %x : f32[4, 3]):
  %values : f32[4], %indices : i64[4] = aten::max.dim(%x, 1, False)
  %add : f32[4] = aten::add.Tensor(%values, %values, 1)
  return (%add, %indices)
)");
}

TEST(Cse, KeepsNodesWithDifferentConstants) {
  // alpha 1 and alpha 2 are different sums.
  expect_unchanged("cse", R"(graph(arg %x : f32[2], arg %y : f32[2]):
  %add : f32[2] = aten::add.Tensor(%x, %y, 1)
  %add_1 : f32[2] = aten::add.Tensor(%x, %y, 2)
  %add_2 : f32[2] = aten::add.Tensor(%y, %x, 1)
  return (%add, %add_1, %add_2)
)");
}

TEST(Cse, KeepsTwoRandomDraws) {
  // Two randn calls draw different numbers.
  expect_unchanged("cse", R"(graph(arg %x : f32[2]):
  %randn : f32[2] = aten::randn([2], None, None, None, None)
  %randn_1 : f32[2] = aten::randn([2], None, None, None, None)
  %bernoulli : f32[2] = aten::bernoulli(%x, None)
  %bernoulli_1 : f32[2] = aten::bernoulli(%x, None)
  return (%randn, %randn_1, %bernoulli, %bernoulli_1)
)");
}

TEST(Cse, DoesNotMergeAcrossAMutationOfTheInput) {
  // add_ changes %x between the two muls.
  expect_unchanged("cse", R"(graph(arg %x : f32[2]):
  %mul : f32[2] = aten::mul.Tensor(%x, %x)
  %add_ : f32[2] = aten::add_.Scalar(%x, 1, 1)
  %mul_1 : f32[2] = aten::mul.Tensor(%x, %x)
  return (%mul, %mul_1)
)");
}

TEST(Cse, DoesNotMergeIntoAResultThatIsLaterWritten) {
  // relu_1 is computed before the add_, but add_ then writes %relu: merging would
  // hand the written value to relu_1's users.
  expect_unchanged("cse", R"(graph(arg %x : f32[2]):
  %relu : f32[2] = aten::relu(%x)
  %relu_1 : f32[2] = aten::relu(%x)
  %add_ : f32[2] = aten::add_.Scalar(%relu, 1, 1)
  return (%add_, %relu_1)
)");
}

TEST(Cse, DoesNotMergeUninitializedAllocations) {
  // Two empty buffers must stay two buffers.
  expect_unchanged("cse", R"(graph(arg %x : f32[2]):
  %empty : f32[2] = aten::empty.memory_format([2], None, None, None, None, None)
  %empty_1 : f32[2] = aten::empty.memory_format([2], None, None, None, None, None)
  %empty_like : f32[2] = aten::empty_like(%x, None, None, None, None, None)
  %empty_like_1 : f32[2] = aten::empty_like(%x, None, None, None, None, None)
  return (%empty, %empty_1, %empty_like, %empty_like_1)
)");
}

TEST(Cse, DoesNotMergeViews) {
  // Views alias their input (split's pieces too); merging them would merge writes
  // through them.
  expect_unchanged("cse", R"(graph(arg %x : f32[2, 3]):
  %t : f32[3, 2]{1, 3} = aten::t(%x)
  %t_1 : f32[3, 2]{1, 3} = aten::t(%x)
  %view : f32[6] = aten::view(%x, [6])
  %view_1 : f32[6] = aten::view(%x, [6])
  %a : f32[1, 3], %b : f32[1, 3] = aten::split.Tensor(%x, 1, 0)
  %c : f32[1, 3], %d : f32[1, 3] = aten::split.Tensor(%x, 1, 0)
  return (%t, %t_1, %view, %view_1, %a, %d)
)");
}

TEST(Cse, DoesNotMergeCollectives) {
  // Each collective is a separate exchange between ranks.
  expect_unchanged("cse", R"(graph(arg %x : f32[2]):
  %all_reduce : f32[2] = _c10d_functional::all_reduce(%x, "sum", "dp")
  %wait_tensor : f32[2] = _c10d_functional::wait_tensor(%all_reduce)
  %all_reduce_1 : f32[2] = _c10d_functional::all_reduce(%x, "sum", "dp")
  %wait_tensor_1 : f32[2] = _c10d_functional::wait_tensor(%all_reduce_1)
  return (%wait_tensor, %wait_tensor_1)
)");
}

TEST(Cse, DoesNotUndoRematerialization) {
  // The recomputed mm is a deliberate duplicate, made so that the original's result
  // need not stay alive until the backward.
  expect_unchanged("cse", R"(graph(param %w : f32[4, 4], arg %x : f32[2, 4]):
  %mm : f32[2, 4] = aten::mm(%x, %w)  #{recompute=must_recompute}
  %sum : f32[] = aten::sum(%mm, None)  #{phase=loss}
  %mm_r : f32[2, 4] = aten::mm(%x, %w)  #{phase=backward, recompute=must_recompute, custom={"recomputed_from": "mm"}}
  return (%sum, %mm_r)
)");
}

// ---- op properties the passes rely on -----------------------------------------------

TEST(OpProperties, ClassifiesFromSchemasTagsAndNames) {
  auto g = parse_graph_text(R"(graph(arg %x : f32[2]):
  %add_ : f32[2] = aten::add_.Tensor(%x, %x, 1)
  %t : f32[2] = aten::t(%x)
  %relu : f32[2] = aten::relu(%x)
  %randn : f32[2] = aten::randn([2], None, None, None, None)
  %native_dropout : f32[2], %mask : b8[2] = aten::native_dropout(%x, 0.5, True)
  %empty : f32[2] = aten::empty.memory_format([2], None, None, None, None, None)
  %ar : f32[2] = _c10d_functional::all_reduce(%x, "sum", "dp")
  %ar_wait : f32[2] = _c10d_functional::wait_tensor(%ar)
  %rng_state : u8[5056] = passcheck::rng_state(device("cpu"))
  () = aten::_assert_async(%x)
  %u : f32[2] = mylib::mystery(%x)
  return (%x)
)");
  std::map<std::string, const ir::Node*> by_op;
  for (const ir::Node* n : g->nodes()) by_op[n->op()] = n;
  const ir::Node& add_ = *by_op.at("aten::add_.Tensor");
  EXPECT_TRUE(exec::is_mutating(add_));
  EXPECT_TRUE(exec::aliases_input(add_));
  EXPECT_TRUE(exec::has_side_effects(add_));
  const ir::Node& t = *by_op.at("aten::t");
  EXPECT_FALSE(exec::is_mutating(t));
  EXPECT_TRUE(exec::aliases_input(t));
  const ir::Node& relu = *by_op.at("aten::relu");
  EXPECT_FALSE(exec::is_mutating(relu) || exec::aliases_input(relu) || exec::is_random(relu) ||
               exec::has_side_effects(relu) || exec::is_collective(relu));
  EXPECT_TRUE(exec::is_random(*by_op.at("aten::randn")));
  EXPECT_TRUE(exec::is_random(*by_op.at("aten::native_dropout")));
  EXPECT_TRUE(exec::is_uninitialized_allocation(*by_op.at("aten::empty.memory_format")));
  EXPECT_FALSE(exec::is_uninitialized_allocation(relu));
  EXPECT_TRUE(exec::is_collective(*by_op.at("_c10d_functional::all_reduce")));
  EXPECT_TRUE(exec::has_side_effects(*by_op.at("passcheck::rng_state")));
  const ir::Node& assert_async = *by_op.at("aten::_assert_async");
  EXPECT_TRUE(exec::is_async_assert(assert_async));
  EXPECT_FALSE(exec::has_side_effects(assert_async));
  const ir::Node& unknown = *by_op.at("mylib::mystery");
  EXPECT_TRUE(exec::is_mutating(unknown));
  EXPECT_TRUE(exec::has_side_effects(unknown));
}

// ---- traced models: verifier clean, results bit for bit equal -----------------------

struct TracedModel {
  std::shared_ptr<ir::Graph> graph;
  std::vector<c10::IValue> inputs;
  std::vector<c10::IValue> reference;  // outputs of the unpassed graph
};

// Traced once per process: the traces are the slow part.
const TracedModel& traced(const std::string& name) {
  static std::map<std::string, TracedModel> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  models::SubjectOptions options;
  std::string model = name;
  if (name == "llama3" || name == "llama3-flex") {
    options = {0, c10::Device(c10::DeviceType::CPU), 1, 16};
    model = "llama3";
    if (name == "llama3-flex") options.attention = "flex";  // a causal mask built per layer
  }
  auto subject = models::make_subject(model, options);
  trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), false);
  TracedModel m;
  m.graph = std::shared_ptr<ir::Graph>(program.graph().clone());
  m.inputs = exec::make_inputs(*m.graph, exec::InputOptions{});
  m.reference = exec::Executor(*m.graph).run(m.inputs);
  return cache.emplace(name, std::move(m)).first->second;
}

// Runs `pipeline` on a copy of the model's graph through the gate, checks a second run
// changes nothing, executes the result (checking every output against its recorded
// metadata) and compares every graph output with the unpassed graph's bit for bit.
// Returns the first run's records.
std::vector<PassRecord> expect_preserves(const std::string& model, const std::string& pipeline) {
  const TracedModel& m = traced(model);
  return testing::expect_pass_preserves(*m.graph, m.inputs, pipeline);
}

class CleanupOnModels : public ::testing::TestWithParam<std::string> {};

TEST_P(CleanupOnModels, EveryCleanupPassPreservesResultsBitForBit) {
  for (const char* pass : {"dce", "remove-detach", "remove-identity-view", "remove-b2b-transpose",
                           "remove-identity-slice", "normalize-views", "canonicalize", "cse"})
    expect_preserves(GetParam(), pass);
}

TEST_P(CleanupOnModels, TheCleanupPipelinePreservesResultsBitForBit) {
  expect_preserves(GetParam(), "dce,canonicalize,cse,dce");
}

INSTANTIATE_TEST_SUITE_P(Models, CleanupOnModels, ::testing::Values("two_matmul", "mlp", "llama3", "llama3-flex"));

TEST(CleanupOnLlama3, ThePassesFindWorkOnTheTracedGraph) {
  // The bitwise checks above only mean something if the passes rewrote the graph:
  // llama3's backward transposes its forward transposes and reshapes with view and
  // _unsafe_view; with flex attention it builds one causal mask per layer.
  auto changed = [](const std::string& model, const std::string& pass) {
    std::vector<PassRecord> r = expect_preserves(model, pass);
    return !r.empty() && r[0].changed;
  };
  EXPECT_TRUE(changed("llama3", "remove-b2b-transpose"));
  EXPECT_TRUE(changed("llama3", "normalize-views"));
  EXPECT_TRUE(changed("llama3", "canonicalize"));
  EXPECT_TRUE(changed("llama3-flex", "cse"));
  std::unique_ptr<ir::Graph> g = traced("llama3").graph->clone();
  size_t before = g->num_nodes();
  Pipeline::parse("canonicalize,cse,dce").run(*g);
  EXPECT_LT(g->num_nodes(), before);
}

}  // namespace
}  // namespace passcheck
