// The chunk and concretize passes on hand-made symbolic graphs: the rewrite's shape,
// its claims (proved by Z3), execution against a hand-computed per-chunk reference,
// every error the spec lists, and the chunking mutants (bugs 9 and 10).
#include "suites/support/test_support.h"
#include "framework/check/ac_policy.h"
#include "framework/check/chunk_properties.h"
#include "framework/check/pipeline.h"
#include "framework/check/verifier.h"
#include "framework/exec/executor.h"
#include "framework/exec/grouped_mm.h"
#include "framework/ir/text.h"
#include "framework/sym/prover.h"
#include "passes/chunk/chunk_passes.h"
#include "suites/mutants/mutants.h"

#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace passcheck {
namespace {

using ::testing::HasSubstr;

const char* const kLayerGraph = testing::kChunkableLayerGraph;

using testing::parse_graph_text;

check::PassResult run_pass(const std::string& pipeline, ir::Graph& graph,
                           const check::PassRegistry& registry = mutants::registry_with_mutants()) {
  auto records = check::Pipeline::parse(pipeline, registry).run(graph);
  check::PassResult r;
  r.changed = records.back().changed;
  r.stats = records.back().stats;
  return r;
}

size_t count_op(const ir::Graph& g, const std::string& op) {
  size_t n = 0;
  for (const ir::Node* node : g.nodes()) n += node->op() == op;
  return n;
}

TEST(ChunkPass, SplitsDuplicatesChainsAndMaterializes) {
  auto g = parse_graph_text(kLayerGraph);
  check::PassResult r = run_pass("chunk{early-accumulation=false}", *g);
  EXPECT_EQ(r.stats.at("regions"), 1);
  EXPECT_EQ(r.stats.at("split_live_ins"), 1);
  EXPECT_EQ(r.stats.at("chunked_nodes"), 4);  // mm, relu, colsum, the counter update
  EXPECT_EQ(r.stats.at("materialized_cat"), 1);
  EXPECT_EQ(r.stats.at("mutation_chains"), 1);
  EXPECT_EQ(count_op(*g, "aten::t"), 1u) << "parameter preparation stays shared";
  EXPECT_EQ(count_op(*g, "aten::mm"), 2u);
  ASSERT_NE(g->find_value("mm_chunk0"), nullptr);
  ASSERT_NE(g->find_value("mm_chunk1"), nullptr);
  EXPECT_EQ(g->find_value("mm_chunk1")->meta()->sym_sizes()[0].to_string(), "floordiv(s0, 2)");
  const ir::Value* upd1 = g->find_value("upd_chunk1");
  ASSERT_NE(upd1, nullptr);
  EXPECT_EQ(upd1->producer()->arg(0).value, g->find_value("upd_chunk0")) << "chunk 1's update chains after chunk 0's";
  EXPECT_EQ(g->outputs()[0]->producer()->arg(0).value->producer()->op(), "aten::cat");
  EXPECT_TRUE(check::verify_graph(*g).empty());
  EXPECT_TRUE(check::check_chunk_invariants(*g).empty());
  const std::string text = g->print();
  EXPECT_THAT(text, HasSubstr("aten::split_with_sizes(%x, [sym(floordiv(s0, 2)), sym(floordiv(s0, 2))], 0)"));
  EXPECT_THAT(text, HasSubstr("\"chunk_role\": \"materialization\""));
  // The printed chunked graph parses back to itself, claims and symbols included.
  EXPECT_EQ(parse_graph_text(text)->print(), text);

  sym::ProofReport proofs = sym::prove_all(g->claims(), g->symbols());
  EXPECT_TRUE(proofs.all_proved()) << proofs.format();
  EXPECT_GE(proofs.results.size(), 4u);
}

TEST(ChunkPass, ExecutesLikeTheLayerRunTwiceOnHalves) {
  auto g = parse_graph_text(kLayerGraph);
  run_pass("chunk{early-accumulation=false},concretize", *g);
  EXPECT_TRUE(check::find_symbols(*g).empty());
  at::manual_seed(3);
  at::Tensor w = at::randn({8, 8}), x = at::randn({4, 8}), counts = at::zeros({8});
  exec::Executor executor(*g);
  auto out = executor.run({w, counts.clone(), x});
  // Reference: the layer on each half in order, as the eager-chunked oracle runs it.
  at::Tensor expected_counts = counts.clone();
  std::vector<at::Tensor> rows;
  for (int chunk = 0; chunk < 2; ++chunk) {
    at::Tensor r = at::relu(at::mm(x.slice(0, 2 * chunk, 2 * chunk + 2), w.t()));
    expected_counts.add_(r.sum({0}));
    rows.push_back(r);
  }
  at::Tensor expected_loss = at::cat(rows, 0).sum();
  EXPECT_TRUE(at::equal(out[0].toTensor(), expected_loss));
}

TEST(ChunkPass, CounterUpdatesRunTwiceInOrder) {
  auto g = parse_graph_text(kLayerGraph);
  run_pass("chunk{early-accumulation=false},concretize", *g);
  at::manual_seed(4);
  at::Tensor w = at::randn({8, 8}), x = at::randn({4, 8}), counts = at::randn({8});
  at::Tensor expected = counts.clone();
  for (int chunk = 0; chunk < 2; ++chunk)
    expected.add_(at::relu(at::mm(x.slice(0, 2 * chunk, 2 * chunk + 2), w.t())).sum({0}));
  exec::Executor(*g).run({w, counts, x});
  EXPECT_TRUE(at::equal(counts, expected));
}

TEST(ChunkPass, ParameterGradientPartialsAreAddedWithAProof) {
  // The backward of the layer: dW = t(mm(t(grad), x)) reduces over the chunked rows.
  const char* text = R"(symbol s0 in [2, 8] hint 8 multiple_of 2
graph(
    param %w : f32[8, 8],
    arg %x : f32[sym(s0), 8],
    arg %grad : f32[sym(s0), 8]):
  %mm : f32[sym(s0), 8] = aten::mm(%x, %w)  #{fqn="layers.0"}
  %gt : f32[8, sym(s0)]{1, 8} = aten::t(%grad)  #{phase=backward, fqn="layers.0"}
  %dw : f32[8, 8] = aten::mm(%gt, %x)  #{phase=backward, fqn="layers.0"}
  %dwt : f32[8, 8]{1, 8} = aten::t(%dw)  #{phase=backward, fqn="layers.0"}
  return (%mm, %dwt)
)";
  for (bool early : {false, true}) {
    auto g = parse_graph_text(text);
    check::PassResult r = run_pass(std::string("chunk{early-accumulation=") + (early ? "true" : "false") + "}", *g);
    EXPECT_EQ(r.stats.at("materialized_add"), 1);
    EXPECT_EQ(r.stats.at("early_accumulations"), early ? 1 : 0);
    bool partial_sum_claim = false;
    for (const sym::Claim& c : g->claims()) partial_sum_claim = partial_sum_claim || c.kind == "partial_sum";
    EXPECT_TRUE(partial_sum_claim);
    EXPECT_TRUE(sym::prove_all(g->claims(), g->symbols()).all_proved());
    EXPECT_EQ(count_op(*g, "aten::t"), early ? 3u : 4u) << "early accumulation runs the tail once on the sum";
    run_pass("concretize", *g);
    at::manual_seed(5);
    at::Tensor w = at::randn({8, 8}), x = at::randn({8, 8}), grad = at::randn({8, 8});
    auto out = exec::Executor(*g).run({w, x, grad});
    at::Tensor expected = at::add(at::mm(grad.slice(0, 0, 4).t(), x.slice(0, 0, 4)).t(),
                                  at::mm(grad.slice(0, 4, 8).t(), x.slice(0, 4, 8)).t());
    EXPECT_TRUE(at::equal(out[1].toTensor(), expected));
  }
}

TEST(ChunkPass, EarlyAccumulationBeforeANarrowingCastChangesNumericsWithinTolerance) {
  // f32 partial gradients cast to bf16 inside the region: without early accumulation the
  // two bf16 partials are added at the region boundary (what eager autograd does with
  // the bf16 leaf gradients); early accumulation adds the f32 partials right after the
  // reduction and casts the sum once. The numbers differ by bf16 rounding.
  const char* text = R"(symbol s0 in [2, 64] hint 64 multiple_of 2
graph(
    arg %x : f32[sym(s0), 16],
    arg %grad : f32[sym(s0), 16]):
  %gt : f32[16, sym(s0)]{1, 16} = aten::t(%grad)  #{phase=backward, fqn="layers.0"}
  %dw : f32[16, 16] = aten::mm(%gt, %x)  #{phase=backward, fqn="layers.0"}
  %dw16 : bf16[16, 16] = aten::_to_copy(%dw, torch.bfloat16)  #{phase=backward, fqn="layers.0"}
  %dwt : bf16[16, 16]{1, 16} = aten::t(%dw16)  #{phase=backward, fqn="layers.0"}
  return (%dwt)
)";
  auto late = parse_graph_text(text), early = parse_graph_text(text);
  run_pass("chunk{early-accumulation=false},concretize", *late);
  run_pass("chunk{early-accumulation=true},concretize", *early);
  const ir::Node* add = nullptr;
  for (const ir::Node* n : early->nodes())
    if (n->meta().custom.count("chunk_early_accumulation")) add = n;
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->output()->meta()->dtype, c10::ScalarType::Float) << "accumulates the f32 partials";
  EXPECT_EQ(count_op(*early, "aten::_to_copy"), 1u) << "the cast runs once, on the sum";
  at::manual_seed(6);
  at::Tensor x = at::randn({64, 16}), grad = at::randn({64, 16});
  at::Tensor a = exec::Executor(*late).run({x, grad})[0].toTensor().to(at::kFloat);
  at::Tensor b = exec::Executor(*early).run({x, grad})[0].toTensor().to(at::kFloat);
  at::Tensor exact = at::mm(grad.t(), x).t();
  EXPECT_FALSE(at::equal(a, b)) << "bf16 rounding of the partials shows";
  EXPECT_TRUE(at::allclose(a, exact, /*rtol=*/2e-2, /*atol=*/2e-2)) << (a - exact).abs().max();
  EXPECT_TRUE(at::allclose(b, exact, /*rtol=*/2e-2, /*atol=*/2e-2)) << (b - exact).abs().max();
}

TEST(ChunkPass, ScaledPartialSumIsStillAddedWithAProof) {
  // A gradient reduction multiplied by a parameter-derived factor (the gradient of
  // w / |w|): c*a0 + c*a1 is the scaled sum, so add materialization stays sound.
  const char* text = R"(symbol s0 in [2, 8] hint 8 multiple_of 2
graph(
    param %w : f32[8, 8],
    arg %x : f32[sym(s0), 8],
    arg %grad : f32[sym(s0), 8]):
  %gt : f32[8, sym(s0)]{1, 8} = aten::t(%grad)  #{phase=backward, fqn="layers.0"}
  %dw : f32[8, 8] = aten::mm(%gt, %x)  #{phase=backward, fqn="layers.0"}
  %sign : f32[8, 8] = aten::sign(%w)  #{phase=backward, fqn="layers.0"}
  %scaled : f32[8, 8] = aten::mul.Tensor(%dw, %sign)  #{phase=backward, fqn="layers.0"}
  return (%scaled)
)";
  auto g = parse_graph_text(text);
  check::PassResult r = run_pass("chunk{early-accumulation=false}", *g);
  EXPECT_EQ(r.stats.at("materialized_add"), 1);
  EXPECT_EQ(count_op(*g, "aten::sign"), 1u) << "the factor is shared by both chunks";
  EXPECT_TRUE(sym::prove_all(g->claims(), g->symbols()).all_proved());
}

TEST(ChunkPass, GroupedMmChunksAlongItsRowsWithPerChunkOffsets) {
  // An expert layer: the rows come sorted by group, the group of each row one-hot; the
  // offsets are computed in the body from the chunked rows, so each chunk's grouped_mm
  // sees its own groups, and the weight gradient (a sum over each group's rows) is the
  // add of the two chunks' partials. Group 1 spans both chunks (rows 3-5 of 8).
  const char* text = R"(symbol s0 in [2, 8] hint 8 multiple_of 2
graph(
    param %w : f32[3, 4, 5],
    arg %x : f32[sym(s0), 4],
    arg %onehot : i64[sym(s0), 3],
    arg %grad : f32[sym(s0), 5]):
  %counts : i64[3] = aten::sum.dim_IntList(%onehot, [0], False, None)  #{fqn="layers.0"}
  %offsets : i64[3] = aten::cumsum(%counts, 0, None)  #{fqn="layers.0"}
  %y : f32[sym(s0), 5] = passcheck::grouped_mm(%x, %w, %offsets)  #{fqn="layers.0"}
  %dw : f32[3, 4, 5] = passcheck::grouped_mm_weight_grad(%x, %grad, %offsets)  #{phase=backward, fqn="layers.0"}
  return (%y, %dw)
)";
  auto g = parse_graph_text(text);
  check::PassResult r = run_pass("chunk{early-accumulation=false}", *g);
  EXPECT_EQ(r.stats.at("materialized_cat"), 1);  // %y
  EXPECT_EQ(r.stats.at("materialized_add"), 1);  // %dw
  EXPECT_EQ(count_op(*g, "passcheck::grouped_mm"), 2u);
  EXPECT_EQ(count_op(*g, "passcheck::grouped_mm_weight_grad"), 2u);
  EXPECT_TRUE(sym::prove_all(g->claims(), g->symbols()).all_proved());
  run_pass("concretize", *g);
  at::manual_seed(6);
  at::Tensor w = at::randn({3, 4, 5}), x = at::randn({8, 4}), grad = at::randn({8, 5});
  at::Tensor groups = at::tensor(std::vector<int64_t>{0, 0, 0, 1, 1, 1, 2, 2});
  at::Tensor onehot = at::one_hot(groups, 3);
  auto out = exec::Executor(*g).run({w, x, onehot, grad});
  auto offsets_of = [&](int64_t from) { return onehot.slice(0, from, from + 4).sum(0).cumsum(0); };
  at::Tensor y_expected = at::cat({exec::grouped_mm(x.slice(0, 0, 4), w, offsets_of(0)),
                                   exec::grouped_mm(x.slice(0, 4, 8), w, offsets_of(4))});
  at::Tensor dw_expected = at::add(exec::grouped_mm_weight_grad(x.slice(0, 0, 4), grad.slice(0, 0, 4), offsets_of(0)),
                                   exec::grouped_mm_weight_grad(x.slice(0, 4, 8), grad.slice(0, 4, 8), offsets_of(4)));
  EXPECT_TRUE(at::equal(out[0].toTensor(), y_expected));
  EXPECT_TRUE(at::equal(out[1].toTensor(), dw_expected));
  // Chunking keeps the numbers of the whole: y exactly (each row is one group's mm), dw to
  // the rounding of the add.
  at::Tensor full_offsets = onehot.sum(0).cumsum(0);
  EXPECT_TRUE(at::equal(out[0].toTensor(), exec::grouped_mm(x, w, full_offsets)));
  EXPECT_TRUE(at::allclose(out[1].toTensor(), exec::grouped_mm_weight_grad(x, grad, full_offsets), 1e-5, 1e-5));
}

// ---- errors the spec lists ---------------------------------------------------------

std::string chunk_error(const std::string& text, const std::string& options = "") {
  auto g = parse_graph_text(text);
  try {
    run_pass("chunk{early-accumulation=false" + options + "}", *g);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(ChunkPassErrors, NoSymbolNoRegionTwoDimsOddSizeBakedReshapeAttentionMultipleUpdates) {
  EXPECT_THAT(chunk_error("graph(arg %x : f32[4, 8]):\n  %r : f32[4, 8] = aten::relu(%x)  #{fqn=\"layers.0\"}\n  return (%r)\n"),
              HasSubstr("the graph has no symbolic dimension"));
  EXPECT_THAT(chunk_error(kLayerGraph, ",modules=blocks.*"), HasSubstr("no module matches the pattern(s) blocks.*"));
  EXPECT_THAT(chunk_error(R"(symbol s0 in [2, 4] hint 4 multiple_of 2
graph(arg %x : f32[sym(s0), sym(s0)]):
  %r : f32[sym(s0), sym(s0)] = aten::relu(%x)  #{fqn="layers.0"}
  return (%r)
)"),
              HasSubstr("live-in %x of region layers.0 carries s0 in 2 dimensions"));
  EXPECT_THAT(chunk_error(R"(symbol s0 in [2, 4] hint 4 multiple_of 2
graph(arg %x : f32[sym(s0 + 1), 8]):
  %r : f32[sym(s0 + 1), 8] = aten::relu(%x)  #{fqn="layers.0"}
  return (%r)
)"),
              HasSubstr("has odd size 5"));
  EXPECT_THAT(chunk_error(R"(symbol s0 in [2, 4] hint 4 multiple_of 2
graph(arg %x : f32[sym(s0), 8]):
  %v : f32[sym(2*s0), 4] = aten::view(%x, [8, 4])  #{fqn="layers.0"}
  return (%v)
)"),
              HasSubstr("has the constant size 8 in dim 0"));
  EXPECT_THAT(chunk_error(R"(symbol s0 in [2, 4] hint 4 multiple_of 2
graph(arg %x : f32[2, sym(s0), 8]):
  %r : f32[2, sym(s0), 8] = aten::relu(%x)  #{fqn="layers.0.attention"}
  return (%r)
)",
                          ",mode=seq"),
              HasSubstr("seq chunking through attention is not supported"));
  EXPECT_THAT(chunk_error(R"(symbol s0 in [2, 4] hint 4 multiple_of 2
graph(buffer %c : f32[8], arg %x : f32[sym(s0), 8]):
  %s : f32[8] = aten::sum.dim_IntList(%x, [0], False)  #{fqn="layers.0"}
  %a : f32[8] = aten::add_.Tensor(%c, %s)  #{fqn="layers.0"}
  %b : f32[8] = aten::add_.Tensor(%c, %s)  #{fqn="layers.0"}
  return (%a)
)"),
              HasSubstr("updates %c more than once"));
  EXPECT_THAT(chunk_error(R"(symbol s0 in [2, 4] hint 4 multiple_of 2
graph(arg %x : f32[sym(s0), 8]):
  %m : f32[8] = aten::mean.dim(%x, [0], False)  #{fqn="layers.0"}
  return (%m)
)"),
              HasSubstr("has no s0 dimension and is not a sum over it"));
  EXPECT_THAT(chunk_error(R"(symbol s0 in [2, 4] hint 4
graph(arg %x : f32[sym(s0), 8]):
  %r : f32[sym(s0), 8] = aten::relu(%x)  #{fqn="layers.0"}
  return (%r)
)"),
              HasSubstr("is not declared a multiple of 2"));
}

TEST(ChunkPassErrors, ForwardBodyReadingABackwardValue) {
  EXPECT_THAT(chunk_error(R"(symbol s0 in [2, 4] hint 4 multiple_of 2
graph(arg %x : f32[sym(s0), 8]):
  %g : f32[sym(s0), 8] = aten::neg(%x)  #{phase=backward}
  %r : f32[sym(s0), 8] = aten::relu(%g)  #{fqn="layers.0"}
  return (%r)
)"),
              HasSubstr("reads %g from the backward"));
}

// ---- concretize ------------------------------------------------------------------------

TEST(Concretize, HandMadeFalseGuardIsRejectedWithTheGuard) {
  const char* text = R"(symbol s0 in [2, 4] hint 4 multiple_of 2
claim assumed_equal "hand" "%r" "the batch is 2": s0 == 2
graph(arg %x : f32[sym(s0), 8]):
  %r : f32[sym(s0), 8] = aten::relu(%x)
  return (%r)
)";
  auto g = parse_graph_text(text);
  try {
    run_pass("concretize", *g);
    FAIL() << "a false guard was accepted";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("guard false at the hint (s0=4): assumed_equal on %r: s0 == 2 -- the batch is 2"));
  }
  // Z3 refutes it too, with an admissible counterexample.
  sym::ProofReport report = sym::prove_all(g->claims(), g->symbols());
  ASSERT_EQ(report.count(sym::Verdict::Refuted), 1u);
  EXPECT_EQ(report.results[0].counterexample.at("s0"), 4);
}

TEST(Concretize, HandMadeLeftoverSymbolIsNamedWithItsPlace) {
  auto g = parse_graph_text(R"(symbol s0 in [2, 4] hint 4 multiple_of 2
graph(arg %x : f32[sym(s0), 8]):
  %v : f32[sym(s0), 8] = aten::view(%x, [sym(s0), 8])
  return (%v)
)");
  // A symbol nobody declared (a pass that invented one) has no hint to take.
  ir::Node* view = g->find_value("v")->producer();
  view->set_arg(1, ir::Arg::of_list({ir::Arg::symbolic(sym::Expr::symbol("s7")), ir::Arg::integer(8)}));
  try {
    passes::concretize_pass(*g, check::PassOptions());
    FAIL() << "a leftover symbol was accepted";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("symbol s7 left in argument 1 of node %v = aten::view"));
  }
}

TEST(Concretize, SubstitutesEverywhereAndDropsDeclarations) {
  auto g = parse_graph_text(kLayerGraph);
  run_pass("chunk{early-accumulation=false}", *g);
  check::PassResult r = run_pass("concretize", *g);
  EXPECT_GT(r.stats.at("validated_guards"), 0);
  EXPECT_TRUE(check::find_symbols(*g).empty());
  EXPECT_EQ(g->find_value("mm_chunk0")->meta()->sizes, (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(g->inputs()[2]->meta()->sizes, (std::vector<int64_t>{4, 8}));
}

// ---- mutants (bugs 9 and 10) ------------------------------------------------------------

TEST(ChunkMutants, StaleInputSymbolsAreCaught) {
  auto g = parse_graph_text(kLayerGraph);
  run_pass("chunk{early-accumulation=false}", *g);
  EXPECT_THROW(run_pass("mutant-concretize-stale-input-symbols", *g), check::PassFailure)
      << "the verifier must refuse symbols nobody declares any more";
  auto direct = parse_graph_text(kLayerGraph);
  // The pass's own leftover scan catches it even without the verifier.
  const check::RegisteredPass& stale = mutants::registry_with_mutants().get("mutant-concretize-stale-input-symbols");
  EXPECT_THROW(stale.run(*direct, check::PassOptions()), std::runtime_error);
}

TEST(ChunkMutants, FalseGuardAcceptedIsCaught) {
  const char* text = R"(symbol s0 in [2, 4] hint 4 multiple_of 2
claim assumed_equal "hand" "%r" "the batch is 2": s0 == 2
graph(arg %x : f32[sym(s0), 8]):
  %r : f32[sym(s0), 8] = aten::relu(%x)
  return (%r)
)";
  auto real = parse_graph_text(text), mutant = parse_graph_text(text);
  EXPECT_THROW(run_pass("concretize", *real), check::PassFailure);
  EXPECT_NO_THROW(run_pass("mutant-concretize-accepts-false-guard", *mutant)) << "the mutant is the buggy one";
}

TEST(ChunkMutants, AddOfAChunkDimValueIsRefutedByZ3AndFlagged) {
  auto g = parse_graph_text(kLayerGraph);
  run_pass("mutant-chunk-adds-chunk-dim{early-accumulation=false}", *g);
  sym::ProofReport report = sym::prove_all(g->claims(), g->symbols());
  EXPECT_GE(report.count(sym::Verdict::Refuted), 1u) << report.format();
  EXPECT_FALSE(check::check_chunk_invariants(*g).empty());
}

TEST(ChunkMutants, UnchainedBufferUpdateIsFlagged) {
  auto g = parse_graph_text(kLayerGraph);
  run_pass("mutant-chunk-unchained-buffer-update{early-accumulation=false}", *g);
  auto problems = check::check_chunk_invariants(*g);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], HasSubstr("nothing orders the two updates"));
}

TEST(MatchingRoot, StarIsOneComponent) {
  EXPECT_EQ(check::fqn_pattern_root("layers.3.moe.router", "layers.*"), "layers.3");
  EXPECT_EQ(check::fqn_pattern_root("layers.3.moe.router", "layers.*.moe"), "layers.3.moe");
  EXPECT_EQ(check::fqn_pattern_root("layers.3.attention", "layers.*.moe"), std::nullopt);
  EXPECT_EQ(check::fqn_pattern_root("layers", "layers.*"), std::nullopt);
  EXPECT_EQ(check::fqn_pattern_root("norm", "layers.*"), std::nullopt);
}

}  // namespace
}  // namespace passcheck
