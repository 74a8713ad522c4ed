// Text pass cases as a library (docs/text-pass-tests.md): the `*.graph` case files of
// suites/passes_text parsed into cases (graph text in, pipeline, graph text out) and one
// case run with every check the text driver makes (gate, exact printed output, the
// changed claim, idempotence, stats, bit-for-bit equivalence of input and output). The
// GoogleTest driver (suites/passes_text) and `passcheck gate` both run cases here, so a
// case means the same thing to both.
#pragma once

#include "framework/check/pass.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace passcheck::graph_files {

/// One case of a case file.
struct TextCase {
  std::string file;      ///< path of the case file
  std::string name;      ///< "# CASE: name"
  int line = 0;          ///< line of "# CASE:"
  std::string pipeline;  ///< "# RUN: pipeline"
  std::vector<std::string> intent;
  std::string input;     ///< padded with blank lines so parse errors name file lines
  bool expect_unchanged = false;
  std::string expect_failure;  ///< "# EXPECT: fails <text>": the gate must fail with it
  std::string expected;        ///< exact printed text
  int expected_line = 0;       ///< first line of the expected text
  int expected_end = 0;        ///< one past its last line
  std::map<std::string, int64_t> stats;  ///< "# STATS: k=v ..."
  std::string no_run_reason;             ///< "# NORUN: reason": no equiv check
  /// "file.graph:12: case 'name' (pipeline)", the prefix of every message about it.
  std::string where() const;
};

/// Splits one case file into cases; a malformed case is reported through `errors`.
std::vector<TextCase> parse_case_file(const std::string& path, std::vector<std::string>& errors);

/// The `*.graph` files of `directory`, sorted.
std::vector<std::string> case_files(const std::string& directory);

/// The registry names of the passes a case's pipeline runs (named pipelines expanded);
/// empty when the pipeline does not parse against `registry`.
std::vector<std::string> case_passes(const TextCase& c, const check::PassRegistry& registry);

/// What running one case found.
struct TextCaseOutcome {
  std::vector<std::string> problems;  ///< empty when the case held
  bool output_differs = false;        ///< the printed output is not the expected text
  std::string actual;                 ///< what the pipeline printed
};

/// Runs case `c` against `registry`. `replace` renames passes of the case's pipeline
/// before it runs (a mutant in place of its real pass: the case must then fail).
TextCaseOutcome run_text_case(const TextCase& c, const check::PassRegistry& registry,
                              const std::map<std::string, std::string>& replace = {});

/// A line diff (longest common subsequence) in unified style, long common runs elided.
std::string unified_diff(const std::string& expected, const std::string& actual);

/// Replaces the expected section of case `name` in `file` with `actual`.
void update_expected(const std::string& file, const std::string& name, const std::string& actual);

}  // namespace passcheck::graph_files
