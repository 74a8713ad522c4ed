// Pipelines: a list of pass invocations parsed from text such as
// "dce,canonicalize,sac-tag{policy=eager},remat", run in order with the verifier after
// every pass, each pass's "changed" claim checked against the graph hash and every
// decision it reports checked against the rules and guards it declares, and every claim
// over indices it records proved (a refuted one is a failure).
#pragma once

#include "framework/check/pass.h"
#include "framework/check/verifier.h"

#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace passcheck::check {

struct PassInvocation {
  std::string name;
  std::map<std::string, std::string> options;
  std::string str() const;
};

/// Named pipelines usable wherever pipeline text is: "default" (upstream's order:
/// dce, canonicalize, ac-regions, sac-tag, remat{rng=replay}) and "cleanup".
const std::map<std::string, std::string>& named_pipelines();

/// Parses "a,b{k=v,k2=v2},c"; a named pipeline anywhere in the list stands for its
/// expansion ("dce,cleanup,remat"). Throws PassConfigError naming the column of a syntax
/// error, an unknown pass (listing the known ones) or a bad option.
std::vector<PassInvocation> parse_pipeline(const std::string& text, const PassRegistry& registry);

/// True when a pass of `pipeline` refuses a clone of `graph` with RefusedInput, the passes
/// run one by one without the gate (a Pipeline would report the refusal as a failure);
/// any other error counts as no refusal. Mutant searches use it to skip cases the real
/// pipeline rightly refuses.
bool pipeline_refuses(const ir::Graph& graph, const std::string& pipeline, const PassRegistry& registry);

/// A pass broke an invariant: the verifier failed after it, it lied about changing
/// the graph, or it threw. what() reads "failed after <pass>: ...".
class PassFailure : public std::runtime_error {
 public:
  PassFailure(std::string pass, const std::string& message)
      : std::runtime_error("failed after " + pass + ": " + message), pass_(std::move(pass)) {}
  const std::string& pass() const { return pass_; }

 private:
  std::string pass_;
};

struct PassRecord {
  std::string pass;  ///< name with non-default options
  size_t nodes_before = 0;
  size_t nodes_after = 0;
  bool changed = false;
  std::map<std::string, int64_t> stats;
  /// The pass's decisions (PassResult::rules_fired / guards_refused), all declared.
  std::map<std::string, int64_t> rules_fired;
  std::map<std::string, int64_t> guards_refused;
  /// PassResult::notes (refused candidates' counterexamples).
  std::vector<std::string> notes;
  double seconds = 0;
};

/// How the gate verifies the graph after each pass.
enum class Verification : uint8_t {
  /// What the pass touched (verify_changes): a walk of the list plus the full checks of
  /// every touched node; the default.
  Incremental,
  /// The whole graph (verify_graph).
  Full,
  /// Both, failing when the full verifier finds what the incremental one missed; the
  /// test suites run this way (ctest sets PASSCHECK_VERIFY=checked).
  Checked,
};

/// The gate's verification unless PipelineOptions says otherwise: PASSCHECK_VERIFY
/// ("incremental", "full" or "checked"), Incremental when unset. Throws PassConfigError
/// naming the variable for another value.
Verification default_verification();

struct PipelineOptions {
  /// Called with (pass, graph text) before and after each pass (graph dumps).
  std::function<void(const std::string& when, const std::string& pass, const ir::Graph&)> dump;
  /// Check each pass's changed flag against the graph hash (on by default).
  bool check_changed_claim = true;
  /// Run the verifier after every pass (on by default).
  bool verify_each = true;
  /// How: what the pass touched, the whole graph, or both compared.
  Verification verification = default_verification();
  /// The incremental verifier (null: check::verify_changes). Tests plug a known-buggy one
  /// in here to show the Checked gate catches it.
  std::function<std::vector<VerifierIssue>(const ir::Graph&, const ChangeSet&)> verify_changes;
  /// Prove with Z3 the claims over indices (sym::Claim::indices: facts about every
  /// element, e.g. fuse-chained-allgathers' view identity) each pass adds to the graph; a
  /// refuted one fails the pipeline naming the claim's subject and the counterexample (on
  /// by default; an unknown verdict is left to the pass, which decided whether to rely
  /// on it). Plain claims are guards on the symbols that concretize checks at the hints.
  bool prove_new_claims = true;
  /// The graph's hash carried between runs (run(ir::Graph&) only; null: not carried). On
  /// entry, when set, the hash of the graph as it is (the first pass's gate then skips
  /// hashing it); on a normal return, the hash as the last gate left it (unset when the
  /// gate did not hash). A caller that changes the graph between runs must reset it.
  std::optional<uint64_t>* graph_hash = nullptr;
};

class Pipeline {
 public:
  Pipeline(std::vector<PassInvocation> passes, const PassRegistry& registry = PassRegistry::global());
  static Pipeline parse(const std::string& text, const PassRegistry& registry = PassRegistry::global());
  /// Runs every pass on `graph`; throws PassFailure on the first broken invariant, and
  /// PassConfigError when the pipeline holds a module pass (a partitioner needs run(Module&)).
  std::vector<PassRecord> run(ir::Graph& graph, const PipelineOptions& options = {}) const;
  /// Runs every pass on `module`: a graph pass on each part in turn (one record per part,
  /// labelled "pass@part" when the module has several parts), a module pass on the whole;
  /// the module verifier (verify_module) runs after every pass.
  std::vector<PassRecord> run(ir::Module& module, const PipelineOptions& options = {}) const;
  /// True when a pass of the pipeline is a module pass (a partitioner).
  bool has_module_pass() const;
  const std::vector<PassInvocation>& passes() const { return passes_; }
  std::string str() const;

 private:
  std::vector<PassInvocation> passes_;
  const PassRegistry* registry_;  // a pointer, so Pipelines can be assigned
};

}  // namespace passcheck::check
