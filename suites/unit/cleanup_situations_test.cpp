// The cleanup situations generator: deterministic per seed, every motif drawn within a
// short campaign, and every case a graph the executor runs with metadata checking on
// (a case that does not run would make every mutant look caught).
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "generators/cleanup_situations.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace passcheck {
namespace {

TEST(CleanupSituations, SameSeedSameGraph) {
  for (uint64_t seed : {1u, 2u, 77u}) {
    std::string a, b;
    EXPECT_EQ(gen::cleanup_situation_text(seed, 3, &a), gen::cleanup_situation_text(seed, 3, &b));
    EXPECT_EQ(a, b);
  }
  EXPECT_NE(gen::cleanup_situation_text(1), gen::cleanup_situation_text(2));
}

TEST(CleanupSituations, EveryMotifIsDrawnAndEveryCaseRuns) {
  std::set<std::string> seen;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    gen::SituationCase c = gen::generate_cleanup_situation(seed);
    // "...: <motif>(<variant>); <motif>; ..."
    std::string drawn = c.description.substr(c.description.find("): ") + 3);
    for (size_t begin = 0; begin < drawn.size();) {
      size_t end = std::min(drawn.find("; ", begin), drawn.size());
      std::string piece = drawn.substr(begin, end - begin);
      seen.insert(piece.substr(0, piece.find('(')));
      begin = end + 2;
    }
    exec::InputOptions inputs;
    inputs.seed = c.input_seed;
    inputs.int_high = c.int_high;
    exec::ExecutorOptions options;
    options.check_metadata = true;
    EXPECT_NO_THROW(exec::Executor(*c.graph, options).run(exec::make_inputs(*c.graph, inputs)))
        << c.description << "\n"
        << c.graph->print();
  }
  EXPECT_EQ(seen, std::set<std::string>(gen::cleanup_motifs().begin(), gen::cleanup_motifs().end()));
}

}  // namespace
}  // namespace passcheck
