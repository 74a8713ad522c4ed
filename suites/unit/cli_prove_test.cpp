// `passcheck prove` and `passcheck run` on graph files they must refuse before doing
// anything (exit 2, file:line:col): unknown operators, wrong argument counts, declared
// output kinds the operator cannot return, a rank above the format's cap; and prove's
// merging of identical claims.
#include "suites/support/test_support.h"

#include <gtest/gtest.h>

#include <string>

namespace passcheck {
namespace {

using testing::run_command;

using testing::cli;

// A symbolic graph with two claims and the given node line (line 5).
std::string symbolic_graph(const std::string& node_line) {
  return "symbol s0 in [2, 8] hint 4 multiple_of 2\n"
         "claim split_halves \"hand\" \"%x\" \"the halves add up\": s0 == 2*floordiv(s0, 2)\n"
         "graph(\n"
         "    arg %x : f32[sym(s0), 3]):\n"
         "  " + node_line + "\n"
         "  return ()\n";
}

TEST(CliProve, RefusesWhatRunRefusesWithFileLineAndColumn) {
  const std::string dir = testing::make_temp_dir();
  const struct {
    std::string node, message;
  } cases[] = {
      {"%y : f32[sym(s0), 3] = aten::negate(%x)", ":5:3: unknown operator 'aten::negate'"},
      {"%y : f32[sym(s0), 3] = aten::relu(%x, 2)", ":5:3: aten::relu takes 1 arguments but 2 were given"},
      {"%y : int = aten::relu(%x)", ":5:3: aten::relu returns Tensor or None but output %y is declared int"},
  };
  for (const auto& c : cases) {
    const std::string path = dir + "/bad.graph";
    testing::write_text(path, symbolic_graph(c.node));
    for (const std::string command : {"prove", "run"}) {
      const auto r = run_command(cli(command + " " + path));
      EXPECT_EQ(r.exit_code, 2) << command << ": " << r.output;
      EXPECT_NE(r.output.find("passcheck " + command + ": error: " + path + c.message), std::string::npos)
          << command << ": " << r.output;
    }
  }
}

TEST(CliProve, AWellFormedGraphIsProvedAndIdenticalClaimsOnce) {
  const std::string dir = testing::make_temp_dir();
  // The same claim about two more subjects, and one of another kind.
  const std::string text =
      "symbol s0 in [2, 8] hint 4 multiple_of 2\n"
      "claim split_halves \"hand\" \"%x\" \"the halves add up\": s0 == 2*floordiv(s0, 2)\n"
      "claim split_halves \"hand\" \"%y\" \"again\": s0 == 2*floordiv(s0, 2)\n"
      "claim split_halves \"hand\" \"%z\" \"and again\": s0 == 2*floordiv(s0, 2)\n"
      "claim nonnegative \"hand\" \"%x\" \"a size\": s0 >= 0\n"
      "graph(\n"
      "    arg %x : f32[sym(s0), 3]):\n"
      "  %y : f32[sym(s0), 3] = aten::relu(%x)\n"
      "  return (%y)\n";
  testing::write_text(dir + "/ok.graph", text);
  const auto r = run_command(cli("prove " + dir + "/ok.graph"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("4 claims: 4 proved, 0 refuted, 0 unknown"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("; 2 identical claims proved once"), std::string::npos) << r.output;
}

TEST(CliRun, ARankAboveTheCapIsRefusedAtItsColumn) {
  const std::string dir = testing::make_temp_dir();
  std::string dims = "1";
  for (int i = 1; i < 200000; ++i) dims += ", 1";
  testing::write_text(dir + "/rank.graph", "graph(\n    arg %x : f32[" + dims + "]):\n  return (%x)\n");
  const auto r = run_command(cli("run " + dir + "/rank.graph"));
  EXPECT_EQ(r.exit_code, 2) << r.output.substr(0, 400);
  EXPECT_NE(r.output.find(dir + "/rank.graph:2:210: type has more than 64 sizes"), std::string::npos)
      << r.output.substr(0, 400);
}

}  // namespace
}  // namespace passcheck
