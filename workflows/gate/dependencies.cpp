// The build's dependency graph and tests (see dependencies.h).
#include "workflows/gate/dependencies.h"

#include "workflows/gate/processes.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace passcheck::gate {

namespace fs = std::filesystem;

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

bool is_source(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  return ext == ".cpp" || ext == ".cc" || ext == ".cxx" || ext == ".c" || ext == ".cu";
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string cmake_cache_value(const std::string& build_dir, const std::string& key) {
  std::istringstream in(read_text(fs::path(build_dir) / "CMakeCache.txt"));
  for (std::string line; std::getline(in, line);)
    if (starts_with(line, key + ":")) return line.substr(line.find('=') + 1);
  return "";
}

// The files a C++ source includes with quotes ("framework/exec/executor.h"), as written.
std::set<std::string> quoted_includes(const std::string& text) {
  static const std::regex include(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, include)) out.insert(m[1]);
  }
  return out;
}

// String literals of a source that look like repository paths ("suites/passes_text"):
// the data a test reads at run time.
std::set<std::string> path_literals(const std::string& text) {
  static const std::regex literal(R"re("([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+)/?")re");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), literal); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1]);
  return out;
}

bool skipped_directory(const std::string& name) {
  return name.empty() || name[0] == '.' || name == "__pycache__" || starts_with(name, "build") ||
         name == "node_modules";
}

// Every .py file of `repo` (relative paths), outside hidden, build and cache directories.
std::vector<std::string> python_files(const std::string& repo) {
  std::vector<std::string> out;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(repo, fs::directory_options::skip_permission_denied, error);
       it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (error) break;
    if (it->is_directory() && skipped_directory(it->path().filename().string())) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && it->path().extension() == ".py")
      out.push_back(fs::relative(it->path(), repo).generic_string());
  }
  return out;
}

// The dotted module a .py file is imported as: its name under the outermost directory
// chain holding __init__.py ("python/passcheck_fx/exporter.py" -> passcheck_fx.exporter).
std::string module_of(const std::string& repo, const std::string& file) {
  fs::path p(file);
  std::vector<std::string> parts;
  if (p.filename() != "__init__.py") parts.push_back(p.stem().string());
  for (fs::path dir = p.parent_path(); !dir.empty() && fs::exists(fs::path(repo) / dir / "__init__.py");
       dir = dir.parent_path())
    parts.insert(parts.begin(), dir.filename().string());
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : ".") + part;
  return out;
}

// The modules a Python source imports, as written (relative ones resolved against
// `package`, the importing file's package): "import a.b", "from a.b import c" (a.b and
// a.b.c, as c may be a submodule), "from . import c".
std::set<std::string> imported_modules(const std::string& text, const std::string& package) {
  static const std::regex plain(R"(^\s*import\s+([\w.]+(?:\s*,\s*[\w.]+)*))");
  static const std::regex from(R"(^\s*from\s+(\.*)([\w.]*)\s+import\s+\(?\s*([\w.,\s]+))");
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, from)) {
      std::string base = m[2];
      const size_t dots = m[1].length();
      if (dots > 0) {
        std::string pkg = package;
        for (size_t i = 1; i < dots && !pkg.empty(); ++i) pkg = pkg.substr(0, pkg.rfind('.') == std::string::npos ? 0 : pkg.rfind('.'));
        base = pkg + (pkg.empty() || base.empty() ? "" : ".") + base;
      }
      if (!base.empty()) out.insert(base);
      std::istringstream names(m[3].str());
      for (std::string name; std::getline(names, name, ',');) {
        name.erase(0, name.find_first_not_of(" \t("));
        name = name.substr(0, name.find_first_of(" \t)"));
        if (!name.empty()) out.insert(base.empty() ? name : base + "." + name);
      }
    } else if (std::regex_search(line, m, plain)) {
      std::istringstream names(m[1].str());
      for (std::string name; std::getline(names, name, ',');) {
        name.erase(0, name.find_first_not_of(" \t"));
        name = name.substr(0, name.find_first_of(" \t"));
        if (!name.empty()) out.insert(name);
      }
    }
  }
  return out;
}

}  // namespace

PythonImporters python_importers(const std::string& repo, const std::string& file) {
  const std::vector<std::string> files = python_files(repo);
  // module name -> file, for every file (a package's __init__ under the package's name).
  std::map<std::string, std::string> by_module;
  for (const std::string& f : files) by_module[module_of(repo, f)] = f;
  // Reverse edges: file -> the files importing it (importing a.b.c runs a's and a.b's
  // __init__ as well).
  std::map<std::string, std::set<std::string>> importers;
  for (const std::string& f : files) {
    const std::string module = module_of(repo, f);
    const std::string package =
        fs::path(f).filename() == "__init__.py" ? module : module.substr(0, module.rfind('.') == std::string::npos ? 0 : module.rfind('.'));
    for (const std::string& imported : imported_modules(read_text(fs::path(repo) / f), package)) {
      for (size_t end = imported.find('.');; end = imported.find('.', end + 1)) {
        const auto hit = by_module.find(imported.substr(0, end));
        if (hit != by_module.end() && hit->second != f) importers[hit->second].insert(f);
        if (end == std::string::npos) break;
      }
    }
  }
  PythonImporters out;
  std::vector<std::string> work{file};
  while (!work.empty()) {
    const std::string f = work.back();
    work.pop_back();
    if (!out.files.insert(f).second) continue;
    out.modules.insert(module_of(repo, f));
    for (const std::string& g : importers[f]) work.push_back(g);
  }
  return out;
}

std::map<std::string, double> ctest_costs(const std::string& build_dir) {
  std::map<std::string, double> out;
  std::istringstream in(read_text(fs::path(build_dir) / "Testing" / "Temporary" / "CTestCostData.txt"));
  for (std::string line; std::getline(in, line);) {
    if (starts_with(line, "---")) break;  // the failed-tests section follows
    const size_t cost_at = line.rfind(' ');
    const size_t runs_at = cost_at == std::string::npos ? std::string::npos : line.rfind(' ', cost_at - 1);
    if (runs_at == std::string::npos) continue;
    try {
      out[line.substr(0, runs_at)] = std::stod(line.substr(cost_at + 1));
    } catch (const std::exception&) {
    }
  }
  return out;
}

BuildGraph BuildGraph::read(const std::string& build_dir) {
  if (!fs::is_regular_file(fs::path(build_dir) / "build.ninja") || !fs::is_regular_file(fs::path(build_dir) / "CMakeCache.txt"))
    throw std::invalid_argument("--build-dir " + build_dir +
                                ": not a CMake/Ninja build (no build.ninja and CMakeCache.txt); build it first (ci/build.sh)");
  BuildGraph g;
  g.build_dir_ = fs::canonical(build_dir).string();
  const std::string home = cmake_cache_value(build_dir, "CMAKE_HOME_DIRECTORY");
  if (home.empty() || !fs::is_directory(home))
    throw std::invalid_argument("--build-dir " + build_dir + ": its CMakeCache.txt names no source directory");
  g.source_dir_ = fs::canonical(home).string();
  g.read_dependencies();
  g.read_tests();
  return g;
}

std::string BuildGraph::relative(const std::string& path) const {
  fs::path p(path);
  if (p.is_relative()) p = fs::path(build_dir_) / p;
  const std::string normal = p.lexically_normal().string();
  if (!starts_with(normal, source_dir_ + "/")) return "";
  const std::string rel = normal.substr(source_dir_.size() + 1);
  if (skipped_directory(rel.substr(0, rel.find('/')))) return "";
  if (starts_with(normal, build_dir_ + "/")) return "";
  return rel;
}

void BuildGraph::read_dependencies() {
  const CapturedOutput deps = run_captured({"ninja", "-C", build_dir_, "-t", "deps"});
  if (deps.exit_code != 0)
    throw std::invalid_argument("--build-dir " + build_dir_ + ": `ninja -t deps` failed: " + deps.output.substr(0, 400));
  std::istringstream in(deps.output);
  std::string object;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line[0] != ' ') {
      object = line.substr(0, line.find(": #deps"));
      continue;
    }
    const std::string file = relative(line.substr(line.find_first_not_of(' ')));
    if (file.empty() || object.empty()) continue;
    object_reads_[object].insert(file);
    file_readers_[file].insert(object);
    // The sources read are the ones compiled: no source of the tree includes another, so
    // a unity batch's object reads exactly its batch.
    if (is_source(file)) object_sources_[object].insert(file);
  }
}

void BuildGraph::read_tests() {
  const CapturedOutput list = run_captured({"ctest", "--test-dir", build_dir_, "--show-only=json-v1"});
  if (list.exit_code != 0)
    throw std::invalid_argument("--build-dir " + build_dir_ + ": `ctest --show-only=json-v1` failed: " + list.output.substr(0, 400));
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(list.output.substr(list.output.find('{')));
  } catch (const std::exception& e) {
    throw std::invalid_argument("--build-dir " + build_dir_ + ": ctest's test list is not JSON: " + e.what());
  }
  const std::map<std::string, double> costs = ctest_costs(build_dir_);
  std::map<std::string, std::map<std::string, std::string>> gtest_files;  // executable -> Suite.Name -> file
  for (const auto& t : json.value("tests", nlohmann::json::array())) {
    BuildTest test;
    test.name = t.value("name", "");
    for (const auto& a : t.value("command", nlohmann::json::array())) test.command.push_back(a.get<std::string>());
    for (const auto& p : t.value("properties", nlohmann::json::array()))
      if (p.value("name", "") == "LABELS")
        for (const auto& l : p["value"]) test.labels.push_back(l.get<std::string>());
    if (costs.count(test.name)) test.cost = costs.at(test.name);
    if (test.name.empty() || test.command.empty()) continue;
    for (const std::string& a : test.command)
      if (starts_with(a, "--gtest_filter=") && fs::is_regular_file(test.command[0])) {
        const std::string exe = test.command[0];
        if (!gtest_files.count(exe)) {
          auto& files = gtest_files[exe];
          const fs::path listing = fs::temp_directory_path() / ("passcheck-gate-list-" + std::to_string(getpid()) + ".json");
          if (run_captured({exe, "--gtest_list_tests", "--gtest_output=json:" + listing.string()}).exit_code == 0) {
            try {
              const nlohmann::json tests = nlohmann::json::parse(read_text(listing));
              for (const auto& suite : tests.value("testsuites", nlohmann::json::array()))
                for (const auto& c : suite.value("testsuite", nlohmann::json::array()))
                  files[suite.value("name", "") + "." + c.value("name", "")] = c.value("file", "");
            } catch (const std::exception&) {
              // A test binary without JSON listings: its tests select by executable only.
            }
          }
          std::error_code ignored;
          fs::remove(listing, ignored);
        }
        const std::string filter = a.substr(std::string("--gtest_filter=").size());
        const auto& files = gtest_files[exe];
        if (files.count(filter)) test.source = files.at(filter);
      }
    tests_.push_back(std::move(test));
  }
}

std::set<std::string> BuildGraph::objects_reading(const std::string& file) const {
  auto it = file_readers_.find(file);
  return it == file_readers_.end() ? std::set<std::string>{} : it->second;
}

// What `target` is made of: its explicit and implicit inputs, and theirs, through the
// libraries it links; not its order-only inputs (a test that merely needs the passcheck
// binary built first does not link it). One `ninja -t query` per level of libraries.
std::set<std::string> BuildGraph::linked_inputs(const std::string& target) const {
  std::set<std::string> inputs;
  std::vector<std::string> level{target};
  while (!level.empty()) {
    std::vector<std::string> argv{"ninja", "-C", build_dir_, "-t", "query"};
    argv.insert(argv.end(), level.begin(), level.end());
    std::istringstream in(run_captured(argv).output);
    level.clear();
    bool in_inputs = false;
    for (std::string line; std::getline(in, line);) {
      if (starts_with(line, "  input:")) in_inputs = true;
      else if (starts_with(line, "  outputs:") || (!line.empty() && line[0] != ' ')) in_inputs = false;
      else if (in_inputs && starts_with(line, "    ")) {
        std::string input = line.substr(4);
        if (starts_with(input, "|| ")) continue;
        if (starts_with(input, "| ")) input = input.substr(2);
        if (!inputs.insert(input).second) continue;
        const std::string ext = fs::path(input).extension().string();
        if ((ext == ".a" || ext == ".so") && !fs::path(input).is_absolute()) level.push_back(input);
      }
    }
  }
  return inputs;
}

std::set<std::string> BuildGraph::executables_linking(const std::set<std::string>& objects) const {
  std::set<std::string> out;
  std::set<std::string> executables;
  for (const BuildTest& t : tests_)
    for (const std::string& a : t.command)
      if (starts_with(a, build_dir_ + "/") && fs::is_regular_file(a)) executables.insert(a.substr(build_dir_.size() + 1));
  if (fs::is_regular_file(fs::path(build_dir_) / "bin" / "passcheck")) executables.insert("bin/passcheck");
  for (const std::string& exe : executables) {
    if (!executable_objects_.count(exe)) executable_objects_[exe] = linked_inputs(exe);
    const std::set<std::string>& inputs = executable_objects_.at(exe);
    if (std::any_of(objects.begin(), objects.end(), [&](const std::string& o) { return inputs.count(o) > 0; }))
      out.insert(exe);
  }
  return out;
}

Selection BuildGraph::select(const std::vector<std::string>& changed, const std::string& repo,
                             const std::map<std::string, std::string>& family_dirs) const {
  Selection s;
  // What each test names: repository paths in its command, the build executables it runs.
  struct TestFacts {
    std::set<std::string> paths;        ///< repo-relative paths in the command
    std::set<std::string> executables;  ///< build-relative
    std::set<std::string> includes;     ///< GoogleTest: the quoted includes of its source
    std::set<std::string> literals;     ///< GoogleTest: the path literals of its source
    std::string object;                 ///< GoogleTest: its source's object
  };
  std::map<std::string, std::string> object_of_source;
  for (const auto& [object, sources] : object_sources_)
    for (const std::string& source : sources) object_of_source[source] = object;
  struct SourceFacts {
    std::set<std::string> includes, literals;
    bool runs_cli = false;
  };
  std::map<std::string, SourceFacts> source_facts;
  std::vector<TestFacts> facts(tests_.size());
  const std::string cli = fs::is_regular_file(fs::path(build_dir_) / "bin" / "passcheck") ? "bin/passcheck" : "";
  for (size_t i = 0; i < tests_.size(); ++i) {
    const BuildTest& t = tests_[i];
    for (const std::string& a : t.command) {
      if (starts_with(a, build_dir_ + "/")) facts[i].executables.insert(a.substr(build_dir_.size() + 1));
      else if (const std::string rel = relative(a); !rel.empty()) facts[i].paths.insert(rel);
    }
    if (t.source.empty()) continue;
    if (!source_facts.count(t.source)) {
      fs::path file = fs::path(repo) / t.source;
      if (!fs::exists(file)) file = fs::path(source_dir_) / t.source;
      const std::string text = read_text(file);
      // A suite that runs the CLI finds it through the test support's compiled-in path,
      // not its command line.
      source_facts[t.source] = {quoted_includes(text), path_literals(text),
                                text.find("passcheck_binary()") != std::string::npos};
    }
    const SourceFacts& source = source_facts.at(t.source);
    if (source.runs_cli && !cli.empty()) facts[i].executables.insert(cli);
    facts[i].includes = source.includes;
    facts[i].literals = source.literals;
    if (object_of_source.count(t.source)) facts[i].object = object_of_source.at(t.source);
  }

  for (const std::string& file : changed) {
    // The tests this file selects, each at its closest tier.
    std::map<size_t, SelectedTest> local;
    auto select_test = [&](size_t i, Tier tier, const std::string& why) {
      auto [it, added] = local.try_emplace(i, SelectedTest{tests_[i].name, tier, why});
      if (!added && tier < it->second.tier) it->second = {tests_[i].name, tier, why};
    };
    std::set<std::string> families;
    std::vector<std::string> notes;
    // Tests that name the file, or a directory holding it, on their command line (names),
    // or as a path their source spells (reads: a data file or directory it opens, or one
    // it only mentions).
    for (size_t i = 0; i < tests_.size(); ++i) {
      for (const std::string& p : facts[i].paths)
        if (file == p || starts_with(file, p + "/")) select_test(i, Tier::Names, "its command names " + p);
      for (const std::string& l : facts[i].literals)
        if (file == l || starts_with(file, l + "/")) select_test(i, Tier::Reads, tests_[i].source + " names " + l);
    }
    // The C++ files the change stands for: the file; a source's own header (its callers
    // see the change through it); for a Python module, the C++ code that starts it by name.
    std::set<std::string> interface{file};
    const fs::path path(file);
    if (is_source(file))
      for (const char* ext : {".h", ".hpp"}) {
        const std::string header = (path.parent_path() / path.stem()).generic_string() + ext;
        if (file_readers_.count(header)) interface.insert(header);
      }
    if (path.extension() == ".py" && fs::exists(fs::path(repo) / file)) {
      const PythonImporters importers = python_importers(repo, file);
      for (size_t i = 0; i < tests_.size(); ++i)
        for (const std::string& p : facts[i].paths)
          if (importers.files.count(p) && p != file) select_test(i, Tier::Names, "it runs " + p + ", which imports " + file);
      std::vector<std::pair<std::string, std::regex>> named;
      for (const std::string& module : importers.modules)
        if (!module.empty())
          named.emplace_back(module, std::regex("\"" + std::regex_replace(module, std::regex(R"(\.)"), R"(\.)") +
                                                R"((\.[A-Za-z_]\w*)*")"));
      for (const auto& [source_file, object] : object_of_source) {
        const std::string text = read_text(fs::path(source_dir_) / source_file);
        for (const auto& [module, pattern] : named)
          if (std::regex_search(text, pattern)) {
            interface.insert(source_file);
            notes.push_back(source_file + " starts Python module " + module);
          }
      }
    }
    std::set<std::string> objects;
    for (const std::string& f : interface)
      for (const std::string& o : objects_reading(f)) objects.insert(o);
    if (!objects.empty()) {
      for (size_t i = 0; i < tests_.size(); ++i) {
        const BuildTest& t = tests_[i];
        if (t.source.empty()) continue;
        for (const std::string& f : interface)
          if (t.source == f || facts[i].includes.count(f))
            select_test(i, Tier::Names, t.source + (t.source == f ? " is " : " includes ") + f);
        if (!facts[i].object.empty() && objects.count(facts[i].object))
          select_test(i, Tier::Reads, t.source + " reads " + *interface.begin() + " through its includes");
      }
      const std::set<std::string> executables = executables_linking(objects);
      for (size_t i = 0; i < tests_.size(); ++i)
        for (const std::string& exe : facts[i].executables)
          if (executables.count(exe)) select_test(i, Tier::Links, "it runs " + exe + ", which links code reading " + file);
      for (const auto& [family, dir] : family_dirs)
        for (const std::string& o : objects)
          if (object_sources_.count(o))
            for (const std::string& source : object_sources_.at(o))
              if (starts_with(source, dir)) families.insert(family);
    }
    const std::string name = path.filename().string();
    if (name == "CMakeLists.txt" || path.extension() == ".cmake") {
      for (size_t i = 0; i < tests_.size(); ++i) select_test(i, Tier::Links, "the build's configuration changed");
      for (const auto& [family, dir] : family_dirs) families.insert(family);
    }
    int counts[3] = {0, 0, 0};
    for (const auto& [i, selected] : local) {
      ++counts[static_cast<int>(selected.tier) - 1];
      auto [it, added] = s.tests.try_emplace(selected.name, selected);
      if (!added && selected.tier < it->second.tier) it->second = selected;
    }
    for (const std::string& f : families) s.families.insert(f);
    std::ostringstream reason;
    reason << file << " -> ";
    if (counts[0] + counts[1] + counts[2] == 0 && families.empty()) {
      reason << "nothing: no target reads it and no test names it";
      s.unaffecting.push_back(file);
    } else {
      reason << counts[0] << " tests name it, " << counts[1] << " read it, " << counts[2] << " link it";
      std::string names;
      for (const std::string& f : families) names += (names.empty() ? "" : ", ") + f;
      if (!names.empty()) reason << "; pass families " << names;
    }
    for (const std::string& n : notes) reason << " (" << n << ")";
    s.reasons.push_back(reason.str());
  }
  return s;
}

}  // namespace passcheck::gate
