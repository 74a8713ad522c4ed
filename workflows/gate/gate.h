// The CI gate behind `passcheck gate`. The files changed since a git ref select the pass
// families they touch; for each selected pass the gate runs its text cases, the generic
// pass properties on every traced subject, the mutants of its family (each must be
// caught) and a time-boxed fuzz budget. GateResults holds everything one run found: the
// console lines, the JUnit XML and (later) the HTML report are all rendered from it.
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

/// What one gate run checks, and how long it may fuzz.
struct GateOptions {
  std::string base = "origin/main";
  std::string repo = ".";
  std::string junit;          ///< JUnit XML file ("" : none)
  double fuzz_seconds = 20;   ///< per pass, split between the fixed and a fresh seed
  double mutant_seconds = 30; ///< per mutant the text cases and properties missed
  uint64_t seed = 1;          ///< the fixed fuzz seed
  int jobs = 1;
  std::string out = "gate-repros";
  std::vector<std::string> models;  ///< traced subjects of the properties (default: all)
  std::string mutant_as_pass;       ///< a mutant checked under its real pass's name
  std::string report;               ///< HTML report file ("" : none)
};

/// One check the gate ran (or skipped) for a pass.
struct GateCheck {
  enum class Outcome { Held, Failed, Skipped };
  std::string name;     ///< "text cases", "properties on llama3", "mutant mutant-dce-...", "fuzz seed 1"
  Outcome outcome = Outcome::Held;
  std::string message;  ///< what failed, why it was skipped, or what it covered
  double seconds = 0;
};

/// The checks of one selected pass.
struct GatePassResult {
  std::string pass;
  std::string family;
  std::vector<GateCheck> checks;
  bool held() const;
};

/// What the changed files select: families, and why each file selects what it does.
struct GateSelection {
  std::set<std::string> families;
  std::vector<std::string> reasons;  ///< "passes/cleanup/dce_pass.cpp -> family cleanup"
};

/// Everything one gate run found, in the order it ran.
struct GateResults {
  std::string repo;
  std::string base;
  std::vector<std::string> changed_files;
  GateSelection selection;
  std::vector<GatePassResult> passes;       ///< the selected passes
  std::vector<std::string> skipped_passes;  ///< "remat (family ac unchanged)"
  bool held() const;
};

/// Maps changed files (paths relative to the repository root) to the families they touch:
/// passes/<family>/... selects that family; passes/registry.cpp, passes/CMakeLists.txt and
/// the layers every pass runs on (framework/ir, framework/exec, framework/check) select every
/// family; a text case file (suites/passes_text/*.graph, read from `repo`) selects the
/// families of the passes its cases run; anything else (docs, other tools) selects nothing.
GateSelection select_families(const std::vector<std::string>& changed, const std::vector<check::PassFamily>& families,
                              const std::string& repo, const check::PassRegistry& registry);

/// JUnit XML of `results`: a testsuite per selected pass, a testcase per check.
std::string gate_junit_xml(const GateResults& results);

/// Runs the gate: the changed files of `options.repo` since `options.base`, the families
/// they select, and for every pass of those families its text cases, the generic
/// properties on the traced subjects, its mutants (each must be caught) and the fuzz
/// budget. `log` gets a line per selection and per check as it finishes. Throws
/// std::invalid_argument on bad input (no git work tree, unknown ref, model or mutant).
GateResults run_gate(const GateOptions& options, std::ostream& log);

/// The gate's report sections: the selection, a table of checks per pass, skipped passes.
void add_gate_sections(report::Report& html, const GateResults& results);

}  // namespace passcheck::gate
