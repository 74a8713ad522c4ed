// `passcheck gate` on a scratch git repository laid out like a passcheck checkout: one
// placeholder source file per pass family (passes/<family>/x.cpp), the real text cases
// (suites/passes_text) and a docs file, committed and tagged "base". A one-line change in
// one family's file must select that family alone (every other pass skipped with a line),
// write well-formed JUnit XML listing its checks and hold (exit 0); a docs-only change
// selects nothing; a bad ref or a directory outside git is bad input (exit 2); and the
// family's mutant standing in for its real pass fails the gate (exit 1).
#include "passes/registry.h"
#include "suites/support/test_support.h"
#include "workflows/gate/gate.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace passcheck {
namespace {

namespace fs = std::filesystem;
using testing::run_command;

// The family the tests change: one pass, one mutant, text cases, quick on small models.
const char* const kFamily = "placement";
const char* const kFamilyPass = "eliminate-alias-round-trips";
const char* const kFamilyMutant = "mutant-eliminate-alias-rewires-third-placement";

std::string quote(const std::string& s) { return "'" + s + "'"; }

class Gate : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::make_temp_dir();
    repo_ = dir_ + "/repo";
    fs::create_directories(repo_ + "/suites/passes_text");
    for (const auto& entry : fs::directory_iterator(testing::source_path("suites/passes_text")))
      if (entry.path().extension() == ".graph")
        fs::copy_file(entry.path(), repo_ + "/suites/passes_text/" + entry.path().filename().string());
    for (const check::PassFamily& family : check::builtin_pass_families()) {
      fs::create_directories(repo_ + "/passes/" + family.name);
      testing::write_text(repo_ + "/passes/" + family.name + "/x.cpp", "// " + family.name + "\n");
    }
    fs::create_directories(repo_ + "/docs");
    testing::write_text(repo_ + "/docs/guide.md", "# guide\n");
    git("init -q && git -C " + quote(repo_) + " add -A && git -C " + quote(repo_) +
        " -c user.name=t -c user.email=t@t commit -qm base && git -C " + quote(repo_) + " tag base");
  }

  void git(const std::string& args) {
    auto r = run_command("git -C " + quote(repo_) + " " + args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  void commit_line(const std::string& file, const std::string& line) {
    std::ofstream(repo_ + "/" + file, std::ios::app) << line << "\n";
    git("-c user.name=t -c user.email=t@t commit -qam change");
  }

  testing::CommandResult gate(const std::string& extra = "", const std::string& base = "base") {
    return run_command(testing::passcheck_binary() + " gate --repo " + quote(repo_) + " --base " + base +
                       " --models mlp,two_matmul --fuzz-seconds 2 --out " + quote(dir_ + "/repros") + " " +
                       extra);
  }

  std::string dir_, repo_;
};

TEST_F(Gate, AOneLineChangeSelectsOnlyThatFamily) {
  commit_line(std::string("passes/") + kFamily + "/x.cpp", "// one more line");
  const std::string junit = dir_ + "/gate.xml", html = dir_ + "/gate.html";
  auto r = gate("--junit " + quote(junit) + " --report " + quote(html));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(std::string("passes/") + kFamily + "/x.cpp -> family " + kFamily), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(std::string("selected families: ") + kFamily + "\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(std::string("pass ") + kFamilyPass + " (family " + kFamily + ")"), std::string::npos)
      << r.output;
  // Every pass of every other family is named as skipped, and none of them ran.
  for (const check::PassFamily& family : check::builtin_pass_families()) {
    if (family.name == kFamily) continue;
    for (const std::string& pass : family.passes) {
      EXPECT_NE(r.output.find("skipped " + pass + ": family " + family.name + " unchanged"), std::string::npos)
          << pass << "\n" << r.output;
      EXPECT_EQ(r.output.find("pass " + pass + " (family"), std::string::npos) << pass << "\n" << r.output;
    }
  }
  EXPECT_NE(r.output.find(std::string("held    mutant ") + kFamilyMutant), std::string::npos) << r.output;

  // The JUnit file parses as XML and lists the pass's checks.
  auto xml = run_command("python3 -c \"import sys, xml.etree.ElementTree as E\n"
                         "root = E.parse(sys.argv[1]).getroot()\n"
                         "for s in root.iter('testsuite'):\n"
                         "  for c in s.iter('testcase'): print(s.get('name') + ' | ' + c.get('name') + ' | ' + "
                         "('failed' if c.find('failure') is not None else 'ok'))\" " +
                         quote(junit));
  ASSERT_EQ(xml.exit_code, 0) << xml.output;
  for (const std::string& check : {std::string("text cases"), std::string("properties on mlp"), std::string("properties on two_matmul"),
                                   std::string("mutant ") + kFamilyMutant, std::string("fuzz seed 1")})
    EXPECT_NE(xml.output.find(std::string(kFamilyPass) + " | " + check + " | ok"), std::string::npos)
        << check << "\n" << xml.output;

  // The HTML report holds the verdict, the selection and the pass's table of checks.
  std::ifstream in(html);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("PASSED"), std::string::npos);
  EXPECT_NE(page.find(std::string("passes/") + kFamily + "/x.cpp -&gt; family " + kFamily), std::string::npos);
  EXPECT_NE(page.find(std::string("pass ") + kFamilyPass + " (family " + kFamily + ")"), std::string::npos);
  EXPECT_NE(page.find("skipped passes"), std::string::npos);
}

TEST_F(Gate, ADocsOnlyChangeSelectsNothing) {
  // Uncommitted: the gate counts the work tree too.
  std::ofstream(repo_ + "/docs/guide.md", std::ios::app) << "one more line\n";
  auto r = gate();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("docs/guide.md -> nothing"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("selected families: none"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("\npass "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(std::string("skipped ") + kFamilyPass), std::string::npos) << r.output;
}

TEST_F(Gate, BadInputExitsTwo) {
  auto bad_ref = gate("", "no-such-ref");
  EXPECT_EQ(bad_ref.exit_code, 2) << bad_ref.output;
  EXPECT_NE(bad_ref.output.find("--base no-such-ref: no such commit"), std::string::npos) << bad_ref.output;
  auto no_repo = run_command(testing::passcheck_binary() + " gate --repo " + quote(testing::make_temp_dir()));
  EXPECT_EQ(no_repo.exit_code, 2) << no_repo.output;
  EXPECT_NE(no_repo.output.find("is not a git work tree"), std::string::npos) << no_repo.output;
}

// A gate that cannot fail is no gate: the family's known-buggy pass registered under the
// real pass's name must make it exit 1 and name the failing checks.
TEST_F(Gate, FailsWhenTheFamilysMutantStandsInForItsPass) {
  commit_line(std::string("passes/") + kFamily + "/x.cpp", "// one more line");
  const std::string junit = dir_ + "/gate.xml";
  const std::string html = dir_ + "/gate.html";
  auto r = gate(std::string("--mutant-as-pass ") + kFamilyMutant + " --junit " + quote(junit) + " --report " + quote(html));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::ifstream in(html);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("FAILED"), std::string::npos);
  EXPECT_NE(r.output.find("FAILED  text cases"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("gate: FAIL"), std::string::npos) << r.output;
  auto xml = run_command("grep -c '<failure' " + quote(junit));
  EXPECT_NE(xml.output, "0\n") << xml.output;
}

// The selection as a library call (workflows/gate/gate.h): a family's own file selects it,
// the layers every pass runs on select every family, docs select nothing.
TEST(GateSelection, ChangedFilesSelectTheirFamilies) {
  const check::PassRegistry& registry = check::PassRegistry::global();
  const std::vector<check::PassFamily> families = check::builtin_pass_families();
  const gate::GateSelection one =
      gate::select_families({std::string("passes/") + kFamily + "/x.cpp", "docs/passes.md"}, families, "", registry);
  EXPECT_EQ(one.families, std::set<std::string>{kFamily});
  const gate::GateSelection all = gate::select_families({"framework/exec/executor.cpp"}, families, "", registry);
  EXPECT_EQ(all.families.size(), families.size());
  EXPECT_TRUE(gate::select_families({"docs/passes.md"}, families, "", registry).families.empty());
}

}  // namespace
}  // namespace passcheck
