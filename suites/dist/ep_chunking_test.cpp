// The chunk pass (passes/chunk, seed 3325) on the expert-parallel deepseek_v3 graph: on
// every rank the MoE layers are split in two along the batch, so the dispatch and
// combine all_to_all of one half can overlap the other half's compute, and the
// graph-chunked rank trains bit for bit like the eager-chunked rank (each half's module
// call runs its own all_to_all) over 5 steps, with the chunk pass's claims proved.
#include "framework/dist/mesh.h"
#include "oracles/chunked_training.h"
#include "framework/check/pass.h"
#include "suites/dist/dist_test_support.h"

#include <gtest/gtest.h>

#include <mutex>

namespace passcheck::testing {
namespace {

oracles::ChunkedTrainingOptions ep_chunking(const std::string& mesh) {
  oracles::ChunkedTrainingOptions o;
  o.model = "deepseek_v3";
  o.steps = 5;
  o.dim = oracles::SymbolicDim::Batch;
  o.modules = "layers.*.moe";
  o.registry = &check::PassRegistry::global();
  o.subject.batch_size = 2;
  o.subject.seq_len = 16;
  o.subject.n_layers = 2;
  o.subject.moe_capacity_factor = 1.0;
  o.subject.parallel.plan = "ep";
  o.subject.parallel.mesh = mesh;
  return o;
}

TEST(EpChunking, GraphChunkedEqualsEagerChunkedOnEveryRank) {
  std::mutex m;
  std::vector<std::string> reports(4);
  std::string errors = run_ranks("sim", dist::DeviceMesh::parse("ep=4"), [&](int64_t rank) {
    oracles::ChunkedTrainingOptions o = ep_chunking("ep=4");
    int64_t all_to_all = 0;
    o.on_chunked = [&](const ir::Graph& g) {
      for (const ir::Node* n : g.nodes()) all_to_all += n->op() == "_c10d_functional::all_to_all_single";
    };
    oracles::ChunkedTrainingReport r = oracles::run_graph_chunked_vs_eager_chunked(o);
    std::lock_guard<std::mutex> lock(m);
    reports[rank] = r.format();
    if (!r.equal()) throw std::runtime_error("graph-chunked differs from eager-chunked:\n" + r.format());
    if (!r.proofs.all_proved()) throw std::runtime_error("claims not proved:\n" + r.proofs.format());
    // One MoE layer: dispatch and combine in the forward, their two in the backward, each
    // now once per chunk.
    if (all_to_all != 8) throw std::runtime_error("chunked graph has " + std::to_string(all_to_all) + " all_to_all");
  });
  EXPECT_EQ(errors, "");
  std::printf("%s", reports[0].c_str());
}

}  // namespace
}  // namespace passcheck::testing
