// The passcheck command line end to end: trace, run, check and their errors (exit
// code 2 and a message naming the problem and where it is).
#include "suites/support/test_support.h"

#include <gtest/gtest.h>

namespace passcheck {
namespace {

using testing::run_command;

std::string cli(const std::string& args) { return testing::passcheck_binary() + " " + args; }

TEST(Cli, TraceWritesAGraphThatRunReExecutes) {
  std::string dir = testing::make_temp_dir();
  auto traced = run_command(cli("trace --model two_matmul --out " + dir + "/g.txt"));
  ASSERT_EQ(traced.exit_code, 0) << traced.output;
  auto ran = run_command(cli("run " + dir + "/g.txt"));
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_NE(ran.output.find("ran 13 nodes"), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("output 0 %sum: f32[]"), std::string::npos) << ran.output;
}

TEST(Cli, TracePrintsTheJointGraph) {
  auto r = run_command(cli("trace --model two_matmul"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("aten::gelu_backward(%mm_3, %mm, \"none\")  #{phase=backward"), std::string::npos) << r.output;
}

TEST(Cli, CheckReportsBitwiseEquality) {
  auto r = run_command(cli("check --model mlp --steps 2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("verdict: BITWISE EQUAL (10 tensors compared over 2 steps, 0 differ)"), std::string::npos)
      << r.output;
}

TEST(Cli, MalformedGraphFileNamesLineAndColumn) {
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/bad.txt", "graph(arg %x : f32[2]):\n  %y : f32[2] = aten::neg(%z)\n  return (%y)\n");
  auto r = run_command(cli("run " + dir + "/bad.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find(dir + "/bad.txt:2:27: use of undefined value %z"), std::string::npos) << r.output;
}

TEST(Cli, UnknownOperatorInAGraphFileIsAClearError) {
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/op.txt", "graph(arg %x : f32[2]):\n  %y : f32[2] = aten::negate(%x)\n  return (%y)\n");
  auto r = run_command(cli("run " + dir + "/op.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown operator 'aten::negate'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(line 2)"), std::string::npos) << r.output;
}

TEST(Cli, MissingGraphFileIsAClearError) {
  auto r = run_command(cli("run /nonexistent/graph.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("cannot open graph file '/nonexistent/graph.txt'"), std::string::npos) << r.output;
}

TEST(Cli, UnknownModelListsTheKnownOnes) {
  auto r = run_command(cli("check --model gpt5"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown model 'gpt5' (known: mlp, two_matmul, llama3, dropout_mlp, deepseek_v3)"), std::string::npos) << r.output;
}

TEST(Cli, UnknownOptionAndOptimizerAreErrors) {
  auto option = run_command(cli("check --model mlp --frobnicate"));
  EXPECT_NE(option.exit_code, 0);
  EXPECT_NE(option.output.find("--frobnicate"), std::string::npos) << option.output;
  auto optimizer = run_command(cli("check --model mlp --optimizer lion"));
  EXPECT_EQ(optimizer.exit_code, 2);
  EXPECT_NE(optimizer.output.find("unknown optimizer 'lion' (known: sgd, adam)"), std::string::npos) << optimizer.output;
}

TEST(Cli, PassesPrintsTheCatalogue) {
  auto r = run_command(cli("passes"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* pass : {"dce", "cse", "canonicalize", "sac-tag", "remat"})
    EXPECT_NE(r.output.find(std::string(pass) + "\n"), std::string::npos) << pass;
  EXPECT_NE(r.output.find("policy (default: default; choices: default, eager, full, op)"), std::string::npos) << r.output;
}

TEST(Cli, CheckWithAPipelinePrintsEveryPassAndTheVerdict) {
  auto r = run_command(cli("check --model two_matmul --steps 2 --pipeline \"dce,canonicalize,ac-regions\""));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("pipeline: dce,canonicalize,ac-regions"), std::string::npos) << r.output;
  for (const char* column : {"nodes", "recomputed", "est. peak", "held fwd->bwd", "verifier"})
    EXPECT_NE(r.output.find(column), std::string::npos) << column;
  EXPECT_NE(r.output.find("(traced graph)"), std::string::npos);
  EXPECT_NE(r.output.find("verdict: BITWISE EQUAL"), std::string::npos);
}

TEST(Cli, APipelineSyntaxErrorNamesTheColumn) {
  auto r = run_command(cli("check --model mlp --pipeline \"dce,sac-tag{policy=eager\""));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("column 25: expected ',' or '}' in the options of 'sac-tag'"), std::string::npos) << r.output;
}

TEST(Cli, AFailingPassIsReportedAsFailedAfterIt) {
  // remat refuses a dropout tagged recomputable: the check fails with exit code 1.
  auto r = run_command(cli("check --model dropout_mlp --steps 1 --pipeline \"ac-regions,sac-tag,remat\""));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("verdict: FAILED after remat: the pass threw: remat:"), std::string::npos) << r.output;
}

TEST(Cli, EverySubcommandHasHelp) {
  for (const std::string sub : {"trace", "run", "check", "bench", "models", "passes"}) {
    auto r = run_command(cli(sub + " --help"));
    EXPECT_EQ(r.exit_code, 0) << sub << ": " << r.output;
    EXPECT_NE(r.output.find("Usage"), std::string::npos) << sub;
  }
}

}  // namespace
}  // namespace passcheck
