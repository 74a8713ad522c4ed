// The cleanup mutants (see cleanup_mutants.h): names, descriptions and faults come from
// the passes' own PassInfo, so a rule or guard declared tomorrow gets its mutant
// without a line here; only exclusions are written by hand, each with its argument.
#include "suites/mutants/cleanup_mutants.h"

#include "passes/cleanup/cleanup_passes.h"

#include <algorithm>

namespace passcheck::mutants {

namespace {

// "remove-identity-slice/start-not-zero" (canonicalize's qualified names) -> kebab.
std::string kebab(std::string name) {
  std::replace(name.begin(), name.end(), '/', '-');
  return name;
}

bool excluded(const std::string& pass, const std::string& kind, const std::string& decision) {
  for (const ExcludedMutant& e : cleanup_mutant_exclusions())
    if (e.pass == pass && e.kind == kind && e.decision == decision) return true;
  return false;
}

std::vector<MutantInfo> build_cleanup_mutants() {
  check::PassRegistry real;
  passes::register_cleanup_passes(real);
  std::vector<MutantInfo> out;
  for (const std::string& pass : cleanup_pass_names()) {
    const check::PassInfo& info = real.get(pass).info;
    for (const check::DecisionInfo& g : info.guards) {
      if (excluded(pass, "guard", g.name)) continue;
      MutantInfo b{"mutant-" + pass + "-no-" + kebab(g.name), pass, 0, "guard " + g.name + " disabled: " + g.description,
                   {}};
      b.faults.disabled_guards.insert(g.name);
      out.push_back(std::move(b));
    }
    for (const check::DecisionInfo& r : info.rules) {
      if (excluded(pass, "rule", r.name)) continue;
      MutantInfo b{"mutant-" + pass + "-widened-" + kebab(r.name), pass, 0,
                   "rule " + r.name + " widened beyond its conditions: " + r.description, {}};
      b.faults.widened_rules.insert(r.name);
      out.push_back(std::move(b));
    }
  }
  return out;
}

}  // namespace

const std::vector<std::string>& cleanup_pass_names() {
  static const std::vector<std::string> names = {"dce",
                                                 "cse",
                                                 "remove-detach",
                                                 "remove-identity-view",
                                                 "remove-b2b-transpose",
                                                 "remove-identity-slice",
                                                 "normalize-views",
                                                 "canonicalize"};
  return names;
}

const std::vector<ExcludedMutant>& cleanup_mutant_exclusions() {
  static const std::vector<ExcludedMutant> exclusions = {
      {"dce", "guard", "collective",
       "the executor has no collective kernels, so no graph holding one runs in a single process, and an erased "
       "collective's harm (the other ranks wait forever) lies outside any single-process result; the guard is "
       "reached by the random-IR source of the coverage campaign"},
      {"cse", "guard", "aliases-input",
       "two equal view ops of the same value are the same sizes and strides over the same storage: a write "
       "through either is a write both see, and a write into either result is refused by result-written, so "
       "merging them cannot change a value"},
      {"cse", "guard", "uninitialized",
       "two uninitialized buffers differ only once one is written, and a write into either (in place, out=, "
       "or through a view) is refused by result-written; reading an unwritten one is undefined in the original "
       "graph already"},
      {"cse", "guard", "recomputed",
       "a rematerialized duplicate computes its original's value bit for bit; merging it undoes remat's memory "
       "saving, which the generic properties hold only memory-only passes to (cse preserves numerics; the remat "
       "properties check the rematerialized graph itself)"},
  };
  return exclusions;
}

const std::vector<MutantInfo>& cleanup_mutants() {
  static const std::vector<MutantInfo> infos = build_cleanup_mutants();
  return infos;
}

}  // namespace passcheck::mutants
