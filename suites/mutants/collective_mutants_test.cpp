// The collective-fusion mutants are caught: bugs 7 and 13 by the recorded identity claim
// (proving the claims of the mutated graph's text, as `passcheck prove` does, refutes it,
// naming the node and the counterexample; the pipeline gate fails the pass on it;
// suites/unit/view_index_map_test.cpp runs the `passcheck prove` binary itself) and by running the fused graph
// on every rank of a sim mesh; bug 6 by running on the sim mesh, where the gather over
// the wrong flattened group returns the row blocks in another order. The real pass
// fuses the correct chains and refuses the wrong ones, on the same graphs.
#include "framework/check/pipeline.h"
#include "framework/dist/sim.h"
#include "framework/exec/executor.h"
#include "framework/check/verifier.h"
#include "framework/ir/text.h"
#include "framework/sym/prover.h"
#include "suites/mutants/collective_mutants.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>

namespace passcheck::testing {
namespace {

// Bug 7's chain on a 4 x 4 gathered value: permute[1,0] then permute[0,1] transposes.
const char* const kPermutePair = R"(mesh dp=2, tp=2 rank 0
graph(param %x : f32[2, 4]):
  %ag : f32[4, 4] = _c10d_functional::all_gather_into_tensor(%x, 2, "dp")
  %wait : f32[4, 4] = _c10d_functional::wait_tensor(%ag)
  %p : f32[4, 4]{1, 4} = aten::permute(%wait, [1, 0])
  %q : f32[4, 4]{1, 4} = aten::permute(%p, [0, 1])
  %ag2 : f32[8, 4] = _c10d_functional::all_gather_into_tensor(%q, 2, "tp")
  %out : f32[8, 4] = _c10d_functional::wait_tensor(%ag2)
  return (%out)
)";


// A dp-then-tp chain through an identity pair of permutes (fused onto tp_dp).
const char* const kAscending = R"(mesh dp=2, tp=2 rank 0
graph(param %x : f32[2, 3]):
  %ag : f32[4, 3] = _c10d_functional::all_gather_into_tensor(%x, 2, "dp")
  %wait : f32[4, 3] = _c10d_functional::wait_tensor(%ag)
  %p : f32[3, 4]{1, 3} = aten::permute(%wait, [1, 0])
  %q : f32[4, 3] = aten::permute(%p, [1, 0])
  %ag2 : f32[8, 3] = _c10d_functional::all_gather_into_tensor(%q, 2, "tp")
  %out : f32[8, 3] = _c10d_functional::wait_tensor(%ag2)
  return (%out)
)";

const char* const kOptions = "{subgroup-order=\"dp,tp\",column-major-group=tp_dp}";

// `pass` run on `text` without the pipeline's proof of recorded claims (what a pass
// under test would hand on), with the number of fused chains.
std::unique_ptr<ir::Graph> run_unproved(const std::string& text, const std::string& pass, int64_t* fused = nullptr) {
  auto g = ir::parse_graph(text);
  check::PipelineOptions options;
  options.prove_new_claims = false;
  auto records = check::Pipeline::parse(pass + kOptions, mutants::registry_with_mutants()).run(*g, options);
  if (fused) *fused = records.at(0).stats["fused_chains"];
  return g;
}

// How many ranks of a dp=2, tp=2 sim mesh compute different bits with `mutated`.
int ranks_that_differ(const ir::Graph& original, const ir::Graph& mutated, const std::vector<int64_t>& input_sizes) {
  std::atomic<int> differ{0};
  dist::run_sim(dist::DeviceMesh::parse("dp=2,tp=2"), [&](int64_t rank) {
    at::Generator gen = at::detail::createCPUGenerator(static_cast<uint64_t>(rank) + 101);
    const at::Tensor x = at::randn(input_sizes, gen, at::TensorOptions().dtype(at::kFloat));
    const at::Tensor expected = exec::Executor(original).run({x}).at(0).toTensor();
    const at::Tensor actual = exec::Executor(mutated).run({x}).at(0).toTensor();
    if (!expected.sizes().equals(actual.sizes()) || !at::equal(expected, actual)) ++differ;
  });
  return differ.load();
}

TEST(CollectiveMutants, AreRegisteredWithTheirHistoricalBugs) {
  std::set<int> bugs;
  for (const mutants::MutantInfo& m : mutants::collective_mutants()) {
    EXPECT_EQ(m.replaces, "fuse-chained-allgathers");
    EXPECT_TRUE(mutants::registry_with_mutants().contains(m.pass)) << m.pass;
    bugs.insert(m.historical_bug);
  }
  EXPECT_EQ(bugs, (std::set<int>{6, 7, 13}));
}

TEST(CollectiveMutants, IdentityMutantsAreRefutedByProveAndDifferOnSim) {
  const struct {
    const char* mutant;
    const char* text;
    const char* node;
  } cases[] = {{"mutant-fuse-chained-allgathers-skips-identity-proof", kPermutePair, "%q"},
               {"mutant-fuse-chained-allgathers-shape-stride-identity", mutants::kSquareTrap, "%v"}};
  for (const auto& c : cases) {
    // The real pass refuses the chain: its claim is refuted.
    int64_t real_fused = -1;
    run_unproved(c.text, "fuse-chained-allgathers", &real_fused);
    EXPECT_EQ(real_fused, 0) << c.mutant;
    int64_t fused = 0;
    auto mutated = run_unproved(c.text, c.mutant, &fused);
    ASSERT_EQ(fused, 1) << c.mutant;
    // What `passcheck prove` does with the graph file: parse, verify, prove every claim.
    auto reread = ir::parse_graph(mutated->print(), std::string(c.mutant) + ".graph");
    ASSERT_TRUE(check::verify_graph(*reread).empty());
    const sym::ProofReport report = sym::prove_all(reread->claims(), reread->symbols());
    EXPECT_FALSE(report.all_proved());
    const std::string text = report.format();
    EXPECT_NE(text.find(std::string("refuted: view_identity of ") + c.node + " (fuse-chained-allgathers)"), std::string::npos)
        << text;
    EXPECT_NE(text.find("counterexample i0="), std::string::npos) << text;
    EXPECT_EQ(ranks_that_differ(*ir::parse_graph(c.text), *mutated, {2, 4}), 4) << c.mutant;
  }
}

TEST(CollectiveMutants, SwappedGroupsMutantDiffersOnSim) {
  int64_t fused = 0;
  auto real = run_unproved(kAscending, "fuse-chained-allgathers", &fused);
  ASSERT_EQ(fused, 1);
  EXPECT_NE(real->print().find("_c10d_functional::all_gather_into_tensor(%x, 4, \"tp_dp\")"), std::string::npos) << real->print();
  auto original = ir::parse_graph(kAscending);
  EXPECT_EQ(ranks_that_differ(*original, *real, {2, 3}), 0);
  auto mutated = run_unproved(kAscending, "mutant-fuse-chained-allgathers-swapped-groups", &fused);
  ASSERT_EQ(fused, 1);
  EXPECT_NE(mutated->print().find("\"dp_tp\""), std::string::npos) << mutated->print();
  EXPECT_EQ(ranks_that_differ(*original, *mutated, {2, 3}), 4);
}

}  // namespace
}  // namespace passcheck::testing
