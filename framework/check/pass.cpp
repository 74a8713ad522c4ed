// Pass declarations, option validation and the pass registry (pass.h). Everything a
// user can get wrong about a pass invocation (unknown pass, unknown option, a value
// outside the allowed ones, a non-integer where an integer is expected) is reported
// here with the pass and option named, so pipelines and the CLI share one set of
// messages.
#include "framework/check/pass.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace passcheck::check {

const char* to_string(NumericsEffect effect) {
  switch (effect) {
    case NumericsEffect::Preserves: return "preserves";
    case NumericsEffect::MemoryOnly: return "memory-only";
    case NumericsEffect::Changes: return "changes";
  }
  return "?";
}

namespace {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

// Sorted, so the message reads the same whether it comes from the declaration or
// from a PassOptions (which keeps its values by name).
std::vector<std::string> option_names(const PassInfo& info) {
  std::vector<std::string> names;
  for (const PassOptionInfo& o : info.options) names.push_back(o.name);
  std::sort(names.begin(), names.end());
  return names;
}

// kebab-case: lowercase words of letters and digits joined by single dashes, starting
// with a letter, so names read the same in pipelines, the CLI and the docs.
bool is_kebab_case(const std::string& name) {
  if (name.empty() || !std::islower(static_cast<unsigned char>(name[0]))) return false;
  char prev = 0;
  for (char c : name) {
    bool word_char = std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c));
    if (!word_char && c != '-') return false;
    if (c == '-' && prev == '-') return false;
    prev = c;
  }
  return name.back() != '-';
}

// Option names must be writable in pipeline text without quoting.
bool is_option_name(const std::string& name) {
  if (name.empty() || !std::islower(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_' ||
          c == '-'))
      return false;
  return true;
}

}  // namespace

// ---- PassOptions --------------------------------------------------------------------

PassOptions::PassOptions(const PassInfo& info, const std::map<std::string, std::string>& given) : pass_(info.name) {
  for (const PassOptionInfo& o : info.options) defaults_[o.name] = o.default_value;
  values_ = defaults_;
  for (const auto& [name, value] : given) {
    const std::string& wanted = name;  // clang 14 does not capture structured bindings
    auto it = std::find_if(info.options.begin(), info.options.end(),
                           [&](const PassOptionInfo& o) { return o.name == wanted; });
    if (it == info.options.end()) {
      std::vector<std::string> names = option_names(info);
      throw PassConfigError("pass '" + info.name + "' has no option '" + name +
                            "' (options: " + (names.empty() ? std::string("none") : join(names, ", ")) + ")");
    }
    if (!it->choices.empty() && std::find(it->choices.begin(), it->choices.end(), value) == it->choices.end())
      throw PassConfigError("pass '" + info.name + "' option '" + name + "' must be one of " +
                            join(it->choices, ", ") + "; got '" + value + "'");
    if (it->check) {
      try {
        it->check(value);
      } catch (const std::invalid_argument& e) {
        throw PassConfigError("pass '" + info.name + "' option '" + name + "': " + e.what());
      }
    }
    values_[name] = value;
  }
}

namespace option_checks {

std::function<void(const std::string&)> integer_in(int64_t min, int64_t max) {
  return [min, max](const std::string& text) {
    errno = 0;
    char* end = nullptr;
    long long v = text.empty() ? 0 : std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno == ERANGE || std::isspace(static_cast<unsigned char>(text[0])) || v < min ||
        v > max)
      throw std::invalid_argument("expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                                  "]; got '" + text + "'");
  };
}

}  // namespace option_checks

const std::string& PassOptions::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    std::vector<std::string> names;
    for (const auto& [k, v] : values_) names.push_back(k);
    throw PassConfigError("pass '" + pass_ + "' has no option '" + name +
                          "' (options: " + (names.empty() ? std::string("none") : join(names, ", ")) + ")");
  }
  return it->second;
}

int64_t PassOptions::get_int(const std::string& name) const {
  const std::string& text = get(name);
  errno = 0;
  char* end = nullptr;
  long long v = text.empty() ? 0 : std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || std::isspace(static_cast<unsigned char>(text[0])))
    throw PassConfigError("pass '" + pass_ + "' option '" + name + "' must be an integer; got '" + text + "'");
  return static_cast<int64_t>(v);
}

bool PassOptions::get_bool(const std::string& name) const {
  const std::string& text = get(name);
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  throw PassConfigError("pass '" + pass_ + "' option '" + name + "' must be true or false; got '" + text + "'");
}

std::vector<std::string> PassOptions::get_list(const std::string& name) const {
  const std::string& text = get(name);
  std::vector<std::string> out;
  if (text.empty()) return out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    // Items are trimmed so "mm, bmm" and "mm,bmm" mean the same.
    size_t b = item.find_first_not_of(" \t");
    size_t e = item.find_last_not_of(" \t");
    out.push_back(b == std::string::npos ? std::string() : item.substr(b, e - b + 1));
  }
  if (text.back() == ',') out.push_back("");
  return out;
}

std::string PassOptions::str() const {
  std::string out;
  for (const auto& [name, value] : values_) {
    auto d = defaults_.find(name);
    if (d != defaults_.end() && d->second == value) continue;
    // Values that the pipeline parser would split are quoted, so str() parses back.
    bool plain = !value.empty() && value.find_first_of(",{}=\" \t[]") == std::string::npos;
    std::string shown = value;
    if (!plain) {
      shown = "\"";
      for (char c : value) {
        if (c == '"' || c == '\\') shown += '\\';
        shown += c;
      }
      shown += "\"";
    }
    out += (out.empty() ? "" : ",") + name + "=" + shown;
  }
  return out.empty() ? out : "{" + out + "}";
}

namespace {
bool declares(const std::vector<DecisionInfo>& decisions, const std::string& name) {
  return std::any_of(decisions.begin(), decisions.end(), [&](const DecisionInfo& d) { return d.name == name; });
}
}  // namespace

bool PassInfo::declares_rule(const std::string& rule) const { return declares(rules, rule); }
bool PassInfo::declares_guard(const std::string& guard) const { return declares(guards, guard); }
bool PassInfo::declares_bug(const std::string& bug) const { return declares(injectable_bugs, bug); }

void check_faults_declared(const PassInfo& info, const InjectedFaults& faults) {
  auto require = [&](const std::set<std::string>& names, bool (PassInfo::*declared)(const std::string&) const,
                     const char* kind) {
    for (const std::string& name : names)
      if (!(info.*declared)(name))
        throw PassConfigError("pass '" + info.name + "' declares no " + kind + " '" + name + "'");
  };
  require(faults.disabled_guards, &PassInfo::declares_guard, "guard");
  require(faults.widened_rules, &PassInfo::declares_rule, "rule");
  require(faults.injected_bugs, &PassInfo::declares_bug, "injectable bug");
}

// ---- PassRegistry -------------------------------------------------------------------

void PassRegistry::add(PassInfo info, PassFunction run) {
  if (!run) throw PassConfigError("pass '" + info.name + "' has no function to run");
  add_checked(std::move(info), RegisteredPass{{}, std::move(run), nullptr});
}

void PassRegistry::add_module_pass(PassInfo info, ModulePassFunction run) {
  if (!run) throw PassConfigError("pass '" + info.name + "' has no function to run");
  add_checked(std::move(info), RegisteredPass{{}, nullptr, std::move(run)});
}

void PassRegistry::add_checked(PassInfo info, RegisteredPass pass) {
  if (!is_kebab_case(info.name))
    throw PassConfigError("pass name '" + info.name +
                          "' is not kebab-case (lowercase letters and digits, words joined by single '-')");
  if (passes_.count(info.name)) throw PassConfigError("pass '" + info.name + "' is already registered");
  std::vector<std::string> seen;
  for (const PassOptionInfo& o : info.options) {
    if (!is_option_name(o.name))
      throw PassConfigError("pass '" + info.name + "' option name '" + o.name +
                            "' must be lowercase letters, digits, '_' or '-'");
    if (std::find(seen.begin(), seen.end(), o.name) != seen.end())
      throw PassConfigError("pass '" + info.name + "' declares option '" + o.name + "' twice");
    seen.push_back(o.name);
    if (!o.choices.empty() && std::find(o.choices.begin(), o.choices.end(), o.default_value) == o.choices.end())
      throw PassConfigError("pass '" + info.name + "' option '" + o.name + "' default '" + o.default_value +
                            "' is not one of its choices (" + join(o.choices, ", ") + ")");
  }
  for (const auto* kind : {&info.rules, &info.guards}) {
    const char* what = kind == &info.rules ? "rule" : "guard";
    std::vector<std::string> decisions;
    for (const DecisionInfo& d : *kind) {
      // A composite pass names its parts' decisions "<part>/<decision>".
      bool ok = !d.name.empty();
      for (size_t begin = 0; ok && begin <= d.name.size();) {
        size_t slash = d.name.find('/', begin);
        size_t end = slash == std::string::npos ? d.name.size() : slash;
        ok = is_kebab_case(d.name.substr(begin, end - begin));
        begin = end + 1;
      }
      if (!ok)
        throw PassConfigError("pass '" + info.name + "' " + what + " name '" + d.name +
                              "' is not kebab-case (or kebab-case words joined by '/')");
      if (std::find(decisions.begin(), decisions.end(), d.name) != decisions.end())
        throw PassConfigError("pass '" + info.name + "' declares " + what + " '" + d.name + "' twice");
      decisions.push_back(d.name);
    }
  }
  std::string name = info.name;
  pass.info = std::move(info);
  passes_.emplace(name, std::move(pass));
}

const RegisteredPass& PassRegistry::get(const std::string& name) const {
  auto it = passes_.find(name);
  if (it == passes_.end()) {
    std::vector<std::string> names;
    for (const auto& [k, v] : passes_) names.push_back(k);
    throw PassConfigError("unknown pass '" + name +
                          "' (known passes: " + (names.empty() ? std::string("none") : join(names, ", ")) + ")");
  }
  return it->second;
}

std::vector<const RegisteredPass*> PassRegistry::list() const {
  std::vector<const RegisteredPass*> out;
  for (const auto& [name, pass] : passes_) out.push_back(&pass);  // std::map: sorted by name
  return out;
}

std::string PassRegistry::catalogue() const {
  std::string out;
  for (const RegisteredPass* p : list()) {
    const PassInfo& info = p->info;
    if (!out.empty()) out += "\n";
    out += info.name + "\n";
    out += "  " + info.summary + "\n";
    out += std::string("  numerics: ") + to_string(info.numerics) + "\n";
    out += std::string("  idempotent: ") + (info.idempotent ? "yes" : "no") + "\n";
    if (info.options.empty()) {
      out += "  options: none\n";
    } else {
      out += "  options:\n";
      for (const PassOptionInfo& o : info.options) {
        out += "    " + o.name + " (default: " + (o.default_value.empty() ? "\"\"" : o.default_value);
        if (!o.choices.empty()) out += "; choices: " + join(o.choices, ", ");
        out += ")";
        if (!o.description.empty()) out += ": " + o.description;
        out += "\n";
      }
    }
    for (const auto* kind : {&info.rules, &info.guards}) {
      std::string title = kind == &info.rules ? "rules" : "guards";
      if (kind->empty()) continue;
      out += "  " + title + ":\n";
      for (const DecisionInfo& d : *kind) out += "    " + d.name + (d.description.empty() ? "" : ": " + d.description) + "\n";
    }
  }
  return out;
}

}  // namespace passcheck::check
