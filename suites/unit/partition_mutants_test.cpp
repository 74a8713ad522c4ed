// The partitioner mutants (suites/mutants/partition_mutants.cpp) are caught: historical bug 8 (the second partition recomputes
// differently) and 16 (cse drops the later duplicate's save tag) by the partition round
// trip, with a message naming the value saved by one partition only.
#include "passes/partition/partition_passes.h"
#include "suites/mutants/mutants.h"
#include "suites/unit/partition_test_support.h"

#include <gtest/gtest.h>

namespace passcheck {
namespace {

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// Two equal matmuls feed the loss; the backward reads only the second, so min-cut saves
// the second and CSE, after the re-import, merges it into the first.
constexpr const char* kDuplicateMatmul = R"(graph(param %w : f32[16, 16], arg %x : f32[4, 16]):
  %mm : f32[4, 16] = aten::mm(%x, %w)
  %mm_1 : f32[4, 16] = aten::mm(%x, %w)
  %add : f32[4, 16] = aten::add.Tensor(%mm, %mm_1, 1)
  %sum : f32[] = aten::sum(%add, None)  #{phase=loss}
  %ones_like : f32[] = aten::ones_like(%sum, None, None, None, None, torch.contiguous_format)  #{phase=backward}
  %mul : f32[4, 16] = aten::mul.Tensor(%mm_1, %ones_like)  #{phase=backward}
  return (%sum, %mul))";

TEST(PartitionMutants, Bug16CseDroppingTheDuplicatesTagIsCaughtByTheRoundTrip) {
  auto g = ir::parse_graph(kDuplicateMatmul);
  passes::RoundTripOptions options;
  options.registry = &mutants::registry_with_mutants();
  passes::RoundTripResult real = passes::partition_round_trip(*g, options);
  EXPECT_TRUE(real.agree()) << real.report();
  EXPECT_EQ(real.first_summary.saved, (std::vector<std::string>{"mm_1", "sum"}));
  options.cse = "mutant-cse-drops-duplicate-metadata";
  passes::RoundTripResult mutant = passes::partition_round_trip(*g, options);
  ASSERT_FALSE(mutant.agree()) << "mutant not caught\n" << mutant.report();
  EXPECT_NE(joined(mutant.differences).find("saved only by the first partition: %mm_1"), std::string::npos)
      << mutant.report();
}

TEST(PartitionMutants, Bug8SecondPartitionIgnoringMultiOutputTagsIsCaughtOnLlama3) {
  const auto& m = testing::traced_joint("llama3");
  passes::RoundTripOptions options;
  options.registry = &mutants::registry_with_mutants();
  options.second_partition = "mutant-partition-save-all-ignores-multi-output-tags";
  passes::RoundTripResult mutant = passes::partition_round_trip(*m.graph, options);
  ASSERT_FALSE(mutant.agree()) << "mutant not caught\n" << mutant.report();
  EXPECT_NE(joined(mutant.differences).find("saved only by the first partition: %"), std::string::npos)
      << mutant.report();
  std::cout << mutant.report();
}

TEST(PartitionMutants, Bug8IsCaughtOnTheFsdpLlama3RankGraph) {
  std::unique_ptr<ir::Graph> rank = testing::fsdp_llama3_rank_graph();
  passes::RoundTripOptions options;
  options.registry = &mutants::registry_with_mutants();
  options.second_partition = "mutant-partition-save-all-ignores-multi-output-tags";
  passes::RoundTripResult mutant = passes::partition_round_trip(*rank, options);
  EXPECT_FALSE(mutant.agree()) << "mutant not caught\n" << mutant.report();
}

TEST(PartitionMutants, TheyAreRegisteredWithTheirHistoricalBugs) {
  std::map<std::string, int> bugs;
  for (const auto& m : mutants::all_mutants()) bugs[m.pass] = m.historical_bug;
  EXPECT_EQ(bugs.at("mutant-partition-save-all-ignores-multi-output-tags"), 8);
  EXPECT_EQ(bugs.at("mutant-cse-drops-duplicate-metadata"), 16);
  EXPECT_TRUE(mutants::registry_with_mutants().get("mutant-partition-save-all-ignores-multi-output-tags")
                  .is_module_pass());
}

}  // namespace
}  // namespace passcheck
