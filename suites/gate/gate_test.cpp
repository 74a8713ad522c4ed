// `passcheck gate` on a scratch clone of this checkout, read against this build's own
// dependency graph and tests (--build-dir): a one-line change in the executor selects the
// tests that include its header first; one in the FX exporter selects the fx suite
// through its Python imports; one in a pass selects that pass's family alone; a document
// selects its doc-example test; a file nothing reads selects nothing and says so. Run for
// real, a pass change gives a verdict within its budget, names the checks on which the
// pass decided nothing (vacuous) and what the budget left unreached, and writes JUnit
// and HTML; the pass's mutant standing in for it fails the gate; bad input exits 2.
#include "passes/registry.h"
#include "suites/support/test_support.h"
#include "workflows/gate/dependencies.h"
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
const char* const kFamilyFile = "passes/placement/eliminate_alias_round_trips_pass.cpp";
const char* const kFamilyMutant = "mutant-eliminate-alias-rewires-third-placement";

std::string quote(const std::string& s) { return "'" + s + "'"; }

// The build these tests belong to: the passcheck binary's bin/ directory's parent.
std::string build_dir() { return fs::path(testing::passcheck_binary()).parent_path().parent_path().string(); }

class Gate : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string source = testing::source_path("");
    if (run_command("git -C " + quote(source) + " rev-parse --is-inside-work-tree").exit_code != 0)
      GTEST_SKIP() << "the source tree is not a git work tree";
    if (!fs::exists(fs::path(build_dir()) / "build.ninja")) GTEST_SKIP() << "not a Ninja build";
    dir_ = testing::make_temp_dir();
    repo_ = dir_ + "/repo";
    auto r = run_command("git clone -q --shared " + quote(source) + " " + quote(repo_));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  void append_line(const std::string& file, const std::string& line) {
    std::ofstream(repo_ + "/" + file, std::ios::app) << line << "\n";
  }

  testing::CommandResult gate(const std::string& extra, const std::string& base = "HEAD") {
    return run_command(testing::passcheck_binary() + " gate --repo " + quote(repo_) + " --build-dir " + quote(build_dir()) +
                       " --base " + base + " --models mlp,two_matmul --fuzz-seconds 2 --mutant-seconds 5 --skip-tests '^Gate' --out " +
                       quote(dir_ + "/repros") + " " + extra);
  }

  std::string dir_, repo_;
};

// The first planned test line, and whether any planned test line holds `text`.
bool plan_has(const std::string& output, const std::string& text) {
  return output.find("\n  test " + text) != std::string::npos;
}

TEST_F(Gate, AnExecutorChangeRunsTheTestsIncludingItsHeaderFirst) {
  append_line("framework/exec/executor.cpp", "// one more line");
  auto r = gate("--plan");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("framework/exec/executor.cpp -> "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("-> nothing"), std::string::npos) << r.output;
  // The first test planned names the executor's header; the tests that only link it come later.
  const size_t first = r.output.find("\n  test ");
  ASSERT_NE(first, std::string::npos) << r.output;
  const std::string line = r.output.substr(first, r.output.find('\n', first + 1) - first);
  EXPECT_NE(line.find("[names"), std::string::npos) << line;
  EXPECT_NE(line.find("framework/exec/executor"), std::string::npos) << line;
  EXPECT_LT(r.output.find("[names"), r.output.find("[links")) << r.output;
}

TEST_F(Gate, AnExporterChangeSelectsTheFxSuiteThroughItsImports) {
  if (!fs::exists(testing::source_path("suites/fx/fx_suite.py"))) GTEST_SKIP();
  append_line("python/passcheck_fx/exporter.py", "# one more line");
  auto r = gate("--plan");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  if (r.output.find("fx.roundtrip") == std::string::npos) GTEST_SKIP() << "this build has no fx suite (no Python)";
  EXPECT_TRUE(plan_has(r.output, "fx.roundtrip_llama3_debug [names")) << r.output;
  EXPECT_NE(r.output.find("which imports python/passcheck_fx/exporter.py"), std::string::npos) << r.output;
}

TEST_F(Gate, APassChangeSelectsItsFamilyAloneAndADocItsExampleTest) {
  append_line(kFamilyFile, "// one more line");
  append_line("docs/ci-gate.md", "one more line");
  std::ofstream(repo_ + "/notes.txt") << "not part of anything\n";
  auto r = gate("--plan");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(std::string("selected families: ") + kFamily + "\n"), std::string::npos) << r.output;
  EXPECT_TRUE(plan_has(r.output, "house.doc_examples_run.ci-gate [names")) << r.output;
  EXPECT_NE(r.output.find("notes.txt -> nothing: no target reads it and no test names it"), std::string::npos) << r.output;
  for (const check::PassFamily& family : check::builtin_pass_families()) {
    if (family.name == kFamily) continue;
    for (const std::string& pass : family.passes)
      EXPECT_NE(r.output.find("skipped " + pass + ": family " + family.name + " unchanged"), std::string::npos)
          << pass << "\n" << r.output;
  }
  EXPECT_NE(r.output.find(std::string("pass ") + kFamilyPass + ": generated cases"), std::string::npos) << r.output;
}

TEST_F(Gate, APassChangeGivesAVerdictWithinItsBudgetAndNamesVacuousChecks) {
  append_line(kFamilyFile, "// one more line");
  const std::string junit = dir_ + "/gate.xml", html = dir_ + "/gate.html";
  auto r = gate("--budget 35s --jobs 2 --junit " + quote(junit) + " --report " + quote(html));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("gate: PASS"), std::string::npos) << r.output;
  // mlp carries no wanted placement: the pass decides nothing there, and the gate says so.
  EXPECT_NE(r.output.find(std::string("vacuous   ") + kFamilyPass + ": properties on mlp"), std::string::npos) << r.output;
  // The generated cases reach its decisions.
  EXPECT_NE(r.output.find(std::string("held      ") + kFamilyPass + ": generated cases"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("not reached within the budget"), std::string::npos) << r.output;
  auto xml = run_command("python3 -c \"import sys, xml.etree.ElementTree as E\n"
                         "root = E.parse(sys.argv[1]).getroot()\n"
                         "print(sorted(s.get('name') for s in root.iter('testsuite')))\" " +
                         quote(junit));
  ASSERT_EQ(xml.exit_code, 0) << xml.output;
  EXPECT_NE(xml.output.find(kFamilyPass), std::string::npos) << xml.output;
  std::ifstream in(html);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("PASSED"), std::string::npos);
  EXPECT_NE(page.find("vacuous"), std::string::npos);
}

// A gate that cannot fail is no gate: the family's known-buggy pass registered under the
// real pass's name must make it exit 1 and name the failing check.
TEST_F(Gate, FailsWhenTheFamilysMutantStandsInForItsPass) {
  append_line(kFamilyFile, "// one more line");
  auto r = gate(std::string("--budget 60s --fail-fast --mutant-as-pass ") + kFamilyMutant);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("FAILED"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("gate: FAIL"), std::string::npos) << r.output;
}

TEST_F(Gate, BadInputExitsTwo) {
  auto bad_ref = gate("--plan", "no-such-ref");
  EXPECT_EQ(bad_ref.exit_code, 2) << bad_ref.output;
  EXPECT_NE(bad_ref.output.find("--base no-such-ref: no such commit"), std::string::npos) << bad_ref.output;
  auto no_build = run_command(testing::passcheck_binary() + " gate --plan --base HEAD --repo " + quote(repo_) +
                              " --build-dir " + quote(dir_));
  EXPECT_EQ(no_build.exit_code, 2) << no_build.output;
  EXPECT_NE(no_build.output.find("not a CMake/Ninja build"), std::string::npos) << no_build.output;
  auto no_repo = run_command(testing::passcheck_binary() + " gate --repo " + quote(testing::make_temp_dir()));
  EXPECT_EQ(no_repo.exit_code, 2) << no_repo.output;
  EXPECT_NE(no_repo.output.find("is not a git work tree"), std::string::npos) << no_repo.output;
  auto bad_budget = run_command(testing::passcheck_binary() + " gate --budget 10x");
  EXPECT_EQ(bad_budget.exit_code, 2) << bad_budget.output;
}

// Python imports: a package's __init__ is run by every import of its submodules.
TEST(GateDependencies, PythonImportersFollowPackagesAndRelativeImports) {
  const std::string repo = testing::make_temp_dir();
  fs::create_directories(repo + "/lib/pkg");
  testing::write_text(repo + "/lib/pkg/__init__.py", "from .core import run\n");
  testing::write_text(repo + "/lib/pkg/core.py", "import os\n");
  testing::write_text(repo + "/lib/pkg/extra.py", "from . import core\n");
  testing::write_text(repo + "/tool.py", "from pkg.extra import thing\n");
  testing::write_text(repo + "/other.py", "import json\n");
  const gate::PythonImporters core = gate::python_importers(repo, "lib/pkg/core.py");
  EXPECT_EQ(core.files, (std::set<std::string>{"lib/pkg/core.py", "lib/pkg/__init__.py", "lib/pkg/extra.py", "tool.py"}));
  EXPECT_TRUE(core.modules.count("pkg.core"));
  EXPECT_EQ(gate::python_importers(repo, "other.py").files, std::set<std::string>{"other.py"});
}

}  // namespace
}  // namespace passcheck
