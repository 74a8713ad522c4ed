// Pass declaration and registry. A pass is declared once: its kebab-case name, a
// summary, its options (with defaults and allowed values) and the properties the
// suites hold it to (numerics effect, idempotence, memory direction). The registry
// lists every pass; pipelines are built from names and options (pipeline.h).
#pragma once

#include "framework/ir/graph.h"

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
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
  /// Allowed values; empty means free-form (validated by the pass).
  std::vector<std::string> choices;
};

struct PassInfo {
  std::string name;     ///< kebab-case registry name, e.g. "remove-detach"
  std::string summary;  ///< one line
  std::vector<PassOptionInfo> options;
  NumericsEffect numerics = NumericsEffect::Preserves;
  /// Running the pass a second time leaves the graph unchanged.
  bool idempotent = true;
};

/// Bad pass name, option or option value; the message names the pass and the option.
class PassConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

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

 private:
  std::string pass_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> defaults_;
};

/// What a pass reports: whether it changed the graph, and named counters
/// ("recomputed_nodes", "erased_nodes", ...) for reports.
struct PassResult {
  bool changed = false;
  std::map<std::string, int64_t> stats;
  static PassResult unchanged() { return {}; }
};

using PassFunction = std::function<PassResult(ir::Graph&, const PassOptions&)>;

struct RegisteredPass {
  PassInfo info;
  PassFunction run;
};

/// Every pass passcheck knows, by name. Built-in passes register through
/// register_builtin_passes() (passes/registry.cpp); tests may add their own.
class PassRegistry {
 public:
  /// The process-wide registry with the built-in passes (defined in
  /// passes/registry.cpp, so users of it link passcheck_passes).
  static PassRegistry& global();
  void add(PassInfo info, PassFunction run);
  /// Throws PassConfigError listing the known passes.
  const RegisteredPass& get(const std::string& name) const;
  bool contains(const std::string& name) const { return passes_.count(name) > 0; }
  std::vector<const RegisteredPass*> list() const;
  /// The catalogue `passcheck passes` prints.
  std::string catalogue() const;

 private:
  std::map<std::string, RegisteredPass> passes_;
};

/// Defined in passes/registry.cpp: registers every built-in pass.
void register_builtin_passes(PassRegistry& registry);

}  // namespace passcheck::check
