// The passcheck command line end to end: trace, run, check, opt, equiv and their errors
// (exit code 2 and a message naming the problem and where it is; 1 a verification failure).
#include "suites/support/test_support.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace passcheck {
namespace {

using testing::run_command;

using testing::cli;

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
  EXPECT_NE(r.output.find(dir + "/op.txt:2:3: unknown operator 'aten::negate'"), std::string::npos) << r.output;
}

TEST(Cli, MissingGraphFileIsAClearError) {
  auto r = run_command(cli("run /nonexistent/graph.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("cannot open graph file '/nonexistent/graph.txt'"), std::string::npos) << r.output;
}

TEST(Cli, UnknownModelListsTheKnownOnes) {
  auto r = run_command(cli("check --model gpt5"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown model 'gpt5' (known: mlp, two_matmul, llama3, dropout_mlp, deepseek_v3, qwen3, qwen3_moe, llama4, gpt_oss)"), std::string::npos) << r.output;
}

TEST(Cli, UnknownOptionAndOptimizerAreErrors) {
  auto option = run_command(cli("check --model mlp --frobnicate"));
  EXPECT_EQ(option.exit_code, 2);
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

TEST(Cli, PassesListsTheMutantsOnlyWhenAsked) {
  auto plain = run_command(cli("passes"));
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(plain.output.find("mutant-"), std::string::npos) << "the real catalogue names no mutant";
  auto with = run_command(cli("passes --mutants"));
  ASSERT_EQ(with.exit_code, 0) << with.output;
  // The real passes first, then every mutant with the pass it corrupts and its bug.
  EXPECT_EQ(with.output.compare(0, plain.output.size(), plain.output), 0) << with.output;
  const size_t listing = with.output.find("mutants (known-buggy variants");
  ASSERT_NE(listing, std::string::npos) << with.output;
  EXPECT_GE(listing, plain.output.size());
  for (const char* entry : {"  mutant-remat-ignores-prefer-recompute\n      corrupts remat, historical bug 1: SAC under",
                            "  mutant-concretize-accepts-false-guard\n      corrupts concretize, historical bug 9: ",
                            "  mutant-chunk-adds-chunk-dim\n      corrupts chunk, historical bug 10: ",
                            "  mutant-remat-no-writes-saved-storage\n      corrupts remat, no historical bug: guard "
                            "writes-saved-storage disabled: ",
                            "  mutant-cse-widened-merge-duplicate\n      corrupts cse, no historical bug: rule "
                            "merge-duplicate widened"})
    EXPECT_NE(with.output.find(entry, listing), std::string::npos) << entry << "\n" << with.output;
  // An excluded decision (no result can reveal it) has no mutant, so none is listed.
  EXPECT_EQ(with.output.find("mutant-dce-no-collective"), std::string::npos);
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
  for (const std::string sub : {"trace", "run", "check", "bench", "models", "passes", "opt", "equiv"}) {
    auto r = run_command(cli(sub + " --help"));
    EXPECT_EQ(r.exit_code, 0) << sub << ": " << r.output;
    EXPECT_NE(r.output.find("Usage"), std::string::npos) << sub;
  }
}

// ---- opt, equiv, run --device ----------------------------------------------------------

// relu is unused (dce erases it); the two muls are one (cse merges them).
const char* kCleanable = R"(graph(arg %x : f32[3], arg %y : f32[3]):
  %relu : f32[3] = aten::relu(%x)
  %mul : f32[3] = aten::mul.Tensor(%x, %y)
  %mul_1 : f32[3] = aten::mul.Tensor(%x, %y)
  %sub : f32[3] = aten::sub.Tensor(%mul, %mul_1, 1)
  %add : f32[3] = aten::add.Tensor(%mul_1, %y, 1)
  return (%sub, %add)
)";

const char* kCleaned = R"(graph(
    arg %x : f32[3],
    arg %y : f32[3]):
  %mul : f32[3] = aten::mul.Tensor(%x, %y)
  %sub : f32[3] = aten::sub.Tensor(%mul, %mul, 1)
  %add : f32[3] = aten::add.Tensor(%mul, %y, 1)
  return (%sub, %add)
)";

// A dropout the AC tags recomputable and the backward reads: remat must replay it.
const char* kRecomputedDropout = R"(graph(param %w : f32[4, 4], arg %x : f32[4, 4]):
  %a : f32[4, 4] = aten::mm(%x, %w)  #{fqn="layers.0.ffn", recompute=must_save, ac_region=0}
  %d : f32[4, 4], %mask : b8[4, 4] = aten::native_dropout(%a, 0.5, True)  #{fqn="layers.0.ffn", recompute=prefer_recompute, ac_region=0}
  %s : f32[] = aten::sum(%d, None)  #{phase=loss, fqn="loss"}
  %g : f32[4, 4] = aten::mul.Tensor(%d, %mask)  #{phase=backward, fqn="layers.0.ffn"}
  return (%s, %g)
)";

std::string read_back(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CliOpt, PrintsTheResultingGraphAndEveryPassToStderr) {
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/g.graph", kCleanable);
  // A subshell, so that stderr stays apart from the captured stdout.
  auto r = run_command("(" + cli("opt " + dir + "/g.graph --pipeline dce,cse 2>" + dir + "/stderr") + ")");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, kCleaned);
  std::string log = read_back(dir + "/stderr");
  EXPECT_NE(log.find("passcheck opt: dce: changed, nodes 5 -> 4, erased_nodes=1"), std::string::npos) << log;
  EXPECT_NE(log.find("passcheck opt: cse: changed, nodes 4 -> 3, erased_nodes=1, rewired_uses=2"), std::string::npos)
      << log;
}

TEST(CliOpt, WritesTheResultToOutAndItRuns) {
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/g.graph", kCleanable);
  auto r = run_command(cli("opt " + dir + "/g.graph --pipeline \"dce,canonicalize,cse,dce\" -o " + dir + "/out.graph"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_back(dir + "/out.graph"), kCleaned);
  EXPECT_EQ(r.output.find("graph("), std::string::npos) << "the graph went to stdout too: " << r.output;
  auto ran = run_command(cli("run " + dir + "/out.graph"));
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  // An unchanged graph comes back as its own printed form.
  auto again = run_command("(" + cli("opt " + dir + "/out.graph --pipeline dce 2>/dev/null") + ")");
  EXPECT_EQ(again.output, kCleaned);
}

TEST(CliOpt, AMalformedFileIsExit2WithFileLineAndColumn) {
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/bad.graph", "graph(arg %x : f32[2]):\n  %y : f32[2] = aten::neg(%z)\n  return (%y)\n");
  auto r = run_command(cli("opt " + dir + "/bad.graph --pipeline dce"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find(dir + "/bad.graph:2:27: use of undefined value %z"), std::string::npos) << r.output;
}

TEST(CliOpt, AnUnknownPassOrOptionIsExit2NamingIt) {
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/g.graph", kCleanable);
  auto pass = run_command(cli("opt " + dir + "/g.graph --pipeline dce,frobnicate"));
  EXPECT_EQ(pass.exit_code, 2);
  EXPECT_NE(pass.output.find("unknown pass 'frobnicate'"), std::string::npos) << pass.output;
  auto option = run_command(cli("opt " + dir + "/g.graph --pipeline \"remat{speed=max}\""));
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_NE(option.output.find("pass 'remat' has no option 'speed'"), std::string::npos) << option.output;
}

TEST(CliOpt, AGateFailureIsExit1FailedAfterThePass) {
  // remat without rng=replay refuses to recompute a random op: the pass throws.
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/g.graph", kRecomputedDropout);
  auto r = run_command(cli("opt " + dir + "/g.graph --pipeline remat"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("passcheck opt: failed after remat: the pass threw: remat:"), std::string::npos) << r.output;
}

TEST(CliOpt, ConcretizesTheSymbolicGraphChunkWritesSoItRuns) {
  std::string dir = testing::make_temp_dir();
  auto chunked = run_command(cli("chunk --steps 1 --out-graph " + dir + "/c.graph"));
  ASSERT_EQ(chunked.exit_code, 0) << chunked.output;
  auto symbolic = run_command(cli("run " + dir + "/c.graph"));
  EXPECT_EQ(symbolic.exit_code, 2) << "a symbolic graph must not run: " << symbolic.output;
  EXPECT_NE(symbolic.output.find("run the concretize pass first"), std::string::npos) << symbolic.output;
  auto r = run_command(cli("opt " + dir + "/c.graph --pipeline concretize -o " + dir + "/cc.graph"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("concretize: changed"), std::string::npos) << r.output;
  const std::string concrete = read_back(dir + "/cc.graph");
  EXPECT_EQ(concrete.find("symbol "), std::string::npos);
  EXPECT_EQ(concrete.find("claim "), std::string::npos);
  auto ran = run_command(cli("run " + dir + "/cc.graph"));
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_NE(ran.output.find("output 0 %nll_loss_forward: f32[]  sum="), std::string::npos) << ran.output;
}

TEST(CliEquiv, AGraphAndItsOptimizedFormAreEquivalent) {
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/a.graph", kCleanable);
  testing::write_text(dir + "/b.graph", kCleaned);
  auto r = run_command(cli("equiv " + dir + "/a.graph " + dir + "/b.graph --seed 3"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("output 0 (%sub / %sub): equal (f32[3])"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("verdict: EQUIVALENT"), std::string::npos) << r.output;
  auto piped = run_command(cli("equiv " + dir + "/a.graph --pipeline \"dce,canonicalize,cse,dce\""));
  EXPECT_EQ(piped.exit_code, 0) << piped.output;
  EXPECT_NE(piped.output.find("verdict: EQUIVALENT"), std::string::npos) << piped.output;
}

TEST(CliEquiv, ReportsAOneUlpDifferenceWithIndexAndValues) {
  // Two graphs that differ only in a constant: 1.0 and the next float above it.
  std::string dir = testing::make_temp_dir();
  const std::string a = R"(graph(arg %x : f32[3]):
  %z : f32[3] = aten::mul.Scalar(%x, 0)
  %y : f32[3] = aten::add.Scalar(%z, 1.0, 1)
  return (%y)
)";
  std::string b = a;
  b.replace(b.find("1.0, 1)"), 7, "1.0000001192092896, 1)");
  testing::write_text(dir + "/a.graph", a);
  testing::write_text(dir + "/b.graph", b);
  auto r = run_command(cli("equiv " + dir + "/a.graph " + dir + "/b.graph"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("output 0 (%y / %y): DIFFER: 3 of 3 elements, first at index [0]: A 1.0 vs B "
                          "1.0000001192092896 (1 ULP; max 1 ULP)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("verdict: DIFFERENT"), std::string::npos) << r.output;
}

TEST(CliEquiv, CatchesAHandEditedWrongGraph) {
  // The optimized graph with sub's operands swapped by hand: it still parses, runs and
  // passes the verifier, but computes the negation.
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/a.graph", kCleanable);
  auto opt = run_command(cli("opt " + dir + "/a.graph --pipeline dce,cse -o " + dir + "/b.graph"));
  ASSERT_EQ(opt.exit_code, 0) << opt.output;
  std::string edited = read_back(dir + "/b.graph");
  const std::string from = "aten::add.Tensor(%mul, %y, 1)", to = "aten::sub.Tensor(%mul, %y, 1)";
  ASSERT_NE(edited.find(from), std::string::npos) << edited;
  edited.replace(edited.find(from), from.size(), to);
  testing::write_text(dir + "/b.graph", edited);
  auto r = run_command(cli("equiv " + dir + "/a.graph " + dir + "/b.graph"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("output 0 (%sub / %sub): equal"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("output 1 (%add / %add): DIFFER: 3 of 3 elements, first at index [0]"), std::string::npos)
      << r.output;
}

TEST(CliEquiv, MatchesInputsByNameNotPosition) {
  // B lists the same inputs in the other order; inputs go to it by name.
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/a.graph", kCleaned);
  std::string swapped = kCleaned;
  swapped.replace(swapped.find("arg %x : f32[3],\n    arg %y : f32[3]"), 36, "arg %y : f32[3],\n    arg %x : f32[3]");
  testing::write_text(dir + "/b.graph", swapped);
  auto r = run_command(cli("equiv " + dir + "/a.graph " + dir + "/b.graph"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(CliEquiv, DifferentInputSetsAreExit2ListingTheDifferences) {
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/a.graph", "graph(arg %x : f32[2], arg %w : f32[2]):\n  return (%x)\n");
  testing::write_text(dir + "/b.graph", "graph(arg %x : f32[3], arg %y : f32[2], arg %w : i64[2]):\n  return (%x)\n");
  auto r = run_command(cli("equiv " + dir + "/a.graph " + dir + "/b.graph"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("the graphs take different inputs:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("%x: f32[2] in A vs f32[3] in B"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("%w: f32[2] in A vs i64[2] in B"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("only in B: %y : f32[2]"), std::string::npos) << r.output;
}

TEST(CliEquiv, ADifferentOutputCountIsExit1) {
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/a.graph", "graph(arg %x : f32[2]):\n  return (%x, %x)\n");
  testing::write_text(dir + "/b.graph", "graph(arg %x : f32[2]):\n  return (%x)\n");
  auto r = run_command(cli("equiv " + dir + "/a.graph " + dir + "/b.graph"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("output count differs: 2 in A vs 1 in B"), std::string::npos) << r.output;
}

TEST(CliEquiv, RandomOpsDrawFromTheSameGeneratorStateAndAMutantIsCaught) {
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/a.graph", kRecomputedDropout);
  // The real remat replays the forward's generator state for the recomputed dropout.
  auto real = run_command(cli("equiv " + dir + "/a.graph --pipeline \"remat{rng=replay}\""));
  EXPECT_EQ(real.exit_code, 0) << real.output;
  EXPECT_NE(real.output.find("rng_replays=1"), std::string::npos) << real.output;
  // A known-buggy remat draws a fresh mask: the backward's output differs.
  auto mutant = run_command(cli("equiv " + dir + "/a.graph --mutants --pipeline \"mutant-remat-fresh-rng{rng=replay}\""));
  EXPECT_EQ(mutant.exit_code, 1) << mutant.output;
  EXPECT_NE(mutant.output.find("output 1 (%g / %g): DIFFER"), std::string::npos) << mutant.output;
}

TEST(CliEquiv, NeedsExactlyOneOfBAndPipeline) {
  std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/a.graph", kCleaned);
  auto neither = run_command(cli("equiv " + dir + "/a.graph"));
  EXPECT_EQ(neither.exit_code, 2) << neither.output;
  EXPECT_NE(neither.output.find("give a second graph file B or --pipeline P"), std::string::npos) << neither.output;
}

TEST(CliRun, DeviceCpuRunsAGraphTracedOnMeta) {
  std::string dir = testing::make_temp_dir();
  auto traced = run_command(cli("trace --meta --model mlp --out " + dir + "/m.graph"));
  ASSERT_EQ(traced.exit_code, 0) << traced.output;
  ASSERT_NE(read_back(dir + "/m.graph").find("@meta"), std::string::npos) << "the trace is not on meta";
  // As written the graph runs on meta: shapes only, no values.
  auto meta = run_command(cli("run " + dir + "/m.graph"));
  EXPECT_EQ(meta.output.find("sum="), std::string::npos) << meta.output;
  auto r = run_command(cli("run " + dir + "/m.graph --device cpu"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("output 0 %sum: f32[]  sum="), std::string::npos) << r.output;
  if (!testing::cuda_available()) {
    auto cuda = run_command(cli("run " + dir + "/m.graph --device cuda"));
    EXPECT_EQ(cuda.exit_code, 2) << cuda.output;
    EXPECT_NE(cuda.output.find("--device cuda: no CUDA device is available"), std::string::npos) << cuda.output;
  } else {
    auto cuda = run_command(cli("run " + dir + "/m.graph --device cuda"));
    EXPECT_EQ(cuda.exit_code, 0) << cuda.output;
    EXPECT_NE(cuda.output.find("sum="), std::string::npos) << cuda.output;
  }
  // equiv needs values: a meta graph is refused unless moved.
  auto equiv_meta = run_command(cli("equiv " + dir + "/m.graph " + dir + "/m.graph"));
  EXPECT_EQ(equiv_meta.exit_code, 2) << equiv_meta.output;
  EXPECT_NE(equiv_meta.output.find("graph A is on the meta device"), std::string::npos) << equiv_meta.output;
  auto equiv_cpu = run_command(cli("equiv " + dir + "/m.graph --pipeline \"dce,canonicalize,cse,dce\" --device cpu"));
  EXPECT_EQ(equiv_cpu.exit_code, 0) << equiv_cpu.output;
  auto bad = run_command(cli("run " + dir + "/m.graph --device toaster"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--device 'toaster': not a device"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace passcheck
