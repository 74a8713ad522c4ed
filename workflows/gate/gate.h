// The CI gate behind `passcheck gate`. The files changed since a git ref select, through
// the build's own dependency graph (dependencies.h), the CTest tests that exercise them
// and the pass families whose code reads them; the gate runs the tests closest to the
// change first, and for each selected pass its text cases, generated cases, mutants
// (each must be caught), properties on every traced subject and a fuzz budget, counting
// the decisions the pass made in each, within a time budget. GateResults holds everything
// one run found: the console lines, the JUnit XML and the HTML report are rendered from it.
#pragma once

#include "framework/check/pass.h"
#include "passes/registry.h"

#include <cstdint>
#include <iosfwd>
#include <set>
#include <string>
#include <vector>

namespace passcheck::report {
class Report;
}

namespace passcheck::gate {

/// What one gate run checks, and how long it may take.
struct GateOptions {
  std::string base = "origin/main";
  std::string repo = ".";
  std::string build_dir;      ///< the build whose graph and tests the gate reads ("" : REPO/build)
  std::string junit;          ///< JUnit XML file ("" : none)
  double budget_seconds = 600;  ///< wall clock for every check; what does not fit is reported unreached
  double fuzz_seconds = 20;   ///< per pass, split between the fixed and a fresh seed
  double mutant_seconds = 30; ///< per mutant the text cases and properties missed
  uint64_t seed = 1;          ///< the fixed fuzz seed
  int jobs = 2;               ///< checks run side by side (CTest tests and the gate's own)
  bool fail_fast = false;     ///< stop at the first failing check
  bool plan_only = false;     ///< print the selection and the ordered checks, run nothing
  std::string skip_tests;     ///< tests whose name this regular expression finds are not run ("" : none)
  std::string out = "gate-repros";
  std::vector<std::string> models;  ///< traced subjects of the properties (default: all)
  std::string mutant_as_pass;       ///< a mutant checked under its real pass's name
  std::string report;               ///< HTML report file ("" : none)
};

/// One check the gate ran (or skipped, or did not reach) for a pass or the test suite.
struct GateCheck {
  /// Vacuous: it held, but the pass it checks made no decision on any of its inputs.
  /// Unreached: the budget ran out before it started (or while it ran, for a test).
  enum class Outcome { Held, Failed, Skipped, Vacuous, Unreached };
  std::string name;     ///< "text cases", "properties on llama3", "mutant mutant-dce-...", "fuzz seed 1", a test
  Outcome outcome = Outcome::Held;
  std::string message;  ///< what failed, why it was skipped, or what it covered
  double seconds = 0;
  double finished_at = 0;  ///< seconds since the gate started
  int64_t decisions = -1;  ///< the pass's rules fired and guards refused during it (-1: not counted)
};

/// The checks of one selected pass.
struct GatePassResult {
  std::string pass;
  std::string family;
  std::vector<GateCheck> checks;
  /// No check failed, and not every check that counted decisions counted none.
  bool held() const;
  /// Every check that counted the pass's decisions counted none.
  bool vacuous() const;
};

/// Everything one gate run found, in the order it ran.
struct GateResults {
  std::string repo;
  std::string base;
  double budget_seconds = 0;
  std::vector<std::string> changed_files;
  std::vector<std::string> reasons;        ///< per changed file, what it selects and why
  std::set<std::string> families;          ///< the pass families selected
  std::vector<GateCheck> tests;            ///< the CTest tests selected, in the order run
  std::vector<GatePassResult> passes;      ///< the selected passes
  std::vector<std::string> skipped_passes; ///< "remat (family ac unchanged)"
  bool held() const;
  /// Checks (tests and pass checks) the budget left unreached.
  int64_t unreached() const;
};

/// The families a text case file (suites/passes_text/*.graph, read from `repo`) runs
/// passes of.
std::set<std::string> families_of_case_file(const std::string& repo, const std::string& file,
                                             const check::PassRegistry& registry);

/// JUnit XML of `results`: a testsuite per selected pass, a testcase per check.
std::string gate_junit_xml(const GateResults& results);

/// Runs the gate: the changed files of `options.repo` since `options.base`; what they
/// select in the build's dependency graph (dependencies.h): CTest tests, closest first,
/// and the pass families whose code reads them; for every pass of those families its text
/// cases, the coverage campaign's generated cases, its mutants (each must be caught), the
/// generic properties on the traced subjects and the fuzz budget; all within
/// `options.budget_seconds` on `options.jobs` jobs. `log` gets a line per selection and
/// per check as it finishes. Throws std::invalid_argument on bad input (no git work tree,
/// unknown ref, no build, unknown model or mutant).
GateResults run_gate(const GateOptions& options, std::ostream& log);

/// The gate's report sections: the selection, a table of checks per pass, skipped passes.
void add_gate_sections(report::Report& html, const GateResults& results);

}  // namespace passcheck::gate
