// The one registration entry point of the mutant library (see mutants.h): gathers the
// mutants of every family into one listing and registers each as its real pass run with
// the mutant's faults.
#include "suites/mutants/mutants.h"

#include "suites/mutants/ac_mutants.h"
#include "suites/mutants/cleanup_mutants.h"
#include "suites/mutants/collective_mutants.h"
#include "suites/mutants/decision_mutants_ac.h"
#include "suites/mutants/distributed_mutants.h"
#include "suites/mutants/cudagraph_mutants.h"
#include "suites/mutants/partition_mutants.h"

#include <algorithm>
#include <sstream>

namespace passcheck::mutants {

namespace {

const check::DecisionInfo& declared(const std::vector<check::DecisionInfo>& decisions, const std::string& name) {
  auto it = std::find_if(decisions.begin(), decisions.end(), [&](const check::DecisionInfo& d) { return d.name == name; });
  if (it == decisions.end()) throw check::PassConfigError("no declared decision '" + name + "'");
  return *it;
}

// The registered decision mutants of the AC and chunk passes, described like the cleanup
// ones: which decision is broken, and what that decision does in the real pass.
std::vector<MutantInfo> ac_chunk_decision_infos() {
  std::vector<MutantInfo> out;
  for (const DecisionMutant& m : ac_chunk_decision_mutants()) {
    if (!m.excluded.empty()) continue;
    const check::PassInfo& real = check::PassRegistry::global().get(m.replaces).info;
    MutantInfo info;
    info.pass = m.pass;
    info.replaces = m.replaces;
    if (m.guard) {
      info.description = "guard " + m.decision + " disabled: " + declared(real.guards, m.decision).description;
      info.faults.disabled_guards.insert(m.decision);
    } else {
      info.description = "rule " + m.decision + " widened beyond its conditions: " +
                         declared(real.rules, m.decision).description;
      info.faults.widened_rules.insert(m.decision);
    }
    out.push_back(std::move(info));
  }
  return out;
}

std::string summary_of(const MutantInfo& m) {
  if (m.historical_bug > 0) return "MUTANT (bug " + std::to_string(m.historical_bug) + "): " + m.description;
  return "MUTANT of " + m.replaces + ": " + m.description;
}

}  // namespace

const std::vector<MutantInfo>& all_mutants() {
  static const std::vector<MutantInfo> all = [] {
    std::vector<MutantInfo> out;
    for (const std::vector<MutantInfo>& family : {ac_mutants(), chunk_mutants(), collective_mutants(), distributed_mutants(),
                                                  ac_chunk_decision_infos(), cleanup_mutants(), partition_mutants(),
                                                  cudagraph_mutants()})
      out.insert(out.end(), family.begin(), family.end());
    return out;
  }();
  return all;
}

void register_all_mutants(check::PassRegistry& registry) {
  for (const MutantInfo& m : all_mutants()) {
    const check::RegisteredPass& real = registry.get(m.replaces);
    check::check_faults_declared(real.info, m.faults);
    check::PassInfo info = real.info;
    info.name = m.pass;
    info.summary = summary_of(m);
    // A mutant is not itself a target for further faults.
    info.injectable_bugs.clear();
    if (real.is_module_pass()) {
      registry.add_module_pass(info, [run = real.run_module, faults = m.faults](ir::Module& mod,
                                                                                const check::PassOptions& o) {
        return run(mod, o.with_faults(faults));
      });
      continue;
    }
    registry.add(info, [run = real.run, faults = m.faults](ir::Graph& g, const check::PassOptions& o) {
      return run(g, o.with_faults(faults));
    });
  }
}

const check::PassRegistry& registry_with_mutants() {
  static const check::PassRegistry registry = [] {
    check::PassRegistry r;
    check::register_builtin_passes(r);
    register_all_mutants(r);
    return r;
  }();
  return registry;
}

std::string mutant_catalogue() {
  std::ostringstream out;
  out << "\nmutants (known-buggy variants from suites/mutants, registered only with --mutants):\n";
  for (const MutantInfo& m : all_mutants()) {
    out << "  " << m.pass << "\n      corrupts " << m.replaces << ", "
        << (m.historical_bug > 0 ? "historical bug " + std::to_string(m.historical_bug) : std::string("no historical bug"))
        << ": " << m.description << "\n";
  }
  return out.str();
}

}  // namespace passcheck::mutants
