// `passcheck gate`: its options, the progress lines, the summary, the JUnit file and the
// report. The gate itself is workflows/gate. Exit codes: 0 every check held, 1 a check
// failed, 2 bad input (no git repository, unknown ref).
#include "tools/passcheck/commands.h"
#include "tools/passcheck/report_commands.h"
#include "workflows/campaign/campaign.h"
#include "workflows/gate/gate.h"

#include "framework/io/files.h"
#include "framework/report/report.h"
#include "oracles/models/subject.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <thread>

namespace passcheck::cli {

namespace {

int run_gate_command(const gate::GateOptions& options) {
  report::Report html("gate", current_command_line());
  return guarded("gate", [&] {
    return run_reported(options.report, html, [&] {
      const gate::GateResults results = gate::run_gate(options, std::cout);
      gate::add_gate_sections(html, results);
      if (!options.junit.empty()) io::write_file_atomically(options.junit, gate::gate_junit_xml(results), "--junit file");
      int64_t counts[5] = {0, 0, 0, 0, 0};
      for (const gate::GateCheck& c : results.tests) ++counts[static_cast<int>(c.outcome)];
      for (const gate::GatePassResult& p : results.passes)
        for (const gate::GateCheck& c : p.checks) ++counts[static_cast<int>(c.outcome)];
      const int64_t failed = counts[static_cast<int>(gate::GateCheck::Outcome::Failed)];
      std::cout << "gate: " << results.tests.size() << " tests and " << results.passes.size() << " passes selected, "
                << results.skipped_passes.size() << " passes skipped; checks: "
                << counts[static_cast<int>(gate::GateCheck::Outcome::Held)] << " held, " << failed << " failed, "
                << counts[static_cast<int>(gate::GateCheck::Outcome::Vacuous)] << " vacuous, "
                << counts[static_cast<int>(gate::GateCheck::Outcome::Skipped)] << " skipped, "
                << counts[static_cast<int>(gate::GateCheck::Outcome::Unreached)] << " not reached within the budget\n";
      if (options.plan_only) return 0;
      std::cout << "gate: " << (results.held() ? "PASS" : "FAIL") << "\n";
      html.set_verdict(results.held() ? 0 : 1, "gate: " + std::to_string(results.passes.size()) + " passes checked, " +
                                                   std::to_string(failed) + " checks failed, " +
                                                   std::to_string(results.unreached()) + " not reached");
      return results.held() ? 0 : 1;
    });
  });
}

}  // namespace

std::function<std::optional<int>()> add_gate_command(CLI::App& app) {
  auto args = std::make_shared<gate::GateOptions>();
  args->models = models::available_subjects();
  auto* cmd = app.add_subcommand("gate", "CI gate: run the tests and pass checks the files changed since --base reach, within a time budget");
  cmd->add_option("--base", args->base, "Git ref to compare with (three-dot: changes since the merge base)")
      ->capture_default_str();
  cmd->add_option("--repo", args->repo, "The passcheck checkout (a git work tree)")->capture_default_str();
  cmd->add_option("--build-dir", args->build_dir,
                  "The built CMake/Ninja build whose dependency graph and tests the gate reads (default: REPO/build)");
  cmd->add_option("--budget", args->budget_seconds,
                  "Wall-clock budget for every check, e.g. 600, 90s, 10m, 1h; what does not fit is reported unreached")
      ->transform(CLI::AsNumberWithUnit(std::map<std::string, double>{{"s", 1}, {"m", 60}, {"h", 3600}},
                                        CLI::AsNumberWithUnit::CASE_SENSITIVE))
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  cmd->add_flag("--fail-fast", args->fail_fast, "Stop at the first failing check");
  cmd->add_option("--skip-tests", args->skip_tests, "Do not run the selected tests whose name this regular expression finds")
      ->check([](const std::string& pattern) -> std::string {
        try {
          std::regex{pattern};
          return "";
        } catch (const std::regex_error& e) {
          return "not a regular expression: " + std::string(e.what());
        }
      });
  cmd->add_flag("--plan", args->plan_only, "Print the selection and the checks in the order they would run; run nothing");
  cmd->add_option("--junit", args->junit, "Write JUnit XML here: a testsuite per pass, a testcase per check");
  cmd->add_option("--fuzz-seconds", args->fuzz_seconds, "Fuzz budget per pass (fixed seed and a fresh seed); 0: no fuzzing")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--mutant-seconds", args->mutant_seconds,
                  "Budget per mutant the text cases and properties did not catch, on generated cases; 0: none")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "The fixed fuzz seed")->capture_default_str();
  args->jobs = std::max(1u, std::min(std::thread::hardware_concurrency(), 64u));
  cmd->add_option("--jobs", args->jobs, "Checks run side by side: CTest tests and the gate's own (default: the cores)")
      ->check(CLI::Range(1, campaign::kMaxJobs))
      ->capture_default_str();
  cmd->add_option("--out", args->out, "Directory of the fuzz repro files")->capture_default_str();
  cmd->add_option("--models", args->models, "Traced subjects the properties run on (default: all)")->delimiter(',');
  cmd->add_option("--report", args->report, "Write an HTML report of the gate's selection and checks here (docs/reports.md)");
  cmd->add_option("--mutant-as-pass", args->mutant_as_pass,
                  "Check a known-buggy pass under its real pass's name (shows the gate failing)");
  return [args, cmd]() -> std::optional<int> {
    if (!cmd->parsed()) return std::nullopt;
    return run_gate_command(*args);
  };
}

}  // namespace passcheck::cli
