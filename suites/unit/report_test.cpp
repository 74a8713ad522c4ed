// The HTML report's pieces on their own: the structural graph diff (kept, added, removed,
// rewired nodes, matched by name and operator), escaping, the SVG timeline chart, the
// per-node memory estimate it draws, and the document (sections, nothing external,
// atomic write). The rendered report in a browser is tested by suites/report.
#include "framework/check/memory_estimate.h"
#include "framework/io/files.h"
#include "framework/ir/graph.h"
#include "framework/ir/text.h"
#include "framework/report/report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace passcheck::report {
namespace {

// cse.graph's first case: the second mm/relu pair merged into the first.
constexpr const char* kBeforeCse = R"(graph(param %w : f32[4, 4], arg %x : f32[2, 4]):
  %mm : f32[2, 4] = aten::mm(%x, %w)  #{seq=0, fqn="layers.0"}
  %relu : f32[2, 4] = aten::relu(%mm)  #{fqn="layers.0"}
  %mm_1 : f32[2, 4] = aten::mm(%x, %w)  #{phase=backward, seq=0}
  %relu_1 : f32[2, 4] = aten::relu(%mm_1)  #{phase=backward}
  %add : f32[2, 4] = aten::add.Tensor(%relu, %relu_1, 1)  #{phase=backward}
  return (%add, %mm_1)
)";
constexpr const char* kAfterCse = R"(graph(param %w : f32[4, 4], arg %x : f32[2, 4]):
  %mm : f32[2, 4] = aten::mm(%x, %w)  #{seq=0, fqn="layers.0"}
  %relu : f32[2, 4] = aten::relu(%mm)  #{fqn="layers.0"}
  %add : f32[2, 4] = aten::add.Tensor(%relu, %relu, 1)  #{phase=backward}
  return (%add, %mm)
)";

const NodeChange& find(const GraphDiff& diff, const std::string& name) {
  for (const NodeChange& n : diff.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("no node %" + name + " in the diff");
}

TEST(GraphDiff, CseMergeIsTwoRemovedOneRewired) {
  auto before = ir::parse_graph(kBeforeCse), after = ir::parse_graph(kAfterCse);
  GraphDiff diff = diff_graphs(*before, *after);
  EXPECT_EQ(diff.nodes_before, 5u);
  EXPECT_EQ(diff.nodes_after, 3u);
  EXPECT_EQ(diff.count(Change::Kept), 2u);
  EXPECT_EQ(diff.count(Change::Removed), 2u);
  EXPECT_EQ(diff.count(Change::Rewired), 1u);
  EXPECT_EQ(diff.count(Change::Added), 0u);
  EXPECT_EQ(find(diff, "mm").change, Change::Kept);
  EXPECT_EQ(find(diff, "mm_1").change, Change::Removed);
  EXPECT_EQ(find(diff, "relu_1").change, Change::Removed);
  const NodeChange& add = find(diff, "add");
  EXPECT_EQ(add.change, Change::Rewired);
  EXPECT_EQ(add.operands_before, (std::vector<std::string>{"relu", "relu_1"}));
  EXPECT_EQ(add.operands_after, (std::vector<std::string>{"relu", "relu"}));
  EXPECT_EQ(diff.interface_changes, (std::vector<std::string>{"output 1: %mm_1 -> %mm"}));
  EXPECT_FALSE(diff.unchanged());
  // Regions come from the node's metadata.
  EXPECT_EQ(find(diff, "relu").region, "layers.0");
  EXPECT_EQ(add.phase, "backward");
}

TEST(GraphDiff, InsertedNodeIsAddedAndItsUserRewired) {
  auto before = ir::parse_graph(R"(graph(arg %x : f32[3]):
  %a : f32[3] = aten::relu(%x)
  %b : f32[3] = aten::neg(%a)
  return (%b)
)");
  auto after = ir::parse_graph(R"(graph(arg %x : f32[3]):
  %a : f32[3] = aten::relu(%x)
  %c : f32[3] = aten::clone(%a, None)
  %b : f32[3] = aten::neg(%c)
  return (%b)
)");
  GraphDiff diff = diff_graphs(*before, *after);
  EXPECT_EQ(find(diff, "c").change, Change::Added);
  EXPECT_EQ(find(diff, "c").operands_after, (std::vector<std::string>{"a"}));
  EXPECT_EQ(find(diff, "b").change, Change::Rewired);
  EXPECT_EQ(find(diff, "a").change, Change::Kept);
  EXPECT_EQ(diff.count(Change::Removed), 0u);
  EXPECT_TRUE(diff.interface_changes.empty());
}

TEST(GraphDiff, SameNameNewOperatorIsRemovedPlusAdded) {
  auto before = ir::parse_graph("graph(arg %x : f32[3]):\n  %a : f32[3] = aten::relu(%x)\n  return (%a)\n");
  auto after = ir::parse_graph("graph(arg %x : f32[3]):\n  %a : f32[3] = aten::neg(%x)\n  return (%a)\n");
  GraphDiff diff = diff_graphs(*before, *after);
  ASSERT_EQ(diff.nodes.size(), 2u);
  EXPECT_EQ(diff.nodes[0].change, Change::Added);
  EXPECT_EQ(diff.nodes[0].op, "aten::neg");
  EXPECT_EQ(diff.nodes[1].change, Change::Removed);
  EXPECT_EQ(diff.nodes[1].op, "aten::relu");
}

TEST(GraphDiff, NodesMatchByNameNotByPosition) {
  // dce erases the first of two relus: that one is removed, the second kept (a diff by
  // position would pair the surviving relu with the erased one).
  auto before = ir::parse_graph(R"(graph(arg %x : f32[3], arg %y : f32[3]):
  %a : f32[3] = aten::relu(%x)
  %b : f32[3] = aten::relu(%y)
  return (%b)
)");
  auto after = ir::parse_graph("graph(arg %x : f32[3], arg %y : f32[3]):\n  %b : f32[3] = aten::relu(%y)\n  return (%b)\n");
  GraphDiff diff = diff_graphs(*before, *after);
  EXPECT_EQ(find(diff, "a").change, Change::Removed);
  EXPECT_EQ(find(diff, "b").change, Change::Kept);
  EXPECT_EQ(diff.count(Change::Removed), 1u);
}

TEST(GraphDiff, SameOperandsOtherMetadataIsRetagged) {
  auto before = ir::parse_graph("graph(arg %x : f32[3]):\n  %a : f32[3] = aten::relu(%x)\n  return (%a)\n");
  auto after = ir::parse_graph("graph(arg %x : f32[3]):\n  %a : f32[3] = aten::relu(%x)  #{ac_region=0}\n  return (%a)\n");
  GraphDiff diff = diff_graphs(*before, *after);
  ASSERT_EQ(diff.nodes.size(), 1u);
  EXPECT_EQ(diff.nodes[0].change, Change::Retagged);
  EXPECT_FALSE(diff.unchanged());
}

TEST(GraphDiff, CloneIsUnchangedAndInputsAreCompared) {
  auto graph = ir::parse_graph(kBeforeCse);
  GraphDiff same = diff_graphs(*graph, *graph->clone());
  EXPECT_TRUE(same.unchanged());
  EXPECT_EQ(same.count(Change::Kept), 5u);
  auto fewer_inputs = ir::parse_graph("graph(arg %x : f32[2, 4]):\n  %r : f32[2, 4] = aten::relu(%x)\n  return (%r)\n");
  GraphDiff diff = diff_graphs(*graph, *fewer_inputs);
  EXPECT_NE(std::find(diff.interface_changes.begin(), diff.interface_changes.end(), "input only before: %w"),
            diff.interface_changes.end());
}

TEST(ReportHtml, EscapeReplacesEveryMarkupCharacter) {
  EXPECT_EQ(escape("<script>a & 'b' \"c\"</script>"),
            "&lt;script&gt;a &amp; &#39;b&#39; &quot;c&quot;&lt;/script&gt;");
  EXPECT_EQ(escape("%mm_1 aten::mm"), "%mm_1 aten::mm");
}

TEST(ReportHtml, ShortBytes) {
  EXPECT_EQ(short_bytes(812), "812 B");
  EXPECT_EQ(short_bytes(1536), "1.50 KiB");
  EXPECT_EQ(short_bytes(int64_t{3} << 20), "3.00 MiB");
}

TEST(ReportHtml, BucketMaxKeepsThePeak) {
  std::vector<int64_t> values(1000, 1);
  values[613] = 99;
  std::vector<int64_t> reduced = bucket_max(values, 10);
  ASSERT_EQ(reduced.size(), 10u);
  EXPECT_EQ(reduced[6], 99);
  EXPECT_EQ(*std::max_element(reduced.begin(), reduced.end()), 99);
  EXPECT_EQ(bucket_max({1, 2, 3}, 10), (std::vector<int64_t>{1, 2, 3}));
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ReportHtml, ChartDrawsOnePolylinePerSeriesWithThePeakOnTop) {
  ChartOptions options;
  std::string svg = svg_line_chart({{"traced <graph>", {0, 10, 40, 20}}, {"after", {0, 5}}}, options);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(occurrences(svg, "<polyline"), 2u);
  EXPECT_NE(svg.find("class=\"series-0\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"series-1\""), std::string::npos);
  // Series 0 has 4 points; its peak (40) is at x index 2 of 3, drawn at the plot's top (y 20).
  const size_t points = svg.find("points=\"") + 8;
  const std::string coords = svg.substr(points, svg.find('"', points) - points);
  EXPECT_EQ(occurrences(coords, ","), 4u);
  EXPECT_NE(coords.find(",20.0"), std::string::npos) << coords;
  EXPECT_NE(svg.find("traced &lt;graph&gt; (4 nodes, peak 40 B)"), std::string::npos);
  EXPECT_EQ(svg.find("<graph>"), std::string::npos);
  EXPECT_EQ(svg.find("http"), std::string::npos);
}

TEST(ReportHtml, DiffRendersChangedRegionsOpen) {
  auto before = ir::parse_graph(kBeforeCse), after = ir::parse_graph(kAfterCse);
  std::string html = render_diff(diff_graphs(*before, *after));
  EXPECT_NE(html.find("removed 2"), std::string::npos);
  EXPECT_NE(html.find("rewired 1"), std::string::npos);
  // layers.0 only kept nodes: closed; the top-level backward region changed: open.
  EXPECT_NE(html.find("<details class=\"region\"><summary class=\"mono\">layers.0 · forward: 2 nodes</summary>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<details class=\"region\" open><summary class=\"mono\">(top level) · backward: 3 nodes (+0 -2 ~1)"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<tr class=\"rewired\"><td>rewired</td><td class=\"mono\">%add</td>"), std::string::npos);
  EXPECT_NE(html.find("(%relu, %relu_1)"), std::string::npos);
}

TEST(ReportHtml, DocumentHasEverySectionAndNothingExternal) {
  Report report("check", "passcheck check --model '<mlp>'");
  report.set_verdict(1, "first difference at step 2: <x>");
  report.add_fact("steps", "2");
  auto before = ir::parse_graph(kBeforeCse), after = ir::parse_graph(kAfterCse);
  PassSection pass;
  pass.pass = "cse";
  pass.changed = true;
  report.add_pass_with_graphs(pass, *before, *after);
  report.add_memory_timeline(MemoryTimeline{"timeline", {{"before", {1, 2}}, {"after", {1}}}, {}});
  ClaimRow claim;
  claim.kind = "cat_extent";
  claim.verdict = "proved";
  report.add_claims({claim});
  check::TensorComparison equal_row;
  equal_row.name = "loss";
  equal_row.equal = true;
  report.add_step_table(StepTable{"step 1", {equal_row}, {}, {}});
  report.add_table(Table{"selected passes", {"pass", "why"}, {{"cse", "<changed file>"}}});
  const std::string html = report.html();
  EXPECT_NE(html.find("<tr><td>cse</td><td>&lt;changed file&gt;</td></tr>"), std::string::npos);
  for (const char* id : {"verdict", "results", "passes", "memory", "claims", "steps"})
    EXPECT_NE(html.find(std::string("<section id=\"") + id + "\">"), std::string::npos) << id;
  EXPECT_NE(html.find("FAILED (exit code 1"), std::string::npos);
  EXPECT_NE(html.find("passcheck check --model &#39;&lt;mlp&gt;&#39;"), std::string::npos);
  EXPECT_NE(html.find("first difference at step 2: &lt;x&gt;"), std::string::npos);
  EXPECT_NE(html.find("1 claims: 1 proved"), std::string::npos);
  for (const char* external : {"http://", "https://", "src=", "url(", "<script", "<link", "@import"})
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  EXPECT_EQ(html.find("<mlp>"), std::string::npos);
}

TEST(ReportHtml, WriteIsAtomicAndRefusesADirectory) {
  char dir[] = "/tmp/passcheck-report-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  Report report("equiv", "passcheck equiv a b");
  report.set_verdict(0, "verdict: EQUIVALENT");
  const std::string path = std::string(dir) + "/r.html";
  write_html(path, report);
  EXPECT_EQ(io::read_file(path, "report"), report.html());
  EXPECT_THROW(write_html(dir, report), io::FileError);
  std::remove(path.c_str());
  rmdir(dir);
}

TEST(MemoryEstimate, LiveBytesPerNodeFollowsTheGraphAndPeaks) {
  auto graph = ir::parse_graph(kBeforeCse);
  check::MemoryEstimate e = check::estimate_memory(*graph);
  ASSERT_EQ(e.live_bytes_per_node.size(), graph->num_nodes());
  EXPECT_EQ(*std::max_element(e.live_bytes_per_node.begin(), e.live_bytes_per_node.end()), e.peak_bytes);
  // %mm (32 bytes) is live after the first node; %mm and %relu after the second.
  EXPECT_EQ(e.live_bytes_per_node[0], 32);
  EXPECT_EQ(e.live_bytes_per_node[1], 64);
}

}  // namespace
}  // namespace passcheck::report
