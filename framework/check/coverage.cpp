// Decision coverage (see coverage.h).
#include "framework/check/coverage.h"

#include "framework/ir/graph.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace passcheck::check {

namespace {

int64_t count_of(const std::map<std::string, std::map<std::string, int64_t>>& counts, const std::string& pass,
                 const std::string& name) {
  auto p = counts.find(pass);
  if (p == counts.end()) return 0;
  auto n = p->second.find(name);
  return n == p->second.end() ? 0 : n->second;
}

void add_counts(std::map<std::string, int64_t>& into, const std::map<std::string, int64_t>& from) {
  for (const auto& [name, n] : from) into[name] += n;
}

void add_changes(std::map<std::string, ChangeCounts>& into, const std::map<std::string, ChangeCounts>& from) {
  for (const auto& [pass, c] : from) {
    ChangeCounts& to = into[pass];
    to.runs += c.runs;
    to.computation += c.computation;
    to.metadata_only += c.metadata_only;
  }
}

// The serialized names of a ChangeCounts' fields.
constexpr const char* kRan = "ran";
constexpr const char* kComputation = "computation";
constexpr const char* kMetadataOnly = "metadata-only";

}  // namespace

void Coverage::add(const std::string& pass, const PassResult& result) {
  if (!result.rules_fired.empty()) add_counts(rules_[pass], result.rules_fired);
  if (!result.guards_refused.empty()) add_counts(guards_[pass], result.guards_refused);
}

void Coverage::merge(const Coverage& other) {
  for (const auto& [pass, counts] : other.rules_) add_counts(rules_[pass], counts);
  for (const auto& [pass, counts] : other.guards_) add_counts(guards_[pass], counts);
  refusals_ += other.refusals_;
  add_changes(run_changes_, other.run_changes_);
  add_changes(case_changes_, other.case_changes_);
  tolerated_cases_ += other.tolerated_cases_;
  tolerated_max_ulp_ = std::max(tolerated_max_ulp_, other.tolerated_max_ulp_);
  add_counts(features_, other.features_);
}

void Coverage::add_tolerated(uint64_t max_ulp) {
  ++tolerated_cases_;
  tolerated_max_ulp_ = std::max(tolerated_max_ulp_, max_ulp);
}

void Coverage::add_run(const std::string& pass, bool computation_changed, bool metadata_changed) {
  ChangeCounts& c = run_changes_[pass];
  ++c.runs;
  if (computation_changed) ++c.computation;
  else if (metadata_changed) ++c.metadata_only;
}

void Coverage::merge_case(const Coverage& one_case) {
  merge(one_case);
  for (const auto& [pass, runs] : one_case.run_changes_) {
    if (runs.runs == 0) continue;
    ChangeCounts& c = case_changes_[pass];
    ++c.runs;
    if (runs.computation > 0) ++c.computation;
    else if (runs.metadata_only > 0) ++c.metadata_only;
  }
}

int64_t Coverage::rule(const std::string& pass, const std::string& rule) const { return count_of(rules_, pass, rule); }
int64_t Coverage::guard(const std::string& pass, const std::string& guard) const {
  return count_of(guards_, pass, guard);
}

std::set<std::string> Coverage::passes() const {
  std::set<std::string> out;
  for (const auto& [pass, counts] : rules_) out.insert(pass);
  for (const auto& [pass, counts] : guards_) out.insert(pass);
  return out;
}

std::vector<std::string> Coverage::unreached(const PassRegistry& registry, const std::set<std::string>& passes) const {
  std::vector<std::string> out;
  for (const std::string& pass : passes) {
    const PassInfo& info = registry.get(pass).info;
    for (const DecisionInfo& r : info.rules)
      if (rule(pass, r.name) == 0) out.push_back(pass + " rule " + r.name + ": never fired");
    for (const DecisionInfo& g : info.guards)
      if (guard(pass, g.name) == 0) out.push_back(pass + " guard " + g.name + ": never refused");
  }
  return out;
}

std::string Coverage::table(const PassRegistry& registry, const std::set<std::string>& passes) const {
  std::string out;
  char line[512];
  for (const std::string& pass : passes) {
    if (!registry.contains(pass)) continue;
    const PassInfo& info = registry.get(pass).info;
    if (info.rules.empty() && info.guards.empty()) continue;
    size_t width = 0;
    for (const auto* kind : {&info.rules, &info.guards})
      for (const DecisionInfo& d : *kind) width = std::max(width, d.name.size());
    int reached = 0, total = 0;
    std::string body;
    for (const auto* kind : {&info.rules, &info.guards}) {
      bool is_rule = kind == &info.rules;
      for (const DecisionInfo& d : *kind) {
        int64_t n = is_rule ? rule(pass, d.name) : guard(pass, d.name);
        ++total;
        reached += n > 0;
        std::snprintf(line, sizeof line, "  %-5s %-*s %10lld%s\n", is_rule ? "rule" : "guard", static_cast<int>(width),
                      d.name.c_str(), static_cast<long long>(n), n > 0 ? "" : "  NOT REACHED");
        body += line;
      }
    }
    // Counts the pass reported without declaring them (the pipeline gate rejects those,
    // but a registry used without the gate may still produce them).
    for (const auto* counts : {&rules_, &guards_}) {
      auto p = counts->find(pass);
      if (p == counts->end()) continue;
      for (const auto& [name, n] : p->second) {
        bool declared = counts == &rules_ ? info.declares_rule(name) : info.declares_guard(name);
        if (!declared) body += "  undeclared " + std::string(counts == &rules_ ? "rule " : "guard ") + name + ": " + std::to_string(n) + "\n";
      }
    }
    out += pass + " (" + std::to_string(reached) + "/" + std::to_string(total) + " decisions reached)\n" + body;
  }
  return out;
}

std::string Coverage::serialize() const {
  std::string out;
  for (const auto* counts : {&rules_, &guards_})
    for (const auto& [pass, names] : *counts)
      for (const auto& [name, n] : names)
        out += std::string(counts == &rules_ ? "rule" : "guard") + "\t" + pass + "\t" + name + "\t" + std::to_string(n) + "\n";
  for (const auto* changes : {&run_changes_, &case_changes_})
    for (const auto& [pass, c] : *changes) {
      const std::string head = std::string(changes == &run_changes_ ? "runs" : "cases") + "\t" + pass + "\t";
      out += head + kRan + "\t" + std::to_string(c.runs) + "\n";
      out += head + kComputation + "\t" + std::to_string(c.computation) + "\n";
      out += head + kMetadataOnly + "\t" + std::to_string(c.metadata_only) + "\n";
    }
  if (tolerated_cases_ > 0) {
    out += "tolerated\t-\tcases\t" + std::to_string(tolerated_cases_) + "\n";
    out += "tolerated\t-\tmax-ulp\t" + std::to_string(tolerated_max_ulp_) + "\n";
  }
  for (const auto& [feature, n] : features_) out += "feature\t-\t" + feature + "\t" + std::to_string(n) + "\n";
  return out;
}

Coverage Coverage::parse(const std::string& text) {
  Coverage c;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    std::vector<std::string> fields;
    size_t begin = 0;
    for (size_t tab; (tab = line.find('\t', begin)) != std::string::npos; begin = tab + 1)
      fields.push_back(line.substr(begin, tab - begin));
    fields.push_back(line.substr(begin));
    int64_t n = 0;
    const bool change = fields.size() == 4 && (fields[0] == "runs" || fields[0] == "cases") &&
                        (fields[2] == kRan || fields[2] == kComputation || fields[2] == kMetadataOnly);
    const bool tolerated = fields.size() == 4 && fields[0] == "tolerated" && fields[1] == "-" &&
                           (fields[2] == "cases" || fields[2] == "max-ulp");
    const bool feature = fields.size() == 4 && fields[0] == "feature" && fields[1] == "-" && !fields[2].empty();
    bool ok = fields.size() == 4 && (fields[0] == "rule" || fields[0] == "guard" || change || tolerated || feature);
    if (ok) {
      try {
        size_t used = 0;
        n = std::stoll(fields[3], &used);
        ok = used == fields[3].size() && n >= 0;
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok)
      throw std::invalid_argument("coverage line " + std::to_string(number) +
                                  ": expected 'rule|guard<TAB>pass<TAB>name<TAB>count' or "
                                  "'runs|cases<TAB>pass<TAB>ran|computation|metadata-only<TAB>count', got '" +
                                  line + "'");
    if (feature) {
      c.features_[fields[2]] += n;
      continue;
    }
    if (tolerated) {
      if (fields[2] == "cases") c.tolerated_cases_ += n;
      else c.tolerated_max_ulp_ = std::max(c.tolerated_max_ulp_, static_cast<uint64_t>(n));
      continue;
    }
    if (change) {
      ChangeCounts& counts = (fields[0] == "runs" ? c.run_changes_ : c.case_changes_)[fields[1]];
      (fields[2] == kRan ? counts.runs : fields[2] == kComputation ? counts.computation : counts.metadata_only) += n;
      continue;
    }
    (fields[0] == "rule" ? c.rules_ : c.guards_)[fields[1]][fields[2]] += n;
  }
  return c;
}

std::set<std::string> passes_with_decisions(const PassRegistry& registry) {
  std::set<std::string> out;
  for (const RegisteredPass* p : registry.list())
    if (!p->info.rules.empty() || !p->info.guards.empty()) out.insert(p->info.name);
  return out;
}

void Coverage::add_refusal(const std::string& pass, const RefusedInput& refusal) {
  add(pass, refusal.partial());
  ++refusals_;
}

namespace {

// The counting copy of `registry`: each pass adds its decisions to `**sink` (when set).
PassRegistry counting_copy(const PassRegistry& registry, std::shared_ptr<Coverage*> sink) {
  PassRegistry out;
  // Counts a pass's decisions, also those up to a refusal, around any kind of pass.
  auto counted = [sink](const std::string& name, auto run) {
    try {
      PassResult result = run();
      if (Coverage* coverage = *sink) coverage->add(name, result);
      return result;
    } catch (const RefusedInput& refusal) {
      if (Coverage* coverage = *sink) coverage->add_refusal(name, refusal);
      throw;
    }
  };
  for (const RegisteredPass* p : registry.list()) {
    std::string name = p->info.name;
    if (p->is_module_pass()) {
      ModulePassFunction run = p->run_module;
      out.add_module_pass(p->info, [name, run, counted, sink](ir::Module& module, const PassOptions& options) {
        PassResult result = counted(name, [&] { return run(module, options); });
        if (Coverage* coverage = *sink) coverage->add_run(name, result.changed, false);
        return result;
      });
      continue;
    }
    PassFunction run = p->run;
    out.add(p->info, [name, run, counted, sink](ir::Graph& graph, const PassOptions& options) {
      // Whether the run changed the computation or only metadata (a campaign's summary
      // says how many cases the pass under test changed): hashed only while counted.
      // Names do not count: a pass that only renames values (a Python pass's round trip
      // through torch.fx respells some) changed nothing a run can see.
      const bool counting = *sink != nullptr;
      const uint64_t computation_before = counting ? graph.computation_hash() : 0;
      const uint64_t metadata_before = counting ? graph.unnamed_hash() : 0;
      PassResult result = counted(name, [&] { return run(graph, options); });
      if (Coverage* coverage = *sink) {
        const bool computation = graph.computation_hash() != computation_before;
        coverage->add_run(name, computation, !computation && graph.unnamed_hash() != metadata_before);
      }
      return result;
    });
  }
  return out;
}

}  // namespace

PassRegistry counting_registry(const PassRegistry& registry, Coverage* coverage) {
  return counting_copy(registry, std::make_shared<Coverage*>(coverage));
}

CountingRegistry::CountingRegistry(const PassRegistry& registry)
    : base_(&registry), sink_(std::make_shared<Coverage*>(nullptr)), registry_(counting_copy(registry, sink_)) {}

}  // namespace passcheck::check
