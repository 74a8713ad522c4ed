// Pass declaration and registry. A pass is declared once: its kebab-case name, a
// summary, its options (with defaults and allowed values) and the properties the
// suites hold it to (numerics effect, idempotence, memory direction). The registry
// lists every pass; pipelines are built from names and options (pipeline.h).
#pragma once

#include "framework/ir/graph.h"
#include "framework/ir/module.h"

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace passcheck::check {

/// What a pass may do to the numbers a graph computes.
enum class NumericsEffect {
  Preserves,   ///< results bit for bit equal; memory not promised
  MemoryOnly,  ///< results bit for bit equal; peak memory must not increase
  Changes,     ///< results may change (checked against a tolerance, not bitwise)
};
const char* to_string(NumericsEffect effect);

struct PassOptionInfo {
  std::string name;
  std::string description;
  std::string default_value;
  /// Allowed values; empty means free-form (then `check`, when set, validates it).
  std::vector<std::string> choices;
  /// Validates a free-form value when the pipeline is parsed, before any pass runs;
  /// throws std::invalid_argument saying what is wrong with it.
  std::function<void(const std::string& value)> check = nullptr;
};

/// Option value checks for PassOptionInfo::check.
namespace option_checks {
/// A decimal integer in [min, max].
std::function<void(const std::string&)> integer_in(int64_t min, int64_t max);
}  // namespace option_checks

/// A named decision point of a pass: a rule (a rewrite the pass makes) or a guard (a
/// condition under which the pass declines to act on a candidate). Declared in PassInfo
/// so coverage campaigns know what must be reached and mutants know what to break.
struct DecisionInfo {
  std::string name;  ///< kebab-case (a composite pass: "<part>/<decision>"), unique within the pass
  std::string description;
};

struct PassInfo {
  PassInfo() = default;
  /// The declaration without decision points (kept so registrations written before
  /// rules and guards existed still read as they did).
  PassInfo(std::string name, std::string summary, std::vector<PassOptionInfo> options = {},
           NumericsEffect numerics = NumericsEffect::Preserves, bool idempotent = true)
      : name(std::move(name)), summary(std::move(summary)), options(std::move(options)), numerics(numerics),
        idempotent(idempotent) {}
  /// The full declaration: the form above, then the decision points.
  PassInfo(std::string name, std::string summary, std::vector<PassOptionInfo> options, NumericsEffect numerics,
           bool idempotent, std::vector<DecisionInfo> rules, std::vector<DecisionInfo> guards)
      : name(std::move(name)), summary(std::move(summary)), options(std::move(options)), numerics(numerics),
        idempotent(idempotent), rules(std::move(rules)), guards(std::move(guards)) {}

  std::string name;     ///< kebab-case registry name, e.g. "remove-detach"
  std::string summary;  ///< one line
  std::vector<PassOptionInfo> options;
  NumericsEffect numerics = NumericsEffect::Preserves;
  /// Running the pass a second time leaves the graph unchanged.
  bool idempotent = true;
  /// Every rule the pass can fire and every guard that can refuse, by name.
  std::vector<DecisionInfo> rules;
  std::vector<DecisionInfo> guards;
  /// Known-buggy behaviours the pass can be told to reproduce (a historical bug that is
  /// no rule or guard of its own): the names a mutant may put in
  /// InjectedFaults::injected_bugs. Never set by a pipeline built from text.
  std::vector<DecisionInfo> injectable_bugs;
  /// The pass handles graphs that call subgraphs (passcheck::invoke_subgraph): it
  /// rewrites their bodies too or treats the calls soundly as opaque. The pipeline
  /// refuses to run a pass without it on a graph with subgraphs (docs/nested-subgraphs.md).
  bool handles_subgraphs = false;

  bool declares_rule(const std::string& rule) const;
  bool declares_guard(const std::string& guard) const;
  bool declares_bug(const std::string& bug) const;
};

/// Bad pass name, option or option value; the message names the pass and the option.
class PassConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Faults injected into one invocation of a real pass to make a known-buggy variant:
/// guards that never refuse, rules applied beyond their conditions, historical bugs
/// reproduced. Empty for every pipeline built from text; only the test-side mutant
/// library (suites/mutants) builds non-empty ones, through PassOptions::with_faults.
/// Carried by the options of one call, so two calls in two threads never share them.
struct InjectedFaults {
  std::set<std::string> disabled_guards;
  std::set<std::string> widened_rules;
  /// Names from PassInfo::injectable_bugs.
  std::set<std::string> injected_bugs;
  bool empty() const { return disabled_guards.empty() && widened_rules.empty() && injected_bugs.empty(); }
};

/// Throws PassConfigError naming the pass and the fault when `faults` names a guard, rule
/// or injectable bug that `info` does not declare (a mutant must break a real decision).
void check_faults_declared(const PassInfo& info, const InjectedFaults& faults);

/// Option values of one pass invocation, validated against its PassInfo (defaults
/// filled in, unknown names and values outside `choices` rejected).
class PassOptions {
 public:
  PassOptions() = default;
  PassOptions(const PassInfo& info, const std::map<std::string, std::string>& given);
  const std::string& get(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  /// Comma-separated list value ("" gives an empty list).
  std::vector<std::string> get_list(const std::string& name) const;
  const std::map<std::string, std::string>& values() const { return values_; }
  /// "{policy=eager}" (only non-default values), "" when all are defaults.
  std::string str() const;
  const InjectedFaults& faults() const { return faults_; }
  /// A copy of these options with `faults` injected (mutants only).
  PassOptions with_faults(InjectedFaults faults) const {
    PassOptions copy = *this;
    copy.faults_ = std::move(faults);
    return copy;
  }

 private:
  InjectedFaults faults_;
  std::string pass_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> defaults_;
};

/// What a pass reports: whether it changed the graph, named counters
/// ("recomputed_nodes", "erased_nodes", ...) for reports, and how often each declared
/// rule fired and each declared guard refused (coverage campaigns sum these).
struct PassResult {
  bool changed = false;
  std::map<std::string, int64_t> stats;
  std::map<std::string, int64_t> rules_fired;
  std::map<std::string, int64_t> guards_refused;
  /// Why candidates were refused, where a count says too little (the counterexample of
  /// a claim the prover refuted: "%t: ... counterexample i0=0, i1=1").
  std::vector<std::string> notes;
  static PassResult unchanged() { return {}; }
};

/// A pass refused its whole input with a clear error (an RNG op tagged recomputable, a
/// live-in of odd size, a false guard at the hint): the message says what and where, and
/// partial() holds the rules fired and guards refused up to the refusal, so coverage
/// counts the guard that refused although no PassResult is returned.
class RefusedInput : public std::runtime_error {
 public:
  RefusedInput(const std::string& message, PassResult partial)
      : std::runtime_error(message), partial_(std::move(partial)) {}
  const PassResult& partial() const { return partial_; }

 private:
  PassResult partial_;
};

/// A pass's view of its own decisions: counts them into its PassResult and applies the
/// faults injected into this invocation (none outside the mutant library).
class Decisions {
 public:
  Decisions(PassResult& result, const PassOptions& options) : result_(result), faults_(options.faults()) {}
  /// True when `guard` refuses here: `condition` holds and the guard is not disabled.
  /// A refusal is counted even when a fault disables it (the decision was reached).
  bool refuse(const std::string& guard, bool condition) {
    if (!condition) return false;
    ++result_.guards_refused[guard];
    return faults_.disabled_guards.count(guard) == 0;
  }
  /// Counts `n` firings of `rule`.
  void fire(const std::string& rule, int64_t n = 1) {
    if (n > 0) result_.rules_fired[rule] += n;
  }
  /// True when a mutant widened `rule`: the pass applies it beyond its usual conditions.
  bool widened(const std::string& rule) const { return faults_.widened_rules.count(rule) > 0; }
  /// True when a mutant asked this call to reproduce the declared historical `bug`.
  bool injected(const std::string& bug) const { return faults_.injected_bugs.count(bug) > 0; }

 private:
  PassResult& result_;
  const InjectedFaults& faults_;
};

using PassFunction = std::function<PassResult(ir::Graph&, const PassOptions&)>;
/// A pass over a whole module: a partitioner, which takes a module of one joint graph and
/// leaves its forward and backward parts (framework/ir/module.h).
using ModulePassFunction = std::function<PassResult(ir::Module&, const PassOptions&)>;

struct RegisteredPass {
  PassInfo info;
  /// A graph pass: set for every pass except module passes. On a module, a pipeline runs
  /// it on each part in turn.
  PassFunction run;
  /// A module pass (partitioners): set instead of `run`.
  ModulePassFunction run_module;
  bool is_module_pass() const { return static_cast<bool>(run_module); }
};

/// Every pass passcheck knows, by name. Built-in passes register through
/// register_builtin_passes() (passes/registry.cpp); tests may add their own.
class PassRegistry {
 public:
  /// The process-wide registry with the built-in passes (defined in
  /// passes/registry.cpp, so users of it link passcheck_passes). Const: built once,
  /// never changed, so threads share it freely; a registry with more passes is a copy.
  static const PassRegistry& global();
  void add(PassInfo info, PassFunction run);
  /// Registers a module pass (a partitioner); same naming and option rules as add().
  void add_module_pass(PassInfo info, ModulePassFunction run);
  /// Throws PassConfigError listing the known passes.
  const RegisteredPass& get(const std::string& name) const;
  bool contains(const std::string& name) const { return passes_.count(name) > 0; }
  std::vector<const RegisteredPass*> list() const;
  /// The catalogue `passcheck passes` prints.
  std::string catalogue() const;

 private:
  void add_checked(PassInfo info, RegisteredPass pass);
  std::map<std::string, RegisteredPass> passes_;
};

/// Defined in passes/registry.cpp: registers every built-in pass.
void register_builtin_passes(PassRegistry& registry);

}  // namespace passcheck::check
