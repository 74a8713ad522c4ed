// The exit-code contract of README "Exit codes", held for every subcommand: 0 verified,
// 1 a real verification failure, 2 bad input or usage with the offending item named.
// Each row runs the binary; a subcommand added without a row here fails the coverage test.
#include "suites/support/test_support.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace passcheck {
namespace {

using testing::run_command;

using testing::cli;

struct Expectation {
  std::string subcommand;
  std::string args;       ///< after the subcommand; {dir} is the scratch directory
  int exit_code;
  std::string mentions;   ///< text the output must contain ("" : anything)
};

std::string expand(std::string text, const std::string& dir) {
  for (size_t at; (at = text.find("{dir}")) != std::string::npos;) text.replace(at, 5, dir);
  return text;
}

class ExitCodes : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = testing::make_temp_dir();
    auto traced = run_command(cli("trace --model mlp --out " + dir_ + "/g.txt"));
    ASSERT_EQ(traced.exit_code, 0) << traced.output;
    // g2: g with gelu_backward's approximation changed, so it computes something else on the same inputs.
    std::ifstream in(dir_ + "/g.txt");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t at = text.find("\"none\")", text.find("aten::gelu_backward"));
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 6, "\"tanh\"");
    std::ofstream(dir_ + "/g2.txt") << text;
    std::string bad = text;
    bad.replace(bad.find("aten::mm("), 9, "aten::no_such_op(");
    std::ofstream(dir_ + "/bad.txt") << bad;
    auto crash = run_command(cli("capture --model mlp --pipeline crash-on-odd --test-passes --out " + dir_ + "/crash.repro"));
    ASSERT_EQ(crash.exit_code, 1) << crash.output;
  }
  static std::string dir_;
};
std::string ExitCodes::dir_;

const std::vector<Expectation>& contract() {
  static const std::vector<Expectation> rows = {
      {"models", "", 0, "mlp"},
      {"models", "extra", 2, "extra"},
      {"passes", "", 0, "remat"},
      {"passes", "--pipeline dce,cleanup,remat", 0, "cse"},
      {"passes", "--pipeline dce,nopass", 2, "unknown pass 'nopass'"},
      {"trace", "--model mlp", 0, "aten::"},
      {"trace", "--model nope", 2, "nope"},
      {"trace", "--model llama3 --config bad --meta", 2, "unknown configuration 'bad' of model 'llama3'"},
      {"trace", "--model llama3 --config 405b", 2, "trace it on the meta device"},
      {"trace", "--model llama3 --parallel fsdp --mesh dp=2 --rank 2", 2, "rank 2 is outside mesh dp=2"},
      {"trace", "--model mlp --out {dir}/missing/g.txt", 2, "No such file or directory"},
      {"run", "{dir}/g.txt", 0, "ran"},
      {"run", "{dir}/bad.txt", 2, "no_such_op"},
      {"run", "{dir}", 2, "is a directory"},
      {"opt", "{dir}/g.txt --pipeline dce,cse -o {dir}/o.txt", 0, ""},
      {"opt", "{dir}/g.txt --pipeline 'apply-ac{mode=selective,option=x}'", 2, "option 'option'"},
      {"opt", "{dir}/g.txt --pipeline ''", 2, "--pipeline: must not be empty"},
      {"run", "{dir}/g.txt --seed 1e23", 2, "--seed: expected a whole number from 0 to 18446744073709551615"},
      {"run", "{dir}/g.txt --memory-budget -5", 2, "--memory-budget"},
      {"equiv", "{dir}/g.txt {dir}/g.txt", 0, ""},
      {"equiv", "{dir}/g.txt {dir}/g2.txt", 1, ""},
      {"equiv", "{dir}/g.txt {dir}/nope.txt", 2, "nope.txt"},
      {"capturable", "{dir}/g.txt", 0, ""},
      {"capturable", "{dir}/nope.txt", 2, "nope.txt"},
      {"capturable", "{dir}/g.txt --device gpu9", 2, "--device 'gpu9'"},
      {"check", "--model mlp --steps 1", 0, "BITWISE EQUAL"},
      {"check", "--model mlp --steps 0", 2, "--steps"},
      {"check", "--model llama3 --batch 65536", 2, "--memory-budget: llama3 at these sizes needs about"},
      {"check", "--model mlp --lr 1e308", 2, "--lr: must be at most 1000"},
      {"check", "--model llama3 --parallel fsdp --mesh dp=2,dp=2", 2, "mesh dim 'dp' appears twice"},
      {"check", "--model llama3 --mesh dp=2", 2, "--mesh needs --parallel"},
      {"check", "--model llama3 --parallel fsdp --mesh dp=2 --backend mpi", 2, "--backend"},
      {"check", "--model mlp --lr inf", 2, "--lr"},
      {"check", "--model mlp --steps 1 --pipeline dce --dump-dir /proc/nope/d", 2, "--dump-dir"},
      {"bench", "--threads 100000", 2, "--threads"},
      {"bench", "--production --configs llama3", 2, "MODEL:CONFIG"},
      {"bench", "--model mlp --json {dir}/missing/b.json", 2, "does not exist"},
      {"chunk", "--model nope", 2, "nope"},
      {"chunk", "--timeout-ms 0", 2, "--timeout-ms"},
      {"prove", "{dir}/g.txt", 0, ""},
      {"prove", "{dir}/nope.txt", 2, "nope.txt"},
      {"fuzz", "--pipeline dce --cases 0", 2, "--cases"},
      {"fuzz", "--pipeline nopass --cases 1 --out {dir}/f", 2, "nopass"},
      {"repro", "{dir}/crash.repro", 1, ""},
      {"repro", "{dir}/g.txt", 2, "not a passcheck repro file"},
      {"minimize", "{dir}/crash.repro --out {dir}/m.repro --seconds 5", 0, "minimized"},
      {"minimize", "{dir}/nope.repro", 2, "nope.repro"},
      {"capture", "--model mlp --pipeline dce --out {dir}/c.repro", 0, "passes"},
      {"capture", "--model mlp --pipeline crash-on-odd --test-passes --out {dir}/c2.repro", 1, "crash"},
      {"capture", "--model mlp --pipeline nopass --out {dir}/c3.repro", 2, "nopass"},
      {"export-python", "{dir}/g.txt -o {dir}/g.py", 0, ""},
      {"export-python", "{dir}/nope.txt", 2, "nope.txt"},
      // gate's 0 and 1 need a git repository: suites/gate/gate_test.cpp.
      {"gate", "--repo {dir} --base HEAD", 2, "is not a git work tree"},
      {"fuzz", "--python-pass no_module_like_this:f --cases 1 --out {dir}/p", 2, "cannot import module"},
  };
  return rows;
}

TEST_F(ExitCodes, EverySubcommandKeepsTheContract) {
  for (const Expectation& e : contract()) {
    std::string command = e.subcommand + " " + expand(e.args, dir_);
    auto r = run_command(cli(command));
    EXPECT_EQ(r.exit_code, e.exit_code) << "passcheck " << command << "\n" << r.output;
    if (!e.mentions.empty()) EXPECT_NE(r.output.find(e.mentions), std::string::npos) << "passcheck " << command << "\n" << r.output;
  }
}

TEST_F(ExitCodes, UsageErrorsAreTwoForEverySubcommand) {
  // CLI11's own codes (104, 106, 109, ...) never reach the user.
  auto help = run_command(cli("--help"));
  ASSERT_EQ(help.exit_code, 0);
  std::map<std::string, std::string> valid_args;  // a row's arguments that are valid input, else none
  for (const Expectation& e : contract()) {
    const bool valid = e.exit_code != 2;
    auto [it, added] = valid_args.emplace(e.subcommand, valid ? e.args : "");
    if (!added && it->second.empty() && valid) it->second = e.args;
  }
  for (const auto& [subcommand, args] : valid_args) {
    Expectation e{subcommand, args, 2, ""};
    auto r = run_command(cli(e.subcommand + " " + expand(e.args, dir_) + " --no-such-option"));
    EXPECT_EQ(r.exit_code, 2) << e.subcommand << "\n" << r.output;
    EXPECT_NE(r.output.find("--no-such-option"), std::string::npos) << e.subcommand << "\n" << r.output;
    EXPECT_NE(r.output.find("passcheck " + e.subcommand + ": usage error"), std::string::npos) << r.output;
  }
  auto unknown = run_command(cli("frobnicate"));
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("unknown subcommand 'frobnicate'"), std::string::npos) << unknown.output;
  auto missing_file = run_command(cli("run"));
  EXPECT_EQ(missing_file.exit_code, 2) << missing_file.output;
  auto none = run_command(cli(""));
  EXPECT_EQ(none.exit_code, 2) << none.output;
}

TEST_F(ExitCodes, EverySubcommandHasARow) {
  // The subcommands --help lists: each must appear in the contract table.
  auto help = run_command(cli("--help"));
  ASSERT_EQ(help.exit_code, 0);
  std::set<std::string> covered;
  for (const Expectation& e : contract()) covered.insert(e.subcommand);
  std::istringstream lines(help.output.substr(help.output.find("Subcommands:")));
  std::string line;
  std::getline(lines, line);
  int listed = 0;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string name;
    if (!(words >> name)) continue;
    ++listed;
    EXPECT_TRUE(covered.count(name)) << "subcommand '" << name << "' has no row in the exit-code contract test";
  }
  EXPECT_GE(listed, 14) << help.output;
}

}  // namespace
}  // namespace passcheck
