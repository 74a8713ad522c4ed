// The CI gate (see gate.h): git for the changed files, the family selection, the checks
// of every selected pass, the JUnit XML and the report sections. tools/passcheck's
// `gate` command parses the options and prints the summary.
#include "workflows/gate/gate.h"
#include "workflows/gate/dependencies.h"
#include "workflows/gate/gate_mutants.h"
#include "workflows/gate/processes.h"

#include "workflows/campaign/campaign.h"
#include "framework/check/coverage.h"
#include "framework/check/pass_properties.h"
#include "framework/check/pipeline.h"
#include "workflows/graph_files/text_cases.h"
#include "framework/io/files.h"
#include "framework/report/html.h"
#include "framework/report/report.h"
#include "oracles/pass_on_models.h"
#include "oracles/models/subject.h"
#include "generators/coverage_campaign.h"
#include "passes/partition/budget_monotonicity.h"
#include "suites/mutants/mutants.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

namespace passcheck::gate {

using graph_files::case_files;
using graph_files::case_passes;
using graph_files::parse_case_file;
using graph_files::run_text_case;
using graph_files::TextCase;

namespace fs = std::filesystem;

namespace {

bool failed(const GateCheck& c) { return c.outcome == GateCheck::Outcome::Failed; }

}  // namespace

bool GatePassResult::vacuous() const {
  bool counted = false;
  for (const GateCheck& c : checks) {
    if (c.decisions < 0 || c.outcome == GateCheck::Outcome::Skipped || c.outcome == GateCheck::Outcome::Unreached)
      continue;
    if (c.decisions > 0) return false;
    counted = true;
  }
  return counted;
}

bool GatePassResult::held() const { return std::none_of(checks.begin(), checks.end(), failed) && !vacuous(); }

bool GateResults::held() const {
  return std::none_of(tests.begin(), tests.end(), failed) &&
         std::all_of(passes.begin(), passes.end(), [](const GatePassResult& p) { return p.held(); });
}

int64_t GateResults::unreached() const {
  auto count = [](const std::vector<GateCheck>& checks) {
    return std::count_if(checks.begin(), checks.end(),
                         [](const GateCheck& c) { return c.outcome == GateCheck::Outcome::Unreached; });
  };
  int64_t n = count(tests);
  for (const GatePassResult& p : passes) n += count(p.checks);
  return n;
}

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// git with its output captured: the gate reports git's own words on failure.
CapturedOutput git(const std::string& repo, std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), {"git", "-C", repo, "-c", "core.quotepath=off"});
  return run_captured(arguments);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// The files changed since `base` (three-dot: since the merge base) plus uncommitted and
// untracked ones, relative to the repository root. Bad input (std::invalid_argument) when
// `repo` is no git work tree or `base` names no commit.
std::vector<std::string> changed_files(const std::string& repo, const std::string& base, std::string& top) {
  const CapturedOutput root = git(repo, {"rev-parse", "--show-toplevel"});
  if (root.exit_code != 0)
    throw std::invalid_argument("--repo " + repo + " is not a git work tree (git: " + lines_of(root.output + "?")[0] + ")");
  top = lines_of(root.output).at(0);
  if (git(top, {"rev-parse", "--verify", "--quiet", base + "^{commit}"}).exit_code != 0)
    throw std::invalid_argument("--base " + base + ": no such commit in " + top);
  std::set<std::string> files;
  for (const std::vector<std::string>& args : {std::vector<std::string>{"diff", "--name-only", base + "...HEAD"},
                                               std::vector<std::string>{"diff", "--name-only", "HEAD"},
                                               std::vector<std::string>{"ls-files", "--others", "--exclude-standard"}}) {
    const CapturedOutput out = git(top, args);
    if (out.exit_code != 0) throw std::invalid_argument("git " + args[0] + " failed in " + top + ": " + out.output);
    for (const std::string& f : lines_of(out.output)) files.insert(f);
  }
  return {files.begin(), files.end()};
}

std::string family_of_pass(const std::string& pass, const std::vector<check::PassFamily>& families) {
  for (const check::PassFamily& f : families)
    if (std::find(f.passes.begin(), f.passes.end(), pass) != f.passes.end()) return f.name;
  return "";
}

}  // namespace
std::set<std::string> families_of_case_file(const std::string& repo, const std::string& file,
                                             const check::PassRegistry& registry) {
  std::set<std::string> touched;
  std::vector<std::string> errors;
  const std::string path = (fs::path(repo) / file).string();
  if (!fs::exists(path)) return touched;
  const std::vector<check::PassFamily> families = check::builtin_pass_families();
  for (const TextCase& c : parse_case_file(path, errors))
    for (const std::string& pass : case_passes(c, registry)) {
      const std::string family = family_of_pass(pass, families);
      if (!family.empty()) touched.insert(family);
    }
  return touched;
}

const char* outcome_name(GateCheck::Outcome outcome) {
  switch (outcome) {
    case GateCheck::Outcome::Held: return "held";
    case GateCheck::Outcome::Failed: return "FAILED";
    case GateCheck::Outcome::Skipped: return "skipped";
    case GateCheck::Outcome::Vacuous: return "vacuous";
    case GateCheck::Outcome::Unreached: return "unreached";
  }
  return "?";
}

namespace {

// report::escape covers XML's five special characters; control characters other than tab
// and newlines are not allowed in XML 1.0 at all.
std::string xml_escape(const std::string& text) {
  std::string printable = text;
  for (char& c : printable)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') c = '?';
  return report::escape(printable);
}

void junit_suite(std::ostringstream& x, const std::string& name, const std::string& package,
                 const std::vector<GateCheck>& checks) {
  int f = 0, s = 0;
  double t = 0;
  for (const GateCheck& c : checks) {
    f += c.outcome == GateCheck::Outcome::Failed;
    s += c.outcome == GateCheck::Outcome::Skipped || c.outcome == GateCheck::Outcome::Unreached;
    t += c.seconds;
  }
  x << "  <testsuite name=\"" << xml_escape(name) << "\" package=\"" << xml_escape(package) << "\" tests=\""
    << checks.size() << "\" failures=\"" << f << "\" errors=\"0\" skipped=\"" << s << "\" time=\"" << t << "\">\n";
  for (const GateCheck& c : checks) {
    x << "    <testcase classname=\"passcheck.gate." << xml_escape(package + "." + name) << "\" name=\""
      << xml_escape(c.name) << "\" time=\"" << c.seconds << "\"";
    if (c.outcome == GateCheck::Outcome::Held) {
      x << "/>\n";
      continue;
    }
    x << ">\n";
    const std::string first_line = c.message.substr(0, c.message.find('\n'));
    if (c.outcome == GateCheck::Outcome::Failed)
      x << "      <failure message=\"" << xml_escape(first_line) << "\">" << xml_escape(c.message) << "</failure>\n";
    else if (c.outcome == GateCheck::Outcome::Vacuous)
      x << "      <system-out>vacuous: " << xml_escape(c.message) << "</system-out>\n";
    else
      x << "      <skipped message=\"" << xml_escape(std::string(outcome_name(c.outcome)) + ": " + first_line) << "\"/>\n";
    x << "    </testcase>\n";
  }
  x << "  </testsuite>\n";
}

}  // namespace

std::string gate_junit_xml(const GateResults& results) {
  std::ostringstream x;
  int tests = 0, failures = 0, skipped = 0;
  double total = 0;
  auto count = [&](const std::vector<GateCheck>& checks) {
    for (const GateCheck& c : checks) {
      ++tests;
      failures += c.outcome == GateCheck::Outcome::Failed;
      skipped += c.outcome == GateCheck::Outcome::Skipped || c.outcome == GateCheck::Outcome::Unreached;
      total += c.seconds;
    }
  };
  count(results.tests);
  for (const GatePassResult& p : results.passes) count(p.checks);
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"passcheck gate\" tests=\"" << tests << "\" failures=\"" << failures << "\" skipped=\""
    << skipped << "\" time=\"" << total << "\">\n";
  if (!results.tests.empty()) junit_suite(x, "tests", "ctest", results.tests);
  for (const GatePassResult& p : results.passes) junit_suite(x, p.pass, p.family, p.checks);
  x << "</testsuites>\n";
  return x.str();
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A pipeline's text with passes renamed (a mutant in place of its real pass).
std::string renamed_pipeline(const std::string& pipeline, const std::map<std::string, std::string>& replace,
                             const check::PassRegistry& registry) {
  std::vector<check::PassInvocation> passes = check::Pipeline::parse(pipeline, registry).passes();
  for (check::PassInvocation& p : passes)
    if (replace.count(p.name)) p.name = replace.at(p.name);
  return check::Pipeline(passes, registry).str();
}

// The registry the gate checks: the built-in passes and the mutants, where
// `mutant_as_pass` (when set) stands under its real pass's name, so the gate can be shown
// to fail on a known-buggy pass.
check::PassRegistry gate_registry(const std::string& mutant_as_pass) {
  const check::PassRegistry& all = mutants::registry_with_mutants();
  std::string replaced;
  if (!mutant_as_pass.empty()) {
    for (const mutants::MutantInfo& m : mutants::all_mutants())
      if (m.pass == mutant_as_pass) replaced = m.replaces;
    if (replaced.empty())
      throw std::invalid_argument("--mutant-as-pass " + mutant_as_pass + ": no such mutant (see `passcheck passes --mutants`)");
  }
  check::PassRegistry registry;
  for (const check::RegisteredPass* p : all.list()) {
    const check::RegisteredPass& source = p->info.name == replaced ? all.get(mutant_as_pass) : *p;
    if (source.is_module_pass()) registry.add_module_pass(p->info, source.run_module);
    else registry.add(p->info, source.run);
  }
  return registry;
}

int64_t decisions_of(const check::Coverage& coverage, const std::string& pass) {
  int64_t n = 0;
  for (const auto* counts : {&coverage.rule_counts(), &coverage.guard_counts()}) {
    auto it = counts->find(pass);
    if (it == counts->end()) continue;
    for (const auto& [decision, count] : it->second) n += count;
  }
  return n;
}

// Whether `pipeline` (a pipeline text, as a coverage campaign line names it) runs `pass`.
bool pipeline_runs(const std::string& pipeline, const std::string& pass) {
  for (size_t at = pipeline.find(pass); at != std::string::npos; at = pipeline.find(pass, at + 1)) {
    const size_t end = at + pass.size();
    const bool starts = at == 0 || pipeline[at - 1] == ',' || pipeline[at - 1] == ' ';
    const bool ends = end == pipeline.size() || pipeline[end] == ',' || pipeline[end] == '{' || pipeline[end] == ':';
    if (starts && ends) return true;
  }
  return false;
}

// The gate's own checks of the selected passes (everything but the CTest tests), each a
// function of the time left; `log` gets nothing from here (run_gate prints the results).
class GateRunner {
 public:
  GateRunner(const GateOptions& args, const check::PassRegistry& registry, std::string cases_dir)
      : args_(args), registry_(registry), cases_dir_(std::move(cases_dir)),
        counted_(check::passes_with_decisions(registry)) {
    if (!cases_dir_.empty())
      for (const std::string& file : case_files(cases_dir_))
        for (TextCase& c : parse_case_file(file, case_errors_)) cases_.push_back(std::move(c));
  }

  struct Planned {
    std::string pass;
    std::string name;
    std::function<GateCheck(double seconds_left)> run;
  };

  // Every check of `passes`, cheapest and most telling first: all text cases, then the
  // generated cases, the properties on each subject, the mutants and last the fuzz budget.
  std::vector<Planned> plan(const std::vector<std::string>& passes) {
    std::vector<Planned> out;
    for (const std::string& p : passes)
      out.push_back({p, "text cases", [this, p](double) { return text_cases(p); }});
    for (const std::string& p : passes)
      out.push_back({p, "generated cases", [this, p](double left) { return generated_cases(p, left); }});
    for (const std::string& p : passes) {
      if (!oracles::runs_on_traced_subjects(p)) {
        out.push_back({p, "properties", [](double) {
                         return GateCheck{"properties", GateCheck::Outcome::Skipped,
                                          "checked against the eager-chunked oracle by the chunking suites, not on traced subjects"};
                       }});
        continue;
      }
      for (const std::string& model : args_.models)
        out.push_back({p, "properties on " + model, [this, p, model](double) { return properties(p, model); }});
    }
    for (const std::string& p : passes)
      for (const mutants::MutantInfo& m : mutants::all_mutants())
        if (m.replaces == p)
          out.push_back({p, "mutant " + m.pass, [this, m, p](double left) { return mutant(m, family_of(p), left); }});
    for (const std::string& p : passes) {
      if (args_.fuzz_seconds <= 0) {
        out.push_back({p, "fuzz", [](double) { return GateCheck{"fuzz", GateCheck::Outcome::Skipped, "--fuzz-seconds 0"}; }});
        continue;
      }
      // The fixed seed replays what earlier runs found; the fresh one explores further.
      for (uint64_t seed : {args_.seed, fresh_seed_})
        out.push_back({p, "fuzz seed " + std::to_string(seed), [this, p, seed](double left) { return fuzz(p, seed, left); }});
    }
    return out;
  }

 private:
  std::string family_of(const std::string& pass) const {
    return family_of_pass(pass, check::builtin_pass_families());
  }

  // `check` with the decisions `pass` made in it, and Vacuous when it held on none.
  GateCheck counted(GateCheck check, const std::string& pass, const check::Coverage& coverage) const {
    if (!counted_.count(pass)) {
      check.message += check.message.empty() ? "" : "; ";
      check.message += pass + " declares no decisions to count";
      return check;
    }
    check.decisions = decisions_of(coverage, pass);
    if (check.outcome == GateCheck::Outcome::Held && check.decisions == 0) {
      check.outcome = GateCheck::Outcome::Vacuous;
      check.message += (check.message.empty() ? "" : "; ") + pass + " made no decision on any of them";
    } else if (check.outcome == GateCheck::Outcome::Held) {
      check.message += (check.message.empty() ? "" : "; ") + std::to_string(check.decisions) + " decisions";
    }
    return check;
  }

  std::vector<const TextCase*> cases_running(const std::string& pass) const {
    std::vector<const TextCase*> found;
    for (const TextCase& c : cases_) {
      const auto passes = case_passes(c, registry_);
      if (std::find(passes.begin(), passes.end(), pass) != passes.end()) found.push_back(&c);
    }
    return found;
  }

  GateCheck text_cases(const std::string& pass) {
    GateCheck check{"text cases", GateCheck::Outcome::Held, ""};
    if (cases_dir_.empty()) return {"text cases", GateCheck::Outcome::Skipped, "no suites/passes_text in the repository"};
    const auto cases = cases_running(pass);
    if (cases.empty()) return {"text cases", GateCheck::Outcome::Skipped, "no text case runs " + pass};
    check::Coverage coverage;
    const check::PassRegistry counting = check::counting_registry(registry_, &coverage);
    std::string problems;
    for (const TextCase* c : cases)
      for (const std::string& p : run_text_case(*c, counting).problems) problems += p + "\n";
    if (!problems.empty()) return {"text cases", GateCheck::Outcome::Failed, problems};
    check.message = std::to_string(cases.size()) + " cases";
    return counted(check, pass, coverage);
  }

  // The coverage campaign's cases (decision situations, placements, FSDP chains,
  // partitioned and captured modules, chunkable regions, ...): the lines whose pipeline
  // runs the pass, and the situation sources that carry their own pipelines. Each line
  // runs once for all selected passes, and not past the budget.
  GateCheck generated_cases(const std::string& pass, double seconds_left) {
    const auto start = Clock::now();
    const std::vector<gen::CampaignEntry>& entries = gen::default_coverage_campaign();
    GateCheck check{"generated cases", GateCheck::Outcome::Held, ""};
    check::Coverage coverage;
    std::string violations;
    int64_t cases = 0, lines = 0, unreached = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      const gen::CampaignEntry& e = entries[i];
      if (!e.pipeline.empty() && !pipeline_runs(e.pipeline, pass)) continue;
      if (!campaign_lines_.count(i)) {
        if (seconds_since(start) >= seconds_left) {
          ++unreached;
          continue;
        }
        campaign_lines_[i] = gen::run_campaign({e}, registry_);
      }
      const gen::CampaignResult& r = campaign_lines_.at(i);
      ++lines;
      cases += r.cases;
      coverage.merge(r.coverage);
      for (const std::string& v : r.violations)
        if (e.pipeline.empty() ? pipeline_runs(v, pass) : true) violations += v + "\n";
    }
    if (!violations.empty()) return {"generated cases", GateCheck::Outcome::Failed, violations};
    check.message = std::to_string(cases) + " cases from " + std::to_string(lines) + " lines of the coverage campaign";
    if (unreached > 0) check.message += " (" + std::to_string(unreached) + " lines not reached within the budget)";
    return counted(check, pass, coverage);
  }

  const oracles::ModelJoint& joint(const std::string& model) {
    auto it = joints_.find(model);
    if (it == joints_.end()) it = joints_.emplace(model, oracles::trace_model_joint(model)).first;
    return it->second;
  }

  // Violations of `pass` (or its stand-in `replace`) on `model`, run through `registry`.
  std::vector<std::string> violations_on(const std::string& pass, const std::string& model,
                                         const check::PassRegistry& registry,
                                         const std::map<std::string, std::string>& replace = {}) {
    const std::string pipeline = renamed_pipeline(oracles::pipeline_with_prerequisites(pass, model), replace, registry);
    return check::check_pass_properties(*joint(model).graph, joint(model).inputs, pipeline, registry).violations;
  }

  GateCheck properties(const std::string& pass, const std::string& model) {
    GateCheck check{"properties on " + model, GateCheck::Outcome::Held, ""};
    check::Coverage coverage;
    try {
      std::string text;
      for (const std::string& v : violations_on(pass, model, check::counting_registry(registry_, &coverage)))
        text += v + "\n";
      if (!text.empty()) return {check.name, GateCheck::Outcome::Failed, text};
    } catch (const std::exception& e) {
      return {check.name, GateCheck::Outcome::Failed, e.what()};
    }
    return counted(check, pass, coverage);
  }

  // A mutant must fail one of the gate's own checks: its real pass's text cases, the
  // properties on a traced subject, or (last, as it costs the most) a differential fuzz
  // campaign against the real pass.
  GateCheck mutant(const mutants::MutantInfo& m, const std::string& family, double seconds_left) {
    GateCheck check{"mutant " + m.pass, GateCheck::Outcome::Held, ""};
    const std::map<std::string, std::string> replace{{m.replaces, m.pass}};
    for (const TextCase* c : cases_running(m.replaces)) {
      if (run_text_case(*c, registry_, replace).problems.empty()) continue;
      check.message = "caught by text case " + c->name;
      break;
    }
    if (check.message.empty() && oracles::runs_on_traced_subjects(m.replaces))
      for (const std::string& model : args_.models) {
        try {
          if (violations_on(m.replaces, model, registry_, replace).empty()) continue;
        } catch (const std::exception&) {
          // A mutant that makes the pipeline throw is caught as well.
        }
        check.message = "caught by the properties on " + model;
        break;
      }
    // partition-min-cut's own promise: the generic properties hold for any budget, so only
    // the budget ladder tells a mutant of the budget fallback from the pass.
    if (check.message.empty() && m.replaces == "partition-min-cut")
      for (const std::string& model : args_.models)
        if (auto v = passes::budget_monotonicity_violation(*joint(model).graph, m.faults)) {
          check.message = "caught by the memory-budget monotonicity on " + model + ": " + *v;
          break;
        }
    const double seconds = std::min(args_.mutant_seconds, seconds_left);
    if (check.message.empty() && seconds > 0) {
      const std::string caught = catch_mutant_on_generated_cases(m.pass, m.replaces, family, registry_, args_.seed, seconds);
      if (!caught.empty()) check.message = "caught on " + caught;
    }
    if (check.message.empty()) {
      check.outcome = GateCheck::Outcome::Failed;
      check.message = m.pass + " (" + m.description + ") survived the text cases, the properties on every model" +
                      (seconds > 0 ? " and generated cases" : "") + ": the checks of " + m.replaces +
                      " cannot tell it from the real pass";
    }
    return check;
  }

  campaign::CampaignOptions fuzz_options(const std::string& pass, uint64_t seed, double seconds) const {
    campaign::CampaignOptions options;
    options.pass = pass;
    options.seconds = seconds;
    options.seed = seed;
    options.jobs = 1;  // the gate's jobs are its checks side by side
    options.out = (fs::path(args_.out) / pass).string();
    options.minimize_seconds = 30;
    options.max_failures = 1;
    // The chunk passes need chunkable programs traced with a symbolic batch.
    if (family_of(pass) == "chunk") options.chunk = "batch";
    if (args_.mutant_as_pass.empty()) return options;
    // Cases replayed from a repro must build the same registry.
    options.registries = {"mutants"};
    return options;
  }

  GateCheck fuzz(const std::string& pass, uint64_t seed, double seconds_left) {
    GateCheck check{"fuzz seed " + std::to_string(seed), GateCheck::Outcome::Held, ""};
    try {
      campaign::CampaignOptions options = fuzz_options(pass, seed, std::min(args_.fuzz_seconds / 2.0, seconds_left));
      campaign::validate(options, registry_);
      campaign::CampaignReport report = campaign::run_campaign(options, registry_);
      check.message = std::to_string(report.cases_run) + " cases";
      if (report.failure_count() > 0) {
        check.outcome = GateCheck::Outcome::Failed;
        check.message = std::to_string(report.failure_count()) + " of " + std::to_string(report.cases_run) + " cases failed";
        for (const campaign::CaseFailure& f : report.failures)
          check.message += "\n" + f.kind + ": " + f.detail + (f.repro.empty() ? "" : " (repro " + f.repro + ")");
        return check;
      }
      return counted(check, pass, report.coverage);
    } catch (const std::invalid_argument& e) {
      return {check.name, GateCheck::Outcome::Skipped, std::string("the fuzzer draws no cases for it: ") + e.what()};
    }
  }

  const GateOptions& args_;
  const check::PassRegistry& registry_;
  std::string cases_dir_;
  std::set<std::string> counted_;  ///< passes that declare decisions
  std::vector<TextCase> cases_;
  std::vector<std::string> case_errors_;
  std::map<std::string, oracles::ModelJoint> joints_;
  std::map<size_t, gen::CampaignResult> campaign_lines_;  ///< by index in the default campaign
  uint64_t fresh_seed_ = std::random_device{}();
};

// "check<TAB>catches" lines (suites/gate/catch_history.tsv, written by the gate's
// mutation self-test): how often each check caught a source mutant first.
std::map<std::string, int64_t> catch_history(const std::string& repo) {
  std::map<std::string, int64_t> out;
  std::ifstream in(fs::path(repo) / "suites" / "gate" / "catch_history.tsv");
  for (std::string line; std::getline(in, line);) {
    const size_t tab = line.rfind('\t');
    if (line.empty() || line[0] == '#' || tab == std::string::npos) continue;
    try {
      out[line.substr(0, tab)] += std::stoll(line.substr(tab + 1));
    } catch (const std::exception&) {
    }
  }
  return out;
}

std::string tier_name(Tier tier) {
  switch (tier) {
    case Tier::Names: return "names";
    case Tier::Reads: return "reads";
    case Tier::Links: return "links";
  }
  return "?";
}

void log_check(std::ostream& log, const std::string& owner, const GateCheck& c) {
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "[%6.1fs] ", c.finished_at);
  static const char* const kWords[] = {"held     ", "FAILED   ", "skipped  ", "vacuous  ", "unreached"};
  log << stamp << kWords[static_cast<int>(c.outcome)] << " " << owner << c.name;
  if (!c.message.empty() && c.outcome != GateCheck::Outcome::Failed) log << ": " << c.message.substr(0, c.message.find('\n'));
  log << " (" << static_cast<int64_t>(c.seconds * 1000) << " ms)\n";
  if (c.outcome == GateCheck::Outcome::Failed) {
    std::istringstream lines(c.message);
    int shown = 0;
    for (std::string line; std::getline(lines, line) && shown < 40; ++shown) log << "    " << line << "\n";
  }
  log.flush();
}

}  // namespace

void add_gate_sections(report::Report& html, const GateResults& results) {
  html.add_fact("base", results.base);
  html.add_fact("changed files", std::to_string(results.changed_files.size()));
  std::string selected;
  for (const std::string& f : results.families) selected += (selected.empty() ? "" : ", ") + f;
  html.add_fact("selected families", selected.empty() ? "none" : selected);
  html.add_fact("tests selected", std::to_string(results.tests.size()));
  html.add_fact("checks not reached within the budget", std::to_string(results.unreached()));
  report::Table selection{"selection", {"changed file -> what it selects"}, {}};
  for (const std::string& reason : results.reasons) selection.rows.push_back({reason});
  html.add_table(selection);
  auto table = [&](const std::string& title, const std::vector<GateCheck>& checks) {
    report::Table t{title, {"check", "outcome", "seconds", "decisions", "detail"}, {}};
    for (const GateCheck& c : checks) {
      std::ostringstream seconds;
      seconds.precision(3);
      seconds << c.seconds;
      t.rows.push_back({c.name, outcome_name(c.outcome), seconds.str(), c.decisions < 0 ? "-" : std::to_string(c.decisions),
                        c.message});
    }
    html.add_table(t);
  };
  if (!results.tests.empty()) table("tests", results.tests);
  for (const GatePassResult& pass : results.passes) table("pass " + pass.pass + " (family " + pass.family + ")", pass.checks);
  report::Table skipped{"skipped passes", {"pass"}, {}};
  for (const std::string& s : results.skipped_passes) skipped.rows.push_back({s});
  html.add_table(skipped);
}

GateResults run_gate(const GateOptions& options, std::ostream& log) {
  const auto start = Clock::now();
  GateResults results;
  results.base = options.base;
  results.budget_seconds = options.budget_seconds;
  results.changed_files = changed_files(options.repo, options.base, results.repo);
  const std::vector<std::string> known = models::available_subjects();
  for (const std::string& model : options.models)
    if (std::find(known.begin(), known.end(), model) == known.end())
      throw std::invalid_argument("--models: unknown model '" + model + "' (see `passcheck models`)");
  const check::PassRegistry registry = gate_registry(options.mutant_as_pass);
  const std::vector<check::PassFamily> families = check::builtin_pass_families();

  // What the changed files select, from the build's own graph.
  const std::string build_dir = options.build_dir.empty() ? (fs::path(results.repo) / "build").string() : options.build_dir;
  const BuildGraph graph = BuildGraph::read(build_dir);
  std::map<std::string, std::string> family_dirs;
  for (const check::PassFamily& f : families) family_dirs[f.name] = "passes/" + f.name + "/";
  Selection selection = graph.select(results.changed_files, results.repo, family_dirs);
  for (const std::string& file : results.changed_files)
    if (starts_with(file, "suites/passes_text/") && fs::path(file).extension() == ".graph") {
      std::string names;
      for (const std::string& f : families_of_case_file(results.repo, file, registry)) {
        selection.families.insert(f);
        names += (names.empty() ? "" : ", ") + f;
      }
      if (!names.empty()) selection.reasons.push_back(file + " -> the families its cases run: " + names);
    }
  results.reasons = selection.reasons;
  results.families = selection.families;

  // The tests, closest to the change first, then those that caught most source mutants,
  // then the cheapest.
  const std::map<std::string, int64_t> catches = catch_history(results.repo);
  std::map<std::string, const BuildTest*> by_name;
  for (const BuildTest& t : graph.tests()) by_name[t.name] = &t;
  std::vector<SelectedTest> tests;
  for (const auto& [name, t] : selection.tests) tests.push_back(t);
  auto catches_of = [&](const std::string& name) { return catches.count(name) ? catches.at(name) : 0; };
  // A test the build never ran (new, or a fresh build) is charged a typical cost.
  auto cost_of = [&](const std::string& name) { return by_name.at(name)->cost > 0 ? by_name.at(name)->cost : 5.0; };
  std::sort(tests.begin(), tests.end(), [&](const SelectedTest& a, const SelectedTest& b) {
    if (a.tier != b.tier) return a.tier < b.tier;
    if (catches_of(a.name) != catches_of(b.name)) return catches_of(a.name) > catches_of(b.name);
    if (cost_of(a.name) != cost_of(b.name)) return cost_of(a.name) < cost_of(b.name);
    return a.name < b.name;
  });

  log << "gate: " << results.changed_files.size() << " files changed since " << options.base << " in " << results.repo
      << " (build " << graph.build_dir() << ")\n";
  for (const std::string& reason : results.reasons) log << "  " << reason << "\n";
  std::string selected;
  for (const std::string& f : results.families) selected += (selected.empty() ? "" : ", ") + f;
  log << "gate: selected families: " << (selected.empty() ? "none" : selected) << "\n";
  log << "gate: " << tests.size() << " tests selected; budget " << options.budget_seconds << " s on " << options.jobs
      << " jobs\n";

  std::vector<std::string> passes;
  for (const check::PassFamily& family : families)
    for (const std::string& pass : family.passes) {
      if (!results.families.count(family.name)) {
        results.skipped_passes.push_back(pass + " (family " + family.name + " unchanged)");
        log << "skipped " << pass << ": family " << family.name << " unchanged\n";
        continue;
      }
      passes.push_back(pass);
      results.passes.push_back({pass, family.name, {}});
    }
  auto pass_result = [&](const std::string& pass) -> GatePassResult& {
    for (GatePassResult& p : results.passes)
      if (p.pass == pass) return p;
    throw std::logic_error("no result for " + pass);
  };

  const fs::path cases = fs::path(results.repo) / "suites" / "passes_text";
  GateRunner runner(options, registry, fs::is_directory(cases) ? cases.string() : "");
  const std::vector<GateRunner::Planned> planned = runner.plan(passes);
  if (options.plan_only) {
    log << "gate: plan (nothing run):\n";
    for (const SelectedTest& t : tests)
      log << "  test " << t.name << " [" << tier_name(t.tier) << ", " << cost_of(t.name) << " s, "
          << catches_of(t.name) << " catches]: " << t.why << "\n";
    for (const GateRunner::Planned& p : planned) log << "  pass " << p.pass << ": " << p.name << "\n";
    return results;
  }

  // The gate's own checks share the cores with the tests: one intra-op thread, as each test gets.
  if (options.jobs > 1 && !std::getenv("OMP_NUM_THREADS")) at::set_num_threads(1);
  const double budget = options.budget_seconds;
  auto left = [&] { return budget - seconds_since(start); };
  bool stop = false;
  // The tests run in the pool, one slot kept for the gate's own checks while they run.
  TestPool pool(graph.build_dir(), passes.empty() || options.jobs == 1 ? options.jobs : options.jobs - 1);
  std::map<std::string, std::string> why;
  for (const SelectedTest& t : tests) {
    const BuildTest& test = *by_name.at(t.name);
    if (!options.skip_tests.empty() && std::regex_search(t.name, std::regex(options.skip_tests))) {
      results.tests.push_back({t.name, GateCheck::Outcome::Skipped, "--skip-tests " + options.skip_tests});
      continue;
    }
    if (!fs::exists(test.command.front())) {
      results.tests.push_back({t.name, GateCheck::Outcome::Skipped, "not built: " + test.command.front()});
      continue;
    }
    why[t.name] = "[" + tier_name(t.tier) + "] " + t.why;
    pool.queue(t.name);
  }
  auto drain = [&] {
    for (TestRun& run : pool.take_finished()) {
      GateCheck c{run.name, GateCheck::Outcome::Held, why[run.name]};
      c.seconds = run.finished - run.started;
      c.finished_at = seconds_since(start);
      if (run.end == TestRun::End::Failed) {
        c.outcome = GateCheck::Outcome::Failed;
        c.message = why[run.name] + "\n" + run.output;
      } else if (run.end == TestRun::End::Skipped) {
        c.outcome = GateCheck::Outcome::Skipped;
      } else if (run.end == TestRun::End::Stopped) {
        c.outcome = GateCheck::Outcome::Unreached;
        c.message = "stopped at the end of the budget after " + std::to_string(static_cast<int64_t>(c.seconds)) + " s";
      }
      log_check(log, "test ", c);
      results.tests.push_back(c);
      if (options.fail_fast && c.outcome == GateCheck::Outcome::Failed) stop = true;
    }
  };
  // jobs 1: the tests first, then the gate's own checks.
  if (options.jobs == 1)
    while (!stop && pool.pending() > 0 && left() > 0) {
      pool.wait_all(Clock::now() + std::chrono::milliseconds(200));
      drain();
    }
  for (const GateRunner::Planned& p : planned) {
    drain();
    GatePassResult& result = pass_result(p.pass);
    if (stop || left() <= 0) {
      result.checks.push_back({p.name, GateCheck::Outcome::Unreached,
                               stop ? "not run: an earlier check failed (--fail-fast)" : "not reached within the budget"});
      continue;
    }
    const auto check_start = Clock::now();
    GateCheck c;
    try {
      c = p.run(left());
    } catch (const std::exception& e) {
      c = {p.name, GateCheck::Outcome::Failed, e.what()};
    }
    c.name = p.name;
    c.seconds = seconds_since(check_start);
    c.finished_at = seconds_since(start);
    log_check(log, p.pass + ": ", c);
    result.checks.push_back(c);
    if (options.fail_fast && c.outcome == GateCheck::Outcome::Failed) stop = true;
  }
  pool.set_slots(options.jobs);
  while (!stop && pool.pending() > 0 && left() > 0) {
    pool.wait_all(Clock::now() + std::chrono::milliseconds(200));
    drain();
  }
  const std::vector<std::string> not_started = pool.not_started();
  pool.stop();
  while (pool.pending() > 0) pool.wait_all(Clock::now() + std::chrono::milliseconds(200));
  drain();
  for (const std::string& name : not_started)
    results.tests.push_back({name, GateCheck::Outcome::Unreached,
                             stop ? "not run: an earlier check failed (--fail-fast)" : "not reached within the budget"});
  // A pass whose every counted check saw it decide nothing was not checked at all.
  for (GatePassResult& p : results.passes)
    if (p.vacuous()) {
      GateCheck c{"decisions", GateCheck::Outcome::Failed,
                  p.pass + " made no decision in any check that counts them: every check held vacuously"};
      c.finished_at = seconds_since(start);
      log_check(log, p.pass + ": ", c);
      p.checks.push_back(c);
    }
  return results;
}

}  // namespace passcheck::gate
