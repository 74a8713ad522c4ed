// Long runs show progress: the training driver reports each step as it finishes (check
// prints its row then), the chunk run reports each stage, and on a terminal `chunk`
// rewrites one progress line (off a terminal nothing extra is printed).
#include "oracles/chunked_training.h"
#include "oracles/training_driver.h"
#include "suites/support/test_support.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace passcheck {
namespace {

using testing::run_command;

using testing::cli;

TEST(Progress, TheDriverReportsEveryStepAsItFinishes) {
  oracles::DriverOptions options;
  options.model = "mlp";
  options.steps = 3;
  std::vector<int> steps_seen;
  std::vector<size_t> rows_so_far;
  options.on_step = [&](const oracles::DriverReport& so_far, const oracles::StepReport& step) {
    steps_seen.push_back(step.step);
    rows_so_far.push_back(so_far.steps.size());
    EXPECT_EQ(so_far.model, "mlp");
    EXPECT_GT(so_far.graph_nodes, 0u);  // the header is printable from the first row on
  };
  oracles::DriverReport report = oracles::run_traced_vs_eager(options);
  EXPECT_EQ(steps_seen, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(rows_so_far, (std::vector<size_t>{1, 2, 3}));
  EXPECT_EQ(report.format(), report.format_header() + oracles::DriverReport::format_step(report.steps[0]) +
                                 oracles::DriverReport::format_step(report.steps[1]) +
                                 oracles::DriverReport::format_step(report.steps[2]) + report.format_footer());
}

TEST(Progress, CheckPrintsTheSameTableItStreams) {
  auto r = run_command(cli("check --model mlp --steps 2 --pipeline dce"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  size_t header = r.output.find("step  compared");
  size_t row1 = r.output.find("\n1     ", header);
  size_t row2 = r.output.find("\n2     ", header);
  size_t verdict = r.output.find("verdict: BITWISE EQUAL");
  ASSERT_NE(header, std::string::npos) << r.output;
  EXPECT_LT(header, row1);
  EXPECT_LT(row1, row2);
  EXPECT_LT(row2, verdict);
  EXPECT_EQ(r.output.find("step  compared", header + 1), std::string::npos) << "the table is printed once\n" << r.output;
}

TEST(Progress, ChunkReportsEachStage) {
  oracles::ChunkedTrainingOptions options;
  options.steps = 2;
  options.registry = &check::PassRegistry::global();
  std::vector<std::string> stages;
  options.on_progress = [&](const std::string& stage) { stages.push_back(stage); };
  oracles::run_graph_chunked_vs_eager_chunked(options);
  ASSERT_EQ(stages.size(), 6u);
  EXPECT_EQ(stages[0], "symbolic trace");
  EXPECT_EQ(stages[1].rfind("chunk (", 0), 0u) << stages[1];
  EXPECT_EQ(stages[2].rfind("proving ", 0), 0u) << stages[2];
  EXPECT_EQ(stages[3], "training: step 1/2");
  EXPECT_EQ(stages[4], "training: step 1/2 done");
  EXPECT_EQ(stages[5], "training: step 2/2 done");
}

TEST(Progress, ChunkProgressLineOnlyOnATerminal) {
  auto plain = run_command(cli("chunk --steps 1"));
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(plain.output.find("\r"), std::string::npos) << plain.output;
  if (run_command("command -v script").exit_code != 0) GTEST_SKIP() << "script(1) is not installed";
  auto terminal = run_command("script -qec \"" + cli("chunk --steps 1") + "\" /dev/null");
  ASSERT_EQ(terminal.exit_code, 0) << terminal.output;
  EXPECT_NE(terminal.output.find("\r\033[Kpasscheck chunk: proving "), std::string::npos) << terminal.output;
}

}  // namespace
}  // namespace passcheck
