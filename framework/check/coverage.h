// Decision coverage: how often each declared rule of a pass fired and each declared
// guard refused, summed over many pipeline runs (a fuzz campaign, a coverage test).
// A declared decision that no case reaches is a gap in the generators: nothing checks
// what the pass does there, and a mutant breaking it would go unnoticed. Counts travel
// between processes as text (the fuzzer's case children send theirs back).
#pragma once

#include "framework/check/pass.h"

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace passcheck::check {

/// How often a pass ran and what it changed: per pipeline run (Coverage::run_changes) or
/// per case (Coverage::case_changes: a case counts once, as computation when any of its
/// runs changed the computation, else as metadata only when one changed metadata).
struct ChangeCounts {
  int64_t runs = 0;           ///< runs (or cases) in which the pass ran
  int64_t computation = 0;    ///< ... changed the computation (Graph::computation_hash: operators, arguments, types)
  int64_t metadata_only = 0;  ///< ... changed node metadata only (Graph::unnamed_hash; renaming values is no change)
  int64_t changed() const { return computation + metadata_only; }
};

/// Decision counts per pass: pass -> rule -> firings, pass -> guard -> refusals.
class Coverage {
 public:
  /// Adds the decisions `result` reports for `pass` (a registry name).
  void add(const std::string& pass, const PassResult& result);
  void merge(const Coverage& other);

  int64_t rule(const std::string& pass, const std::string& rule) const;
  int64_t guard(const std::string& pass, const std::string& guard) const;
  /// Every count: pass -> rule (guard) -> count.
  const std::map<std::string, std::map<std::string, int64_t>>& rule_counts() const { return rules_; }
  const std::map<std::string, std::map<std::string, int64_t>>& guard_counts() const { return guards_; }
  /// Passes with at least one counted decision.
  std::set<std::string> passes() const;
  /// No decision and no run counted.
  bool empty() const {
    return rules_.empty() && guards_.empty() && run_changes_.empty() && case_changes_.empty() &&
           tolerated_cases_ == 0 && features_.empty();
  }
  /// Pipeline runs in which a pass refused its input (RefusedInput).
  int64_t refusals() const { return refusals_; }
  /// Adds a refusal: the decisions the pass made up to it, and one to refusals().
  void add_refusal(const std::string& pass, const RefusedInput& refusal);

  /// Counts one run of `pass`: whether it changed the computation, or only metadata.
  void add_run(const std::string& pass, bool computation_changed, bool metadata_changed);
  /// Merges the counts of one case (a case process's coverage) and counts the case in
  /// case_changes() for every pass that ran in it.
  void merge_case(const Coverage& one_case);
  /// Per pass: its runs and what they changed.
  const std::map<std::string, ChangeCounts>& run_changes() const { return run_changes_; }
  /// Per pass: the cases it ran in and what it changed there (merge_case).
  const std::map<std::string, ChangeCounts>& case_changes() const { return case_changes_; }
  /// Counts a case whose results differed within the tolerance its pipeline declares
  /// (check::declared_tolerance_ulp), by at most `max_ulp`.
  void add_tolerated(uint64_t max_ulp);
  /// Counts a case that a generator feature (gen::feature_names) was added to.
  void add_feature(const std::string& feature) { ++features_[feature]; }
  /// Cases per generator feature added to them.
  const std::map<std::string, int64_t>& features() const { return features_; }
  /// Cases counted by add_tolerated, and the largest difference among them.
  int64_t tolerated_cases() const { return tolerated_cases_; }
  uint64_t tolerated_max_ulp() const { return tolerated_max_ulp_; }

  /// "pass rule name: never fired" / "pass guard name: never refused" for every
  /// decision `passes` declare in `registry` that has a zero count, in registry order.
  std::vector<std::string> unreached(const PassRegistry& registry, const std::set<std::string>& passes) const;
  /// A table, one block per pass of `passes` that declares decisions: each declared
  /// rule and guard with its count, unreached ones marked, undeclared counts listed.
  std::string table(const PassRegistry& registry, const std::set<std::string>& passes) const;

  /// One "rule|guard <tab> pass <tab> name <tab> count" line per counter, and one
  /// "runs|cases <tab> pass <tab> ran|computation|metadata-only <tab> count" per change count,
  /// "tolerated <tab> - <tab> cases|max-ulp <tab> count" for differences within tolerance,
  /// "feature <tab> - <tab> name <tab> count" for generator features added to cases.
  std::string serialize() const;
  /// Inverse of serialize(); throws std::invalid_argument naming the bad line.
  static Coverage parse(const std::string& text);

 private:
  std::map<std::string, std::map<std::string, int64_t>> rules_;
  std::map<std::string, std::map<std::string, int64_t>> guards_;
  int64_t refusals_ = 0;
  std::map<std::string, ChangeCounts> run_changes_;
  std::map<std::string, ChangeCounts> case_changes_;
  int64_t tolerated_cases_ = 0;
  uint64_t tolerated_max_ulp_ = 0;
  std::map<std::string, int64_t> features_;
};

/// The registered passes that declare at least one rule or guard.
std::set<std::string> passes_with_decisions(const PassRegistry& registry);

/// A copy of `registry` whose passes also add their decisions to `*coverage` (which
/// must outlive the copy), those made before a refusal included. Used where pipelines run
/// out of sight (property checks, chunk cases) so their decisions are counted without
/// changing the callers.
PassRegistry counting_registry(const PassRegistry& registry, Coverage* coverage);

/// A counting copy of a registry built once and used for many cases (copying a
/// registry's passes costs more than a small case's pipeline): its passes add their
/// decisions to whichever Coverage is attached when they run (none: not counted).
class CountingRegistry {
 public:
  explicit CountingRegistry(const PassRegistry& registry);
  /// The registry the counting copy was made of.
  const PassRegistry& base() const { return *base_; }
  /// The counting copy.
  const PassRegistry& registry() const { return registry_; }
  /// Counts go to `*coverage` from now on (nullptr: nowhere); it must outlive the runs.
  void attach(Coverage* coverage) const { *sink_ = coverage; }

 private:
  const PassRegistry* base_;
  std::shared_ptr<Coverage*> sink_;
  PassRegistry registry_;
};

}  // namespace passcheck::check
