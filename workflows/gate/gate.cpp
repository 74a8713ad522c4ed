// The CI gate (see gate.h): git for the changed files, the family selection, the checks
// of every selected pass, the JUnit XML and the report sections. tools/passcheck's
// `gate` command parses the options and prints the summary.
#include "workflows/gate/gate.h"
#include "workflows/gate/gate_mutants.h"

#include "workflows/campaign/campaign.h"
#include "framework/check/pass_properties.h"
#include "framework/check/pipeline.h"
#include "workflows/graph_files/text_cases.h"
#include "framework/io/files.h"
#include "framework/report/html.h"
#include "framework/report/report.h"
#include "oracles/pass_on_models.h"
#include "oracles/models/subject.h"
#include "passes/partition/budget_monotonicity.h"
#include "suites/mutants/mutants.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <sys/wait.h>

namespace passcheck::gate {

using graph_files::case_files;
using graph_files::case_passes;
using graph_files::parse_case_file;
using graph_files::run_text_case;
using graph_files::TextCase;

namespace fs = std::filesystem;

bool GatePassResult::held() const {
  return std::none_of(checks.begin(), checks.end(),
                      [](const GateCheck& c) { return c.outcome == GateCheck::Outcome::Failed; });
}

bool GateResults::held() const {
  return std::all_of(passes.begin(), passes.end(), [](const GatePassResult& p) { return p.held(); });
}

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct GitOutput {
  int exit_code = -1;
  std::string output;
};

// git through the shell with stderr captured: the gate reports git's own words on failure.
GitOutput git(const std::string& repo, const std::string& arguments) {
  const std::string command = "git -C " + shell_quote(repo) + " " + arguments + " 2>&1";
  GitOutput out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run git: " + command);
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.output.append(buffer, n);
  const int status = pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
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
  GitOutput root = git(repo, "rev-parse --show-toplevel");
  if (root.exit_code != 0)
    throw std::invalid_argument("--repo " + repo + " is not a git work tree (git: " + lines_of(root.output + "?")[0] + ")");
  top = lines_of(root.output).at(0);
  if (git(top, "rev-parse --verify --quiet " + shell_quote(base + "^{commit}")).exit_code != 0)
    throw std::invalid_argument("--base " + base + ": no such commit in " + top);
  std::set<std::string> files;
  for (const std::string& args : {"diff --name-only " + shell_quote(base + "...HEAD"), std::string("diff --name-only HEAD"),
                                  std::string("ls-files --others --exclude-standard")}) {
    GitOutput out = git(top, "-c core.quotepath=off " + args);
    if (out.exit_code != 0) throw std::invalid_argument("git " + args + " failed in " + top + ": " + out.output);
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

GateSelection select_families(const std::vector<std::string>& changed, const std::vector<check::PassFamily>& families,
                              const std::string& repo, const check::PassRegistry& registry) {
  GateSelection s;
  auto everything = [&](const std::string& file, const std::string& why) {
    for (const check::PassFamily& f : families) s.families.insert(f.name);
    s.reasons.push_back(file + " -> every family (" + why + ")");
  };
  for (const std::string& file : changed) {
    if (file == "passes/registry.cpp" || file == "passes/CMakeLists.txt") {
      everything(file, "the pass registry");
    } else if (starts_with(file, "passes/")) {
      const std::string family = file.substr(7, file.find('/', 7) == std::string::npos ? 0 : file.find('/', 7) - 7);
      bool known = false;
      for (const check::PassFamily& f : families) known |= f.name == family;
      if (known) {
        s.families.insert(family);
        s.reasons.push_back(file + " -> family " + family);
      } else {
        s.reasons.push_back(file + " -> nothing (no registered family '" + family + "')");
      }
    } else if (starts_with(file, "framework/ir/") || starts_with(file, "framework/exec/") ||
               starts_with(file, "framework/check/")) {
      everything(file, "every pass runs on it");
    } else if (starts_with(file, "suites/passes_text/") && fs::path(file).extension() == ".graph") {
      std::set<std::string> touched;
      std::vector<std::string> errors;
      const std::string path = (fs::path(repo) / file).string();
      if (fs::exists(path))
        for (const TextCase& c : parse_case_file(path, errors))
          for (const std::string& pass : case_passes(c, registry)) {
            const std::string family = family_of_pass(pass, families);
            if (!family.empty()) touched.insert(family);
          }
      std::string names;
      for (const std::string& f : touched) {
        s.families.insert(f);
        names += (names.empty() ? "" : ", ") + f;
      }
      s.reasons.push_back(file + " -> " + (touched.empty() ? std::string("nothing (no case runs a registered pass)")
                                                           : "the families its cases run: " + names));
    } else {
      s.reasons.push_back(file + " -> nothing (no pass depends on it)");
    }
  }
  return s;
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

}  // namespace

std::string gate_junit_xml(const GateResults& results) {
  std::ostringstream x;
  int tests = 0, failures = 0, skipped = 0;
  double total = 0;
  for (const GatePassResult& p : results.passes)
    for (const GateCheck& c : p.checks) {
      ++tests;
      failures += c.outcome == GateCheck::Outcome::Failed;
      skipped += c.outcome == GateCheck::Outcome::Skipped;
      total += c.seconds;
    }
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"passcheck gate\" tests=\"" << tests << "\" failures=\"" << failures << "\" skipped=\""
    << skipped << "\" time=\"" << total << "\">\n";
  for (const GatePassResult& p : results.passes) {
    int f = 0, s = 0;
    double t = 0;
    for (const GateCheck& c : p.checks) {
      f += c.outcome == GateCheck::Outcome::Failed;
      s += c.outcome == GateCheck::Outcome::Skipped;
      t += c.seconds;
    }
    x << "  <testsuite name=\"" << xml_escape(p.pass) << "\" package=\"" << xml_escape(p.family) << "\" tests=\""
      << p.checks.size() << "\" failures=\"" << f << "\" errors=\"0\" skipped=\"" << s << "\" time=\"" << t << "\">\n";
    for (const GateCheck& c : p.checks) {
      x << "    <testcase classname=\"passcheck.gate." << xml_escape(p.family + "." + p.pass) << "\" name=\""
        << xml_escape(c.name) << "\" time=\"" << c.seconds << "\"";
      if (c.outcome == GateCheck::Outcome::Held) {
        x << "/>\n";
        continue;
      }
      x << ">\n";
      const std::string first_line = c.message.substr(0, c.message.find('\n'));
      if (c.outcome == GateCheck::Outcome::Failed)
        x << "      <failure message=\"" << xml_escape(first_line) << "\">" << xml_escape(c.message) << "</failure>\n";
      else
        x << "      <skipped message=\"" << xml_escape(first_line) << "\"/>\n";
      x << "    </testcase>\n";
    }
    x << "  </testsuite>\n";
  }
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

// Runs the gate's checks; `log` gets a line per check as it finishes.
class GateRunner {
 public:
  GateRunner(const GateOptions& args, const check::PassRegistry& registry, std::string cases_dir, std::ostream& log)
      : args_(args), registry_(registry), cases_dir_(std::move(cases_dir)), log_(log) {
    if (!cases_dir_.empty())
      for (const std::string& file : case_files(cases_dir_))
        for (TextCase& c : parse_case_file(file, case_errors_)) cases_.push_back(std::move(c));
  }

  GatePassResult run_pass(const std::string& pass, const std::string& family) {
    GatePassResult result{pass, family, {}};
    log_ << "pass " << pass << " (family " << family << "):\n";
    text_cases(pass, result);
    properties(pass, result);
    for (const mutants::MutantInfo& m : mutants::all_mutants())
      if (m.replaces == pass) mutant(m, result);
    fuzz(pass, result);
    return result;
  }

 private:
  void record(GatePassResult& result, GateCheck check) {
    static const char* const kWords[] = {"held   ", "FAILED ", "skipped"};
    log_ << "  " << kWords[static_cast<int>(check.outcome)] << " " << check.name;
    if (!check.message.empty() && check.outcome != GateCheck::Outcome::Failed)
      log_ << ": " << check.message;
    log_ << " (" << static_cast<int64_t>(check.seconds * 1000) << " ms)\n";
    if (check.outcome == GateCheck::Outcome::Failed) log_ << "    " << check.message << "\n";
    result.checks.push_back(std::move(check));
  }

  std::vector<const TextCase*> cases_running(const std::string& pass) const {
    std::vector<const TextCase*> found;
    for (const TextCase& c : cases_) {
      const auto passes = case_passes(c, registry_);
      if (std::find(passes.begin(), passes.end(), pass) != passes.end()) found.push_back(&c);
    }
    return found;
  }

  void text_cases(const std::string& pass, GatePassResult& result) {
    const auto start = Clock::now();
    GateCheck check{"text cases", GateCheck::Outcome::Held, "", 0};
    if (cases_dir_.empty()) {
      check.outcome = GateCheck::Outcome::Skipped;
      check.message = "no suites/passes_text in the repository";
    } else {
      const auto cases = cases_running(pass);
      std::string problems;
      for (const TextCase* c : cases)
        for (const std::string& p : run_text_case(*c, registry_).problems) problems += p + "\n";
      if (!problems.empty()) {
        check.outcome = GateCheck::Outcome::Failed;
        check.message = problems;
      } else if (cases.empty()) {
        check.outcome = GateCheck::Outcome::Skipped;
        check.message = "no text case runs " + pass;
      } else {
        check.message = std::to_string(cases.size()) + " cases";
      }
    }
    check.seconds = seconds_since(start);
    record(result, std::move(check));
  }

  const oracles::ModelJoint& joint(const std::string& model) {
    auto it = joints_.find(model);
    if (it == joints_.end()) it = joints_.emplace(model, oracles::trace_model_joint(model)).first;
    return it->second;
  }

  // Violations of `pass` (or its stand-in `replace`) on `model`.
  std::vector<std::string> violations_on(const std::string& pass, const std::string& model,
                                         const std::map<std::string, std::string>& replace = {}) {
    const std::string pipeline =
        renamed_pipeline(oracles::pipeline_with_prerequisites(pass, model), replace, registry_);
    return check::check_pass_properties(*joint(model).graph, joint(model).inputs, pipeline, registry_).violations;
  }

  void properties(const std::string& pass, GatePassResult& result) {
    if (!oracles::runs_on_traced_subjects(pass)) {
      record(result, {"properties", GateCheck::Outcome::Skipped,
                      "checked against the eager-chunked oracle by the chunking suites, not on traced subjects", 0});
      return;
    }
    for (const std::string& model : args_.models) {
      const auto start = Clock::now();
      GateCheck check{"properties on " + model, GateCheck::Outcome::Held, "", 0};
      try {
        std::string text;
        for (const std::string& v : violations_on(pass, model)) text += v + "\n";
        if (!text.empty()) {
          check.outcome = GateCheck::Outcome::Failed;
          check.message = text;
        }
      } catch (const std::exception& e) {
        check.outcome = GateCheck::Outcome::Failed;
        check.message = e.what();
      }
      check.seconds = seconds_since(start);
      record(result, std::move(check));
    }
  }

  // A mutant must fail one of the gate's own checks: its real pass's text cases, the
  // properties on a traced subject, or (last, as it costs the most) a differential fuzz
  // campaign against the real pass.
  void mutant(const mutants::MutantInfo& m, GatePassResult& result) {
    const auto start = Clock::now();
    GateCheck check{"mutant " + m.pass, GateCheck::Outcome::Held, "", 0};
    const std::map<std::string, std::string> replace{{m.replaces, m.pass}};
    for (const TextCase* c : cases_running(m.replaces)) {
      if (run_text_case(*c, registry_, replace).problems.empty()) continue;
      check.message = "caught by text case " + c->name;
      break;
    }
    if (check.message.empty() && oracles::runs_on_traced_subjects(m.replaces))
      for (const std::string& model : args_.models) {
        try {
          if (violations_on(m.replaces, model, replace).empty()) continue;
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
    if (check.message.empty() && args_.mutant_seconds > 0) {
      const std::string caught = catch_mutant_on_generated_cases(m.pass, m.replaces, result.family, registry_,
                                                                 args_.seed, args_.mutant_seconds);
      if (!caught.empty()) check.message = "caught on " + caught;
    }
    if (check.message.empty()) {
      check.outcome = GateCheck::Outcome::Failed;
      check.message = m.pass + " (" + m.description + ") survived the text cases, the properties on every model" +
                      (args_.mutant_seconds > 0 ? " and generated cases" : "") + ": the checks of " + m.replaces +
                      " cannot tell it from the real pass";
    }
    check.seconds = seconds_since(start);
    record(result, std::move(check));
  }

  campaign::CampaignOptions fuzz_options(const std::string& pass, uint64_t seed) const {
    campaign::CampaignOptions options;
    options.pass = pass;
    options.seconds = args_.fuzz_seconds / 2.0;
    options.seed = seed;
    options.jobs = args_.jobs;
    options.out = (fs::path(args_.out) / pass).string();
    options.minimize_seconds = 30;
    options.max_failures = 1;
    // The chunk passes need chunkable programs traced with a symbolic batch.
    if (family_of_pass(pass, check::builtin_pass_families()) == "chunk") options.chunk = "batch";
    if (args_.mutant_as_pass.empty()) return options;
    // Cases replayed from a repro must build the same registry.
    options.registries = {"mutants"};
    return options;
  }

  void fuzz(const std::string& pass, GatePassResult& result) {
    if (args_.fuzz_seconds <= 0) {
      record(result, {"fuzz", GateCheck::Outcome::Skipped, "--fuzz-seconds 0", 0});
      return;
    }
    // The fixed seed replays what earlier runs found; the fresh one explores further.
    for (uint64_t seed : {args_.seed, fresh_seed_}) {
      const auto start = Clock::now();
      GateCheck check{"fuzz seed " + std::to_string(seed), GateCheck::Outcome::Held, "", 0};
      try {
        campaign::CampaignOptions options = fuzz_options(pass, seed);
        campaign::validate(options, registry_);
        campaign::CampaignReport report = campaign::run_campaign(options, registry_);
        check.message = std::to_string(report.cases_run) + " cases";
        if (report.failure_count() > 0) {
          check.outcome = GateCheck::Outcome::Failed;
          check.message = std::to_string(report.failure_count()) + " of " + std::to_string(report.cases_run) +
                          " cases failed";
          for (const campaign::CaseFailure& f : report.failures)
            check.message += "\n" + f.kind + ": " + f.detail + (f.repro.empty() ? "" : " (repro " + f.repro + ")");
        }
      } catch (const std::invalid_argument& e) {
        check.outcome = GateCheck::Outcome::Skipped;
        check.message = std::string("the fuzzer draws no cases for it: ") + e.what();
      }
      check.seconds = seconds_since(start);
      record(result, std::move(check));
    }
  }

  const GateOptions& args_;
  const check::PassRegistry& registry_;
  std::string cases_dir_;
  std::vector<TextCase> cases_;
  std::vector<std::string> case_errors_;
  std::map<std::string, oracles::ModelJoint> joints_;
  std::ostream& log_;
  uint64_t fresh_seed_ = std::random_device{}();
};

}  // namespace

const char* outcome_name(GateCheck::Outcome outcome) {
  switch (outcome) {
    case GateCheck::Outcome::Held: return "held";
    case GateCheck::Outcome::Failed: return "FAILED";
    case GateCheck::Outcome::Skipped: return "skipped";
  }
  return "?";
}

void add_gate_sections(report::Report& html, const GateResults& results) {
  html.add_fact("base", results.base);
  html.add_fact("changed files", std::to_string(results.changed_files.size()));
  std::string selected;
  for (const std::string& f : results.selection.families) selected += (selected.empty() ? "" : ", ") + f;
  html.add_fact("selected families", selected.empty() ? "none" : selected);
  report::Table selection{"selection", {"changed file -> families"}, {}};
  for (const std::string& reason : results.selection.reasons) selection.rows.push_back({reason});
  html.add_table(selection);
  for (const GatePassResult& pass : results.passes) {
    report::Table checks{"pass " + pass.pass + " (family " + pass.family + ")", {"check", "outcome", "seconds", "detail"}, {}};
    for (const GateCheck& c : pass.checks) {
      std::ostringstream seconds;
      seconds.precision(3);
      seconds << c.seconds;
      checks.rows.push_back({c.name, outcome_name(c.outcome), seconds.str(), c.message});
    }
    html.add_table(checks);
  }
  report::Table skipped{"skipped passes", {"pass"}, {}};
  for (const std::string& s : results.skipped_passes) skipped.rows.push_back({s});
  html.add_table(skipped);
}

GateResults run_gate(const GateOptions& options, std::ostream& log) {
  GateResults results;
  results.base = options.base;
  results.changed_files = changed_files(options.repo, options.base, results.repo);
  const std::vector<std::string> known = models::available_subjects();
  for (const std::string& model : options.models)
    if (std::find(known.begin(), known.end(), model) == known.end())
      throw std::invalid_argument("--models: unknown model '" + model + "' (see `passcheck models`)");
  const check::PassRegistry registry = gate_registry(options.mutant_as_pass);
  const std::vector<check::PassFamily> families = check::builtin_pass_families();
  results.selection = select_families(results.changed_files, families, results.repo, registry);

  log << "gate: " << results.changed_files.size() << " files changed since " << options.base << " in "
      << results.repo << "\n";
  for (const std::string& reason : results.selection.reasons) log << "  " << reason << "\n";
  std::string selected;
  for (const std::string& f : results.selection.families) selected += (selected.empty() ? "" : ", ") + f;
  log << "gate: selected families: " << (selected.empty() ? "none" : selected) << "\n";

  const fs::path cases = fs::path(results.repo) / "suites" / "passes_text";
  GateRunner runner(options, registry, fs::is_directory(cases) ? cases.string() : "", log);
  for (const check::PassFamily& family : families)
    for (const std::string& pass : family.passes) {
      if (!results.selection.families.count(family.name)) {
        results.skipped_passes.push_back(pass + " (family " + family.name + " unchanged)");
        log << "skipped " << pass << ": family " << family.name << " unchanged\n";
        continue;
      }
      results.passes.push_back(runner.run_pass(pass, family.name));
    }
  return results;
}

}  // namespace passcheck::gate
