// Repro files and the minimizer: the format round-trips, malformed files are rejected
// with the line at fault, replay reruns the recorded checks, and the minimizer shrinks a
// mutant's failure on a traced model to a small graph that still fails the same way.
#include "framework/check/minimize.h"
#include "framework/check/repro.h"
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/ir/text.h"
#include "oracles/training_driver.h"
#include "suites/mutants/mutants.h"
#include "suites/support/test_support.h"

#include <gtest/gtest.h>

#include <set>

namespace passcheck {
namespace {

using mutants::registry_with_mutants;

std::string traced(const std::string& model, models::SubjectOptions options = {}) {
  auto subject = models::make_subject(model, options);
  return oracles::trace_subject(*subject, subject->batch(0), false).graph().print();
}

check::Repro sample_repro() {
  check::Repro r;
  r.status = "failed";
  r.pipeline = "ac-regions,sac-tag{policy=default},mutant-remat-ignores-prefer-recompute{rng=replay}";
  r.registries = {"mutants"};
  r.seed = 42;
  r.int_high = 3;
  r.case_description = "debug model two_matmul";
  r.property = "remat-properties";
  r.messages = {"remat property: backward node `x` reads forward value %mm", "second message"};
  r.original = traced("two_matmul");
  return r;
}

const std::string kBadSeed =
    "#! passcheck-repro 1\n#! version: 0.1.0\n#! pipeline: dce\n#! seed: twelve\n# original\n";

TEST(ReproFile, RoundTripsEveryField) {
  check::Repro r = sample_repro();
  r.minimized = r.original;
  std::string text = check::format_repro(r, "case.repro");
  EXPECT_NE(text.find("#! replay: passcheck repro case.repro"), std::string::npos) << text;
  check::Repro back = check::parse_repro(text, "case.repro");
  EXPECT_EQ(back.status, r.status);
  EXPECT_EQ(back.pipeline, r.pipeline);
  EXPECT_EQ(back.registries, r.registries);
  EXPECT_EQ(back.seed, r.seed);
  EXPECT_EQ(back.int_high, r.int_high);
  EXPECT_EQ(back.case_description, r.case_description);
  EXPECT_EQ(back.property, r.property);
  EXPECT_EQ(back.messages, r.messages);
  EXPECT_EQ(back.original, r.original);
  EXPECT_EQ(back.minimized, r.minimized);
  EXPECT_EQ(check::format_repro(back, "case.repro"), text);
}

TEST(ReproFile, WriteThenReadFromDisk) {
  std::string path = testing::make_temp_dir() + "/r.repro";
  check::write_repro(path, sample_repro());
  check::Repro back = check::read_repro(path);
  EXPECT_EQ(back.original, sample_repro().original);
  EXPECT_TRUE(back.minimized.empty());
}

void expect_error(const std::string& text, int line, const std::string& needle) {
  try {
    check::parse_repro(text, "bad.repro");
    ADD_FAILURE() << "accepted:\n" << text;
  } catch (const check::ReproError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("bad.repro:" + std::to_string(line) + ":", 0), 0u) << e.what();
  }
}

TEST(ReproFile, MalformedFilesNameTheLine) {
  expect_error("graph(arg %x : f32[2]):\n  return (%x)\n", 1, "not a passcheck repro file");
  expect_error(kBadSeed, 4, "seed must be an integer");
  expect_error("#! passcheck-repro 1\n#! pipeline: dce\n#! colour: blue\n", 3, "unknown key 'colour'");
  expect_error("#! passcheck-repro 1\n#! pipeline: dce\n#! seed: 1\n", 3, "missing the '# original' graph section");
  expect_error("#! passcheck-repro 1\n#! seed: 1\n# original\ngraph(arg %x : f32[2]):\n  return (%x)\n", 5,
               "missing '#! pipeline");
  expect_error("#! passcheck-repro 1\n#! status: weird\n", 2, "status must be");
  // A graph error is reported at its line in the file, not in the section.
  expect_error("#! passcheck-repro 1\n#! pipeline: dce\n#! seed: 1\n# original\ngraph(arg %x : f32[2]):\n"
               "  %y : f32[2] = aten::neg(%z)\n  return (%y)\n",
               6, "in the graph section");
}

TEST(ReproFile, ReadingAMissingFileIsAReproError) {
  EXPECT_THROW(check::read_repro("/nonexistent/x.repro"), check::ReproError);
}

TEST(ReproReplay, FailsWithTheMutantAndPassesWithTheRealPass) {
  check::Repro r = sample_repro();
  auto report = check::replay(r, registry_with_mutants());
  ASSERT_FALSE(report.violations.empty());
  // The generic memory-only property and the remat property both catch this mutant.
  bool remat_property = false;
  for (const auto& v : report.violations) remat_property |= check::property_of(v) == "remat-properties";
  EXPECT_TRUE(remat_property) << report.violations.front();
  r.pipeline = "ac-regions,sac-tag{policy=default},remat{rng=replay}";
  report = check::replay(r, registry_with_mutants());
  EXPECT_TRUE(report.violations.empty()) << report.violations.front();
}

TEST(Minimizer, SignatureIgnoresNamesNumbersAndQuotedNodes) {
  EXPECT_EQ(check::violation_signature("remat property: backward node `%a = aten::mm(%b)` reads"), "remat property");
  EXPECT_EQ(check::violation_signature("%mm_3 is recomputed more than once (second copy `x`)"),
            check::violation_signature("%t is recomputed more than once (second copy `y`)"));
  EXPECT_NE(check::violation_signature("failed after remat: x"), check::violation_signature("failed after dce: x"));
}

// Minimizes the mutant failure on `graph_text`; returns the result after checking it.
check::MinimizeResult shrink_mutant_failure(const std::string& graph_text) {
  const std::string pipeline = "ac-regions,sac-tag{policy=default},mutant-remat-ignores-prefer-recompute{rng=replay}";
  auto graph = ir::parse_graph(graph_text);
  auto original = check::check_case(*graph, pipeline, 0, 2, registry_with_mutants());
  EXPECT_FALSE(original.violations.empty());
  std::set<std::string> wanted;
  for (const auto& v : original.violations) wanted.insert(check::violation_signature(v));
  auto fails = [&](const ir::Graph& g) {
    try {
      exec::Executor(g).run(exec::make_inputs(g));
      for (const auto& v : check::check_case(g, pipeline, 0, 2, registry_with_mutants()).violations)
        if (wanted.count(check::violation_signature(v))) return true;
    } catch (const std::exception&) {
    }
    return false;
  };
  check::MinimizeResult m = check::minimize_graph(*graph, fails);
  EXPECT_TRUE(fails(*m.graph)) << m.graph->print();
  EXPECT_EQ(ir::parse_graph(m.graph->print())->print(), m.graph->print());
  EXPECT_EQ(m.nodes_before, graph->num_nodes());
  EXPECT_EQ(m.nodes_after, m.graph->num_nodes());
  return m;
}

TEST(Minimizer, ShrinksAMutantFailureOnTwoMatmul) {
  check::MinimizeResult m = shrink_mutant_failure(traced("two_matmul"));
  EXPECT_LT(m.nodes_after, m.nodes_before);
  EXPECT_LE(m.nodes_after, 6u) << m.graph->print();
}

TEST(Minimizer, ShrinksAMutantFailureOnLlama3) {
  check::MinimizeResult m = shrink_mutant_failure(traced("llama3", {0, c10::Device(c10::DeviceType::CPU), 1, 16}));
  EXPECT_LE(m.nodes_after * 10, m.nodes_before) << m.nodes_before << " -> " << m.nodes_after << "\n" << m.graph->print();
}

TEST(Minimizer, LeavesAGraphThatDoesNotFailUnchanged) {
  auto graph = ir::parse_graph(traced("two_matmul"));
  check::MinimizeResult m = check::minimize_graph(*graph, [](const ir::Graph&) { return false; });
  EXPECT_EQ(m.graph->print(), graph->print());
  EXPECT_EQ(m.candidates_accepted, 0);
}

}  // namespace
}  // namespace passcheck
