// Unit tests of the view-chain index map and its identity claim
// (passes/collectives/view_index_map.h), of claims quantified over indices (the prover,
// the text form), of the pipeline's proof of recorded claims, and of the column-major
// rank order fuse-chained-allgathers relies on. The central case is upstream's defect
// (bug 13): permute[1,0] -> reshape[N*N] -> view[N, N] on an N x N tensor ends with the
// shape and strides of its source but transposes it; the claim must be refuted with an
// index where it moves data, for a concrete N and for every symbolic N.
#include "framework/check/pipeline.h"
#include "framework/dist/mesh.h"
#include "framework/ir/text.h"
#include "framework/sym/prover.h"
#include "passes/collectives/view_index_map.h"
#include "suites/mutants/collective_mutants.h"
#include "suites/mutants/mutants.h"
#include "suites/support/test_support.h"

#include <gtest/gtest.h>

#include <iostream>

namespace passcheck::testing {
namespace {

using sym::Expr;
using sym::Verdict;

// A chain of views on one input, built in code so sizes may be symbolic.
class Chain {
 public:
  explicit Chain(std::vector<Expr> sizes, std::vector<sym::Symbol> symbols = {}) {
    for (const sym::Symbol& s : symbols) graph_.add_symbol(s);
    source_ = graph_.add_input("x", ir::ValueType::Tensor, meta(sizes));
    last_ = source_;
  }
  Chain& then(const std::string& op, std::vector<ir::Arg> extra, std::vector<Expr> out_sizes) {
    std::vector<ir::Arg> args = {ir::Arg::of(last_)};
    for (ir::Arg& a : extra) args.push_back(std::move(a));
    ir::Node* n = graph_.create(op, std::move(args));
    last_ = n->add_output(ir::ValueType::Tensor, meta(out_sizes), "v");
    nodes_.push_back(n);
    return *this;
  }
  std::optional<passes::collectives::ViewIndexMap> map() const {
    std::string why_not;
    auto map = passes::collectives::compose_view_chain(*source_, nodes_, why_not);
    EXPECT_TRUE(map) << why_not;
    return map;
  }
  sym::ClaimResult prove() const {
    auto map = this->map();
    if (!map) return {};
    sym::Claim claim = passes::collectives::view_identity_claim(*source_, *last_, *map, "test", "%" + last_->name());
    sym::ClaimResult r = sym::prove(claim, graph_.symbols());
    std::cout << "  claim " << sym::to_string(r.verdict) << " in " << r.seconds * 1000 << " ms: " << r.format() << "\n";
    return r;
  }

 private:
  ir::TensorMeta meta(const std::vector<Expr>& sizes) {
    ir::TensorMeta m;
    m.set_symbolic(sizes, ir::TensorMeta::contiguous_stride_exprs(sizes), graph_.symbol_hints());
    return m;
  }
  ir::Graph graph_;
  ir::Value* source_;
  ir::Value* last_;
  std::vector<const ir::Node*> nodes_;
};

Expr lit(int64_t v) { return Expr::constant(v); }
const Expr kN = Expr::symbol("s0");
const sym::Symbol kSymbolN{"s0", 1, 4096, 4, 1};

ir::Arg ints(std::vector<int64_t> v) { return ir::Arg::int_list(v); }
ir::Arg sizes(std::vector<Expr> v) {
  std::vector<ir::Arg> items;
  for (const Expr& e : v) items.push_back(ir::Arg::symbolic(e));
  return ir::Arg::of_list(items);
}

// The square trap: the counterexample is an index the chain moves (i0 != i1).
void expect_square_trap_refuted(const sym::ClaimResult& r) {
  ASSERT_EQ(r.verdict, Verdict::Refuted) << r.format();
  ASSERT_TRUE(r.counterexample.count("i0") && r.counterexample.count("i1")) << r.format();
  EXPECT_NE(r.counterexample.at("i0"), r.counterexample.at("i1")) << r.format();
  EXPECT_NE(r.format().find("counterexample"), std::string::npos);
}

TEST(ViewIndexMap, SquarePermuteReshapeViewIsRefutedForAConcreteN) {
  Chain chain({lit(4), lit(4)});
  chain.then("aten::permute", {ints({1, 0})}, {lit(4), lit(4)})
      .then("aten::reshape", {ints({16})}, {lit(16)})
      .then("aten::view", {ints({4, 4})}, {lit(4), lit(4)});
  expect_square_trap_refuted(chain.prove());
}

TEST(ViewIndexMap, SquarePermuteReshapeViewIsRefutedForEverySymbolicN) {
  Chain chain({kN, kN}, {kSymbolN});
  chain.then("aten::permute", {ints({1, 0})}, {kN, kN})
      .then("aten::reshape", {sizes({kN * kN})}, {kN * kN})
      .then("aten::view", {sizes({kN, kN})}, {kN, kN});
  const sym::ClaimResult r = chain.prove();
  expect_square_trap_refuted(r);
  EXPECT_GE(r.counterexample.at("s0"), 2) << "N = 1 has no index to move";
}

TEST(ViewIndexMap, PermuteTwiceIsProved) {
  Chain concrete({lit(8), lit(6)});
  concrete.then("aten::permute", {ints({1, 0})}, {lit(6), lit(8)}).then("aten::permute", {ints({1, 0})}, {lit(8), lit(6)});
  EXPECT_EQ(concrete.prove().verdict, Verdict::Proved);
  Chain symbolic({kN, lit(6)}, {kSymbolN});
  symbolic.then("aten::permute", {ints({1, 0})}, {lit(6), kN}).then("aten::permute", {ints({1, 0})}, {kN, lit(6)});
  EXPECT_EQ(symbolic.prove().verdict, Verdict::Proved);
}

TEST(ViewIndexMap, PermuteThenTrivialPermuteIsRefuted) {
  // Bug 7's chain: [1, 0] then [0, 1] transposes; on a square tensor the shapes even agree.
  Chain chain({lit(4), lit(4)});
  chain.then("aten::permute", {ints({1, 0})}, {lit(4), lit(4)}).then("aten::permute", {ints({0, 1})}, {lit(4), lit(4)});
  expect_square_trap_refuted(chain.prove());
}

TEST(ViewIndexMap, TransposeThenTIsProved) {
  Chain chain({kN, lit(3)}, {kSymbolN});
  chain.then("aten::transpose.int", {ir::Arg::integer(0), ir::Arg::integer(1)}, {lit(3), kN}).then("aten::t", {}, {kN, lit(3)});
  EXPECT_EQ(chain.prove().verdict, Verdict::Proved);
}

TEST(ViewIndexMap, FlattenAndViewBackIsProved) {
  Chain concrete({lit(6), lit(5)});
  concrete.then("aten::view", {ints({30})}, {lit(30)}).then("aten::view", {ints({6, 5})}, {lit(6), lit(5)});
  EXPECT_EQ(concrete.prove().verdict, Verdict::Proved);
  const Expr m = Expr::symbol("s1");
  Chain symbolic({kN, m}, {kSymbolN, {"s1", 1, 512, 3, 1}});
  symbolic.then("aten::reshape", {sizes({kN * m})}, {kN * m}).then("aten::view", {sizes({kN, m})}, {kN, m});
  EXPECT_EQ(symbolic.prove().verdict, Verdict::Proved);
}

TEST(ViewIndexMap, ReshapeThroughAnotherShapeIsProvedByZ3) {
  // [6, 5] -> [5, 6] -> [30] -> [6, 5]: the middle shape leaves floordiv/mod terms that
  // only Z3 (not the canonical form) reduces to the identity.
  Chain chain({lit(6), lit(5)});
  chain.then("aten::reshape", {ints({5, 6})}, {lit(5), lit(6)})
      .then("aten::reshape", {ints({30})}, {lit(30)})
      .then("aten::view", {ints({6, 5})}, {lit(6), lit(5)});
  const sym::ClaimResult r = chain.prove();
  EXPECT_EQ(r.verdict, Verdict::Proved) << r.format();
  EXPECT_NE(r.claim.condition.to_string().find("mod("), std::string::npos) << r.claim.condition.to_string();
}

TEST(ViewIndexMap, UnsqueezeThenSqueezeIsProved) {
  Chain chain({kN, lit(2)}, {kSymbolN});
  chain.then("aten::unsqueeze", {ir::Arg::integer(1)}, {kN, lit(1), lit(2)}).then("aten::squeeze.dim", {ir::Arg::integer(1)}, {kN, lit(2)});
  EXPECT_EQ(chain.prove().verdict, Verdict::Proved);
}

TEST(ViewIndexMap, ReshapeToAnotherShapeIsRefutedOnTheShape) {
  Chain chain({lit(4), lit(6)});
  chain.then("aten::reshape", {ints({6, 4})}, {lit(6), lit(4)});
  EXPECT_EQ(chain.prove().verdict, Verdict::Refuted);
}

TEST(ViewIndexMap, ExpandOfAUnitDimReadsIndexZero) {
  Chain chain({lit(1), lit(3)});
  chain.then("aten::expand", {ints({4, 3})}, {lit(4), lit(3)});
  // Not the identity (the shapes differ), but the map itself reads row 0 for every row.
  EXPECT_EQ(chain.prove().verdict, Verdict::Refuted);
  auto map = chain.map();
  ASSERT_TRUE(map);
  EXPECT_EQ(map->source_coordinates.at(0), lit(0));
  EXPECT_EQ(map->source_coordinates.at(1), Expr::symbol("i1"));
}

TEST(ViewIndexMap, RealReordersAreRecognized) {
  ir::Graph g;
  ir::TensorMeta m;
  m.sizes = {2, 3};
  m.strides = {3, 1};
  ir::Value* x = g.add_input("x", ir::ValueType::Tensor, m);
  auto node = [&](const std::string& op, std::vector<ir::Arg> extra) {
    std::vector<ir::Arg> args = {ir::Arg::of(x)};
    for (auto& a : extra) args.push_back(a);
    ir::Node* n = g.create(op, args);
    n->add_output(ir::ValueType::Tensor, m);
    return n;
  };
  EXPECT_TRUE(passes::collectives::is_real_reorder(*node("aten::t", {})));
  EXPECT_TRUE(passes::collectives::is_real_reorder(*node("aten::permute", {ints({1, 0})})));
  EXPECT_FALSE(passes::collectives::is_real_reorder(*node("aten::permute", {ints({0, 1})})));
  EXPECT_FALSE(passes::collectives::is_real_reorder(*node("aten::transpose.int", {ir::Arg::integer(1), ir::Arg::integer(-1)})));
  EXPECT_TRUE(passes::collectives::is_real_reorder(*node("aten::transpose.int", {ir::Arg::integer(0), ir::Arg::integer(-1)})));
  EXPECT_FALSE(passes::collectives::is_modeled_view(*node("aten::view.dtype", {ir::Arg::integer(15)})));
}

TEST(IndexedClaims, ProverQuantifiesOverIndicesInTheirRanges) {
  sym::Claim claim{"guard", "test", "%x", "every index is below 3"};
  claim.indices = {{"i0", Expr::symbol("s0")}};
  claim.condition = sym::lt(Expr::symbol("i0"), lit(3));
  EXPECT_EQ(sym::prove(claim, {{"s0", 1, 3, 3, 1}}).verdict, Verdict::Proved);
  const sym::ClaimResult r = sym::prove(claim, {{"s0", 1, 5, 3, 1}});
  ASSERT_EQ(r.verdict, Verdict::Refuted) << r.format();
  EXPECT_EQ(r.counterexample.at("i0"), 3);
  EXPECT_GE(r.counterexample.at("s0"), 4);
  // An index may not shadow a declared symbol.
  claim.indices = {{"s0", lit(4)}};
  EXPECT_EQ(sym::prove(claim, {{"s0", 1, 5, 3, 1}}).verdict, Verdict::Unknown);
}

TEST(IndexedClaims, TextFormRoundTripsAndOldClaimsStillParse) {
  const std::string text =
      "symbol s0 in [1, 64] hint 4\n"
      "claim guard \"chunk\" \"%x\" \"plain\": s0 >= 1\n"
      "claim view_identity \"fuse-chained-allgathers\" \"%v\" \"identity\" forall(i0 < s0, i1 < 2*s0 + 1): "
      "(i0 == i0) and (mod(i1, 2*s0 + 1) == i1)\n"
      "graph(arg %x : f32[sym(s0)]):\n  return (%x)\n";
  auto g = ir::parse_graph(text);
  ASSERT_EQ(g->claims().size(), 2u);
  EXPECT_TRUE(g->claims()[0].indices.empty());
  ASSERT_EQ(g->claims()[1].indices.size(), 2u);
  EXPECT_EQ(g->claims()[1].indices[1].bound, 2 * Expr::symbol("s0") + 1);
  const std::string printed = g->print();
  EXPECT_NE(printed.find("forall(i0 < s0, i1 < 2*s0 + 1): "), std::string::npos) << printed;
  EXPECT_EQ(ir::parse_graph(printed)->print(), printed);
  EXPECT_EQ(ir::parse_graph(printed)->claims(), g->claims());
  EXPECT_TRUE(sym::prove_all(g->claims(), g->symbols()).all_proved());
  auto error_of = [](const std::string& t) {
    try {
      ir::parse_graph(t, "g.graph");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("symbol s0 in [1, 4] hint 2\nclaim guard \"p\" \"s\" \"d\" forall(s0 < 4): s0 == s0\ngraph():\n  return ()\n")
                .find("claim index s0 is a declared symbol"),
            std::string::npos);
  EXPECT_NE(error_of("claim guard \"p\" \"s\" \"d\" forall(i0 < 4): j0 == 1\ngraph():\n  return ()\n").find("undeclared symbol j0"),
            std::string::npos);
}

TEST(IndexedClaims, ThePassRefusesTheSquareTrapAndReportsTheCounterexample) {
  auto g = ir::parse_graph(mutants::kSquareTrap);
  auto records = check::Pipeline::parse("fuse-chained-allgathers").run(*g);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].changed);
  EXPECT_EQ(records[0].guards_refused.at("not-identity"), 1);
  ASSERT_EQ(records[0].notes.size(), 1u);
  EXPECT_NE(records[0].notes[0].find("refuted: view_identity of %v"), std::string::npos) << records[0].notes[0];
  EXPECT_NE(records[0].notes[0].find("counterexample i0="), std::string::npos) << records[0].notes[0];
}

TEST(IndexedClaims, APipelineFailsAPassWhoseRecordedClaimIsRefuted) {
  // The bug-13 mutant fuses the square trap and records the claim it did not prove.
  for (const std::string mutant : {"mutant-fuse-chained-allgathers-shape-stride-identity",
                                   "mutant-fuse-chained-allgathers-skips-identity-proof"}) {
    auto g = ir::parse_graph(mutants::kSquareTrap);
    try {
      check::Pipeline::parse(mutant, mutants::registry_with_mutants()).run(*g);
      ADD_FAILURE() << mutant << " was not caught";
    } catch (const check::PassFailure& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("recorded a claim that does not hold: refuted: view_identity of %v"), std::string::npos) << what;
      EXPECT_NE(what.find("counterexample i0="), std::string::npos) << what;
    }
  }
}

TEST(IndexedClaims, PasscheckProveRefutesTheClaimAMutantRecorded) {
  // The mutant's graph as a file (the pipeline's own proof switched off, as a pass under
  // test would hand it on): `passcheck prove` names the node and the counterexample.
  auto g = ir::parse_graph(mutants::kSquareTrap);
  check::PipelineOptions options;
  options.prove_new_claims = false;
  check::Pipeline::parse("mutant-fuse-chained-allgathers-shape-stride-identity", mutants::registry_with_mutants())
      .run(*g, options);
  const std::string path = make_temp_dir() + "/fused.graph";
  write_text(path, g->print());
  const CommandResult r = run_command(passcheck_binary() + " prove " + path);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("refuted: view_identity of %v (fuse-chained-allgathers)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[forall(i0 < 4, i1 < 4): i0 == i1] counterexample i0="), std::string::npos) << r.output;
  // The claim the real pass records on an identity chain is proved.
  std::string identity = mutants::kSquareTrap;
  const std::string trap = "  %r : f32[16] = aten::reshape(%p, [16])\n  %v : f32[4, 4] = aten::view(%r, [4, 4])\n";
  identity.replace(identity.find(trap), trap.size(), "  %v : f32[4, 4] = aten::permute(%p, [1, 0])\n");
  auto real = ir::parse_graph(identity);
  EXPECT_TRUE(check::Pipeline::parse("fuse-chained-allgathers").run(*real).at(0).changed);
  write_text(path, real->print());
  const CommandResult proved = run_command(passcheck_binary() + " prove " + path);
  EXPECT_EQ(proved.exit_code, 0) << proved.output;
  EXPECT_NE(proved.output.find("1 claims: 1 proved, 0 refuted, 0 unknown"), std::string::npos) << proved.output;
}

TEST(FuseAllgathersMesh, ColumnMajorRankOrder) {
  // Upstream's rank-ordering test: tp_dp of dp=4, tp=2 is the mesh transposed.
  const dist::DeviceMesh mesh = dist::DeviceMesh::parse("dp=4,tp=2");
  EXPECT_EQ(mesh.group_members("tp_dp", 0), (std::vector<int64_t>{0, 2, 4, 6, 1, 3, 5, 7}));
  EXPECT_EQ(mesh.group_members("dp_tp", 5), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Rank r = (r // tp, r % tp); gathering dp then tp visits tp-major: position of rank r
  // in the column-major group is (r % tp) * dp + r // tp.
  const auto order = mesh.group_members("tp_dp", 3);
  for (int64_t pos = 0; pos < 8; ++pos) EXPECT_EQ((order[pos] % 2) * 4 + order[pos] / 2, pos);
}

}  // namespace
}  // namespace passcheck::testing
