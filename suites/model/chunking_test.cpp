// Graph chunking of the DeepSeek-V3 debug model against the eager-chunked oracle
// (specs/passes.md "Chunking passes"): the acceptance configurations of step 4, five
// optimizer steps each, loss, gradients, parameters and both MoE buffers bit for bit,
// every claim of the chunk and concretize passes proved by Z3 over the whole range.
#include "framework/check/chunk_properties.h"
#include "oracles/chunked_training.h"
#include "oracles/symbolic_trace.h"
#include "suites/mutants/mutants.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace passcheck {
namespace {

using ::testing::HasSubstr;

oracles::ChunkedTrainingOptions deepseek(oracles::SymbolicDim dim, const std::string& modules, bool early) {
  oracles::ChunkedTrainingOptions options;
  options.model = "deepseek_v3";
  options.steps = 5;
  options.dim = dim;
  options.modules = modules;
  options.early_accumulation = early;
  options.registry = &mutants::registry_with_mutants();
  return options;
}

void expect_bitwise(const oracles::ChunkedTrainingReport& report) {
  EXPECT_TRUE(report.equal()) << report.format();
  EXPECT_TRUE(report.proofs.all_proved()) << report.proofs.format();
  EXPECT_GT(report.proofs.results.size(), 0u);
  // The buffers are among the compared values, so the chain of counter updates counts.
  bool buffers = false;
  for (const auto& c : report.driver.steps.at(0).comparisons)
    buffers = buffers || c.name.find("tokens_per_expert") != std::string::npos;
  EXPECT_TRUE(buffers);
}

TEST(DeepSeekChunking, BatchChunkingOfTransformerBlocksMatchesEagerChunking) {
  auto report = oracles::run_graph_chunked_vs_eager_chunked(deepseek(oracles::SymbolicDim::Batch, "layers.*", false));
  expect_bitwise(report);
  EXPECT_EQ(report.passes.front().stats.at("regions"), 12) << "6 blocks, forward and backward";
  EXPECT_EQ(report.driver.steps.at(0).eager_chunking.intercepted_calls(), 6);
}

TEST(DeepSeekChunking, SeqChunkingOfMoeLayersMatchesEagerChunking) {
  auto report = oracles::run_graph_chunked_vs_eager_chunked(deepseek(oracles::SymbolicDim::Seq, "layers.*.moe", false));
  expect_bitwise(report);
  EXPECT_EQ(report.passes.front().stats.at("regions"), 10) << "5 MoE layers, forward and backward";
}

TEST(DeepSeekChunking, BatchChunkingOfMoeLayersMatchesEagerChunking) {
  auto report = oracles::run_graph_chunked_vs_eager_chunked(deepseek(oracles::SymbolicDim::Batch, "layers.*.moe", false));
  expect_bitwise(report);
}

TEST(DeepSeekChunking, EarlyAccumulationStaysWithinTolerance) {
  auto report = oracles::run_graph_chunked_vs_eager_chunked(deepseek(oracles::SymbolicDim::Batch, "layers.*", true));
  EXPECT_TRUE(report.proofs.all_proved()) << report.proofs.format();
  EXPECT_GT(report.passes.front().stats.at("early_accumulations"), 0);
  // The debug model trains in float32 with only exact rearrangements between a gradient
  // reduction and its parameter: the early sum is the same sum (see docs/chunking.md).
  EXPECT_LE(report.max_ulp, 64u) << report.format();
}

TEST(DeepSeekChunking, SeqChunkingThroughAttentionIsRefused) {
  auto options = deepseek(oracles::SymbolicDim::Seq, "layers.*", false);
  options.steps = 1;
  try {
    oracles::run_graph_chunked_vs_eager_chunked(options);
    FAIL() << "seq chunking of whole blocks must be refused";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("seq chunking through attention is not supported"));
  }
}

TEST(DeepSeekChunking, MutantAddingAChunkDimLiveOutIsRefuted) {
  auto options = deepseek(oracles::SymbolicDim::Batch, "layers.*.moe", false);
  options.steps = 1;
  options.chunk_pass = "mutant-chunk-adds-chunk-dim";
  try {
    oracles::run_graph_chunked_vs_eager_chunked(options);
    FAIL() << "the mutant's materialization claim must be refuted";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("refuted"));
  }
}

TEST(DeepSeekChunking, SymbolicTraceDeclaresTheRangeAndShapes) {
  oracles::SymbolicTraceOptions options;
  options.model = "deepseek_v3";
  oracles::SymbolicTrace t = oracles::trace_symbolic(options);
  ASSERT_EQ(t.graph->symbols().size(), 1u);
  const sym::Symbol& s = t.graph->symbols()[0];
  EXPECT_EQ(s.multiple_of, 2);
  EXPECT_EQ(s.max, s.hint);
  EXPECT_EQ(s.min, s.hint / 2);
  bool tokens_symbolic = false;
  for (const ir::Value* in : t.graph->inputs())
    if (in->role() == ir::InputRole::Argument && in->meta() && in->meta()->is_symbolic()) tokens_symbolic = true;
  EXPECT_TRUE(tokens_symbolic);
}

}  // namespace
}  // namespace passcheck
