// What a changed file affects, read from the build itself rather than a hand-kept table:
// Ninja's dependency log (which objects read which sources and headers) and its graph
// (which executables link which objects), CTest's test list (which command each test
// runs, and for GoogleTest tests the source file that defines it), the imports of the
// repository's Python files, and the paths the tests name (documents, scripts, corpora,
// data directories). docs/ci-gate.md describes the rules.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace passcheck::gate {

/// One CTest test as the build registered it.
struct BuildTest {
  std::string name;
  std::vector<std::string> command;  ///< argv as CTest runs it
  std::vector<std::string> labels;
  std::string source;                ///< GoogleTest: the source file defining it (repo-relative), else ""
  double cost = 0;                   ///< seconds per run in the build's CTest record (0: never run)
};

/// How closely a test follows a changed file (the order the gate runs them in).
enum class Tier {
  Names = 1,      ///< the test's source is the file or includes it (or its header), its command names it or runs a script importing it
  Reads = 2,      ///< the test's source reads the file through other headers, or spells its path
  Links = 3,      ///< the test runs an executable that links code reading the file
};

/// A test one changed file selects, and why.
struct SelectedTest {
  std::string name;
  Tier tier = Tier::Links;
  std::string why;
};

/// What the changed files select.
struct Selection {
  std::map<std::string, SelectedTest> tests;         ///< by name; the closest tier of any file
  std::set<std::string> families;                    ///< pass families whose code reads a changed file
  std::vector<std::string> reasons;                  ///< per changed file, what it selects and why
  std::vector<std::string> unaffecting;              ///< changed files that affect no target and no test
};

/// The build's dependency graph and tests: a configured and built Ninja build of the
/// repository. Paths are repository-relative throughout.
class BuildGraph {
 public:
  /// Reads `build_dir`. Throws std::invalid_argument when it is no Ninja build
  /// (build.ninja and CMakeCache.txt), or ninja or ctest cannot be run there.
  static BuildGraph read(const std::string& build_dir);

  const std::string& build_dir() const { return build_dir_; }
  const std::string& source_dir() const { return source_dir_; }
  const std::vector<BuildTest>& tests() const { return tests_; }

  /// What `changed` (files relative to `repo`, a checkout laid out like the build's
  /// source tree) select. `pass_sources` maps each pass family to its directory
  /// ("passes/cleanup/"). A file under `repo` is read from `repo`, so a scratch work tree
  /// with an edit is analysed as edited.
  Selection select(const std::vector<std::string>& changed, const std::string& repo,
                   const std::map<std::string, std::string>& family_dirs) const;

  /// Objects whose compilation read `file` (build-relative object paths).
  std::set<std::string> objects_reading(const std::string& file) const;

 private:
  void read_dependencies();
  void read_tests();
  std::set<std::string> linked_inputs(const std::string& target) const;
  std::set<std::string> executables_linking(const std::set<std::string>& objects) const;
  std::string relative(const std::string& path) const;

  std::string build_dir_, source_dir_;
  std::map<std::string, std::set<std::string>> object_reads_;   ///< object -> files it read
  std::map<std::string, std::set<std::string>> file_readers_;   ///< file -> objects reading it
  /// object -> the sources it compiles: one, or a unity batch's (the build compiles a few
  /// sources of one directory as one translation unit)
  std::map<std::string, std::set<std::string>> object_sources_;
  mutable std::map<std::string, std::set<std::string>> executable_objects_;  ///< cache of linked_inputs
  std::vector<BuildTest> tests_;
};

/// The Python files of `repo` that import `file` (a .py path relative to `repo`),
/// directly or through others, `file` included; and the dotted module names of them all.
struct PythonImporters {
  std::set<std::string> files;
  std::set<std::string> modules;
};
PythonImporters python_importers(const std::string& repo, const std::string& file);

/// The CTest cost record of `build_dir` (Testing/Temporary/CTestCostData.txt): test ->
/// seconds per run; empty when the build's tests never ran.
std::map<std::string, double> ctest_costs(const std::string& build_dir);

}  // namespace passcheck::gate
