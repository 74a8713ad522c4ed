// Pipeline text parsing and the pass runner (pipeline.h). The runner is the gate every
// pass goes through: it hashes the graph around each pass to hold the pass to its
// "changed" claim, holds it to the rules and guards it declares, runs the verifier
// after it, and turns anything a pass throws into a PassFailure naming the pass, so a
// broken pass is reported where it broke the graph rather than where a later pass or
// the executor trips over the damage.
#include "framework/check/pipeline.h"

#include <cstdlib>

#include "framework/check/verifier.h"
#include "framework/sym/prover.h"

#include <cctype>
#include <chrono>
#include <optional>

namespace passcheck::check {

const std::map<std::string, std::string>& named_pipelines() {
  static const std::map<std::string, std::string> pipelines = {
      // Upstream's default order (DCE, canonicalize, memory-policy tagging, remat),
      // with random ops replayed rather than refused.
      {"default", "dce,canonicalize,ac-regions,sac-tag,remat{rng=replay}"},
      {"cleanup", "dce,canonicalize,cse,dce"},
      // autoparallel's order on a per-rank FSDP graph (docs/distributed.md): re-gather the
      // weights in the backward, partition, fuse dp -> tp gather chains (nothing to fuse
      // on a mesh without such chains), prefetch, cap batching. Holds a partitioner: it
      // runs on a module (Pipeline::run(ir::Module&)).
      {"autoparallel",
       "force-recompute-fsdp-all-gather,eliminate-alias-round-trips,partition-min-cut,"
       "fuse-chained-allgathers{subgroup-order=\"dp,tp\",column-major-group=tp_dp},prefetch-fsdp-all-gathers,"
       "cap-compute-batch-size"},
  };
  return pipelines;
}

namespace {

// Values the parser would otherwise split are written quoted, so str() parses back.
std::string quote_if_needed(const std::string& value) {
  bool plain = !value.empty() && value.find_first_of(",{}=\" \t[]") == std::string::npos;
  if (plain) return value;
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}


// Recursive-descent parser over the pipeline text. Columns are 1-based.
class PipelineParser {
 public:
  PipelineParser(const std::string& text, const PassRegistry& registry) : text_(text), registry_(registry) {}

  std::vector<PassInvocation> parse() {
    std::vector<PassInvocation> out;
    skip_ws();
    if (at_end()) return out;  // an empty pipeline runs no pass
    while (true) {
      for (PassInvocation& inv : element()) out.push_back(std::move(inv));
      skip_ws();
      if (at_end()) break;
      if (peek() != ',') fail(pos_, "expected ',' or the end of the pipeline, got " + describe_here());
      ++pos_;
      skip_ws();
    }
    return out;
  }

 private:
  // One element of the list: a pass invocation, or a named pipeline standing for its
  // expansion (so "dce,cleanup,remat" composes), unless a pass of that name exists.
  std::vector<PassInvocation> element() {
    size_t name_pos = pos_;
    std::string name = word();
    pos_ = name_pos;
    auto named = named_pipelines().find(name);
    if (named != named_pipelines().end() && !registry_.contains(name)) {
      pos_ += name.size();
      skip_ws();
      if (!at_end() && peek() == '{') fail(pos_, "named pipeline '" + name + "' takes no options");
      try {
        return PipelineParser(named->second, registry_).parse();
      } catch (const PassConfigError& e) {
        fail(name_pos, "in named pipeline '" + name + "': " + e.what());
      }
    }
    return {invocation()};
  }

  PassInvocation invocation() {
    PassInvocation inv;
    size_t name_pos = pos_;
    inv.name = word();
    if (inv.name.empty()) fail(name_pos, "expected a pass name, got " + describe_here());
    const RegisteredPass* pass = nullptr;
    try {
      pass = &registry_.get(inv.name);
    } catch (const PassConfigError& e) {
      fail(name_pos, e.what());
    }
    skip_ws();
    size_t options_pos = pos_;
    if (!at_end() && peek() == '{') {
      ++pos_;
      skip_ws();
      if (!at_end() && peek() == '}') {
        ++pos_;
      } else {
        while (true) {
          skip_ws();
          size_t key_pos = pos_;
          std::string key = word();
          if (key.empty()) fail(key_pos, "expected an option name, got " + describe_here());
          skip_ws();
          if (at_end() || peek() != '=') fail(pos_, "expected '=' after option '" + key + "', got " + describe_here());
          ++pos_;
          skip_ws();
          std::string value = option_value();
          if (inv.options.count(key)) fail(key_pos, "option '" + key + "' given twice");
          inv.options[key] = value;
          skip_ws();
          if (at_end()) fail(pos_, "expected ',' or '}' in the options of '" + inv.name + "', got the end");
          if (peek() == '}') {
            ++pos_;
            break;
          }
          if (peek() != ',') fail(pos_, "expected ',' or '}' in the options of '" + inv.name + "', got " + describe_here());
          ++pos_;
        }
      }
    }
    try {
      PassOptions validated(pass->info, inv.options);
    } catch (const PassConfigError& e) {
      fail(options_pos, e.what());
    }
    return inv;
  }

  // A bare word, a "quoted string" (\" and \\ escapes) or a [bracketed list] whose
  // inner text (commas included) is the value: list options need commas.
  std::string option_value() {
    size_t start = pos_;
    if (at_end()) fail(pos_, "expected an option value, got the end");
    if (peek() == '"') {
      ++pos_;
      std::string out;
      while (!at_end() && peek() != '"') {
        if (peek() == '\\' && pos_ + 1 < text_.size()) ++pos_;
        out += text_[pos_++];
      }
      if (at_end()) fail(start, "unterminated quoted value");
      ++pos_;
      return out;
    }
    if (peek() == '[') {
      ++pos_;
      size_t inner = pos_;
      while (!at_end() && peek() != ']') {
        if (peek() == '[' || peek() == '{' || peek() == '}') fail(pos_, "unexpected " + describe_here() + " in a list value");
        ++pos_;
      }
      if (at_end()) fail(start, "unterminated list value (missing ']')");
      std::string out = text_.substr(inner, pos_ - inner);
      ++pos_;
      return out;
    }
    std::string out;
    while (!at_end() && !std::isspace(static_cast<unsigned char>(peek())) && peek() != ',' && peek() != '}' &&
           peek() != '{' && peek() != '=' && peek() != '"' && peek() != '[' && peek() != ']')
      out += text_[pos_++];
    if (out.empty()) fail(start, "expected an option value, got " + describe_here());
    return out;
  }

  std::string word() {
    size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  void skip_ws() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(peek()))) ++pos_;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  std::string describe_here() const {
    if (at_end()) return "the end";
    return std::string("'") + peek() + "'";
  }
  [[noreturn]] void fail(size_t pos, const std::string& message) const {
    throw PassConfigError("pipeline \"" + text_ + "\": column " + std::to_string(pos + 1) + ": " + message);
  }

  const std::string& text_;
  const PassRegistry& registry_;
  size_t pos_ = 0;
};

std::string label(const PassInvocation& inv, const PassOptions& options) { return inv.name + options.str(); }

}  // namespace

Verification default_verification() {
  const char* text = std::getenv("PASSCHECK_VERIFY");
  if (text == nullptr || *text == '\0') return Verification::Incremental;
  const std::string value = text;
  if (value == "incremental") return Verification::Incremental;
  if (value == "full") return Verification::Full;
  if (value == "checked") return Verification::Checked;
  throw PassConfigError("PASSCHECK_VERIFY=" + value + ": expected incremental, full or checked");
}

std::string PassInvocation::str() const {
  std::string out = name;
  if (options.empty()) return out;
  out += "{";
  bool first = true;
  for (const auto& [k, v] : options) {
    out += (first ? "" : ",") + k + "=" + quote_if_needed(v);
    first = false;
  }
  return out + "}";
}


std::vector<PassInvocation> parse_pipeline(const std::string& text, const PassRegistry& registry) {
  return PipelineParser(text, registry).parse();
}

Pipeline::Pipeline(std::vector<PassInvocation> passes, const PassRegistry& registry)
    : passes_(std::move(passes)), registry_(&registry) {
  // Validate up front: a typo in the last pass should not cost a run of the first ones.
  for (const PassInvocation& inv : passes_) PassOptions(registry_->get(inv.name).info, inv.options);
}

Pipeline Pipeline::parse(const std::string& text, const PassRegistry& registry) {
  return Pipeline(parse_pipeline(text, registry), registry);
}

std::string Pipeline::str() const {
  std::string out;
  for (size_t i = 0; i < passes_.size(); ++i) out += (i ? "," : "") + passes_[i].str();
  return out;
}

namespace {

std::string first_issue(const std::vector<VerifierIssue>& issues) {
  std::string message = issues.front().message;
  if (issues.size() > 1) message += " (+" + std::to_string(issues.size() - 1) + " more)";
  return message;
}

// True when the change log proves that the pass left the graph's text as it was. Every
// mutation through the IR API is logged (framework/ir/graph.h), in the log of the graph it
// touched: the top graph's, cleared before the pass, or a subgraph's, which is never
// cleared here (a graph with subgraphs is hashed whenever a body's log holds anything).
// The incremental verifier trusts the same log for what it re-checks.
bool log_shows_no_change(const ir::Graph& graph) {
  auto clean = [](const ir::Graph& g) { return g.touched_nodes().empty() && g.graph_changes() == 0; };
  if (!clean(graph)) return false;
  for (const auto& entry : graph.root()->subgraphs())
    if (!clean(*entry.second)) return false;
  return true;
}
// A module's parts keep their own logs; the module gate always hashes.
bool log_shows_no_change(const ir::Module&) { return false; }

// The gate's checks after one pass, on any subject (a graph or a module): the changed
// claim against the hash, the verifier, the declared decisions. Fills `record`.
// Sets *hash_after to the subject's hash when it computes one.
template <typename Subject, typename Verify>
void gate(const RegisteredPass& pass, PassRecord& record, PassResult result, const Subject& subject,
          uint64_t hash_before, const PipelineOptions& options, Verify verify, std::optional<uint64_t>* hash_after = nullptr) {
  if (options.check_changed_claim) {
    // A pass that touched nothing (an idempotence rerun, a pass with nothing to do) needs
    // no hash: its text is the one hashed before it.
    const uint64_t after = log_shows_no_change(subject) ? hash_before : subject.hash();
    if (hash_after) *hash_after = after;
    bool differs = after != hash_before;
    if (!result.changed && differs) throw PassFailure(record.pass, "reported no change but the graph changed");
    if (result.changed && !differs) throw PassFailure(record.pass, "reported a change but the graph is identical");
  }
  if (options.verify_each) {
    std::vector<VerifierIssue> issues = verify(subject);
    if (!issues.empty()) throw PassFailure(record.pass, first_issue(issues));
  }
  // A decision the pass does not declare can be neither covered nor mutated: it is
  // as much a broken promise as a false changed flag.
  for (const auto& [rule, n] : result.rules_fired)
    if (!pass.info.declares_rule(rule)) throw PassFailure(record.pass, "reported undeclared rule '" + rule + "'");
  for (const auto& [guard, n] : result.guards_refused)
    if (!pass.info.declares_guard(guard)) throw PassFailure(record.pass, "reported undeclared guard '" + guard + "'");
  record.changed = result.changed;
  record.notes = std::move(result.notes);
  record.stats = std::move(result.stats);
  record.rules_fired = std::move(result.rules_fired);
  record.guards_refused = std::move(result.guards_refused);
}

// The graph gate's verification, as PipelineOptions::verification asks.
std::vector<VerifierIssue> verify_after_pass(const ir::Graph& graph, const PipelineOptions& options,
                                             const std::string& pass) {
  if (options.verification == Verification::Full) return verify_graph(graph);
  const ChangeSet changes = changes_of(graph);
  std::vector<VerifierIssue> issues =
      options.verify_changes ? options.verify_changes(graph, changes) : verify_changes(graph, changes);
  if (options.verification == Verification::Checked && issues.empty()) {
    // The incremental verifier's promise: it finds what the full one finds.
    std::vector<VerifierIssue> full = verify_graph(graph);
    if (!full.empty())
      throw PassFailure(pass, "the incremental verifier missed what the full verifier found (" +
                                  std::to_string(changes.nodes.size()) + " nodes touched): " + first_issue(full));
  }
  return issues;
}

template <typename Run>
PassResult run_guarded(const std::string& label, Run run) {
  try {
    return run();
  } catch (const std::exception& e) {
    throw PassFailure(label, std::string("the pass threw: ") + e.what());
  } catch (...) {
    throw PassFailure(label, "the pass threw a non-standard exception");
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One graph pass on one graph, through the gate. `known_hash`, when given and set, is the
// graph's hash as the previous pass's gate computed it (hashing prints the whole graph:
// once per pass is enough); the gate's hash of the result is left there for the next.
PassRecord run_graph_pass(const RegisteredPass& pass, const PassOptions& pass_options, const std::string& label,
                          ir::Graph& graph, const PipelineOptions& options,
                          std::optional<uint64_t>* known_hash = nullptr) {
  if (!pass.info.handles_subgraphs && graph.has_subgraphs()) {
    // A pass that only walks the top graph would leave the bodies unrewritten (or
    // rewrite a call it does not understand): refuse, never half-apply.
    throw PassConfigError("pass '" + pass.info.name + "' does not handle nested subgraphs, and the graph calls subgraph '" +
                          graph.root()->subgraphs().begin()->first +
                          "'; run inline-subgraphs first (docs/nested-subgraphs.md lists the passes that handle them)");
  }
  PassRecord record;
  record.pass = label;
  record.nodes_before = graph.num_nodes();
  if (options.dump) options.dump("before", record.pass, graph);
  uint64_t hash_before = 0;
  if (options.check_changed_claim) hash_before = known_hash && *known_hash ? **known_hash : graph.hash();
  if (known_hash) known_hash->reset();
  const size_t claims_before = graph.claims().size();
  graph.clear_changes();  // the log the incremental verifier reads is this pass's
  auto start = std::chrono::steady_clock::now();
  PassResult result = run_guarded(record.pass, [&] { return pass.run(graph, pass_options); });
  record.seconds = seconds_since(start);
  // Dumped before the checks, so the graph that fails them can be inspected.
  if (options.dump) options.dump("after", record.pass, graph);
  if (options.prove_new_claims && graph.claims().size() > claims_before) {
    // A claim over indices is a fact the pass relied on for every element (a view
    // chain is the identity); one that is false anywhere means the rewrite is unsound.
    // Plain claims are guards on the symbols, checked at the hints by concretize: chunk
    // records them even where some admissible value breaks them (concretize refuses).
    std::vector<sym::Claim> added;
    for (size_t k = claims_before; k < graph.claims().size(); ++k)
      if (!graph.claims()[k].indices.empty()) added.push_back(graph.claims()[k]);
    const sym::ProofReport report = sym::prove_all(added, graph.symbols());
    for (const sym::ClaimResult& r : report.results)
      if (r.verdict == sym::Verdict::Refuted)
        throw PassFailure(record.pass, "recorded a claim that does not hold: " + r.format());
  }
  gate(pass, record, std::move(result), graph, hash_before, options,
       [&](const ir::Graph& g) { return verify_after_pass(g, options, record.pass); }, known_hash);
  record.nodes_after = graph.num_nodes();
  return record;
}

}  // namespace

bool Pipeline::has_module_pass() const {
  for (const PassInvocation& inv : passes_)
    if (registry_->get(inv.name).is_module_pass()) return true;
  return false;
}

std::vector<PassRecord> Pipeline::run(ir::Graph& graph, const PipelineOptions& options) const {
  for (const PassInvocation& inv : passes_)
    if (registry_->get(inv.name).is_module_pass())
      throw PassConfigError("pass '" + inv.name +
                            "' splits the graph into a module of several graphs; run the pipeline on a module");
  std::vector<PassRecord> records;
  std::optional<uint64_t> hash;  // of the graph as the last gate left it
  if (options.graph_hash) {
    hash = *options.graph_hash;
    options.graph_hash->reset();  // unknown until this run returns normally
  }
  for (const PassInvocation& inv : passes_) {
    const RegisteredPass& pass = registry_->get(inv.name);
    PassOptions pass_options(pass.info, inv.options);
    records.push_back(run_graph_pass(pass, pass_options, label(inv, pass_options), graph, options, &hash));
  }
  if (options.graph_hash) *options.graph_hash = hash;
  return records;
}

std::vector<PassRecord> Pipeline::run(ir::Module& module, const PipelineOptions& options) const {
  std::vector<PassRecord> records;
  for (const PassInvocation& inv : passes_) {
    const RegisteredPass& pass = registry_->get(inv.name);
    PassOptions pass_options(pass.info, inv.options);
    const std::string name = label(inv, pass_options);
    if (!pass.is_module_pass()) {
      for (ir::ModulePart& part : module.parts) {
        std::string part_label = module.parts.size() > 1 ? name + "@" + part.name : name;
        records.push_back(run_graph_pass(pass, pass_options, part_label, *part.graph, options));
      }
      if (options.verify_each) {
        // A graph pass may change a part's inputs or outputs under its links (each part's
        // graph was verified after the pass ran on it).
        std::vector<VerifierIssue> issues = verify_module_links(module);
        if (!issues.empty()) throw PassFailure(name, issues.front().message);
      }
      continue;
    }
    for (const ir::ModulePart& part : module.parts)
      if (!pass.info.handles_subgraphs && part.graph->has_subgraphs())
        throw PassConfigError("pass '" + pass.info.name + "' does not handle nested subgraphs, and part '" + part.name +
                              "' calls subgraph '" + part.graph->subgraphs().begin()->first +
                              "'; run inline-subgraphs first (docs/nested-subgraphs.md)");
    PassRecord record;
    record.pass = name;
    record.nodes_before = module.num_nodes();
    uint64_t hash_before = options.check_changed_claim ? module.hash() : 0;
    auto start = std::chrono::steady_clock::now();
    PassResult result = run_guarded(name, [&] { return pass.run_module(module, pass_options); });
    record.seconds = seconds_since(start);
    if (options.dump)
      for (const ir::ModulePart& part : module.parts) options.dump("after", name + "@" + part.name, *part.graph);
    gate(pass, record, std::move(result), module, hash_before, options, [](const ir::Module& m) { return verify_module(m); });
    record.nodes_after = module.num_nodes();
    records.push_back(std::move(record));
  }
  return records;
}

bool pipeline_refuses(const ir::Graph& graph, const std::string& pipeline, const PassRegistry& registry) {
  std::unique_ptr<ir::Graph> g = graph.clone();
  for (const PassInvocation& p : parse_pipeline(pipeline, registry)) {
    const RegisteredPass& pass = registry.get(p.name);
    try {
      pass.run(*g, PassOptions(pass.info, p.options));
    } catch (const RefusedInput&) {
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }
  return false;
}

}  // namespace passcheck::check
