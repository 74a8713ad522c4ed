// ir::Module: the text form round-trips and refuses malformed module text with its line
// and column; the module verifier checks links and module inputs; the module executor
// runs a hand-partitioned training step bit for bit like its joint graph, reports the
// bytes the forward hands to the backward, and a pipeline runs graph passes on each part.
#include "framework/check/pipeline.h"
#include "framework/check/verifier.h"
#include "workflows/graph_files/graph_tools.h"
#include "framework/exec/inputs.h"
#include "framework/exec/module_executor.h"
#include "framework/ir/module.h"
#include "framework/ir/text.h"

#include <gtest/gtest.h>

#include <string>

namespace passcheck {
namespace {

const char* const kJoint = R"(graph(
    param %w : f32[4, 4],
    arg %x : f32[2, 4]):
  %mm : f32[2, 4] = aten::mm(%x, %w)
  %relu : f32[2, 4] = aten::relu(%mm)
  %sum : f32[] = aten::sum(%relu, None)  #{phase=loss}
  %ones_like : f32[] = aten::ones_like(%sum, None, None, None, None, torch.contiguous_format)  #{phase=backward}
  %expand : f32[2, 4]{0, 0} = aten::expand(%ones_like, [2, 4], False)  #{phase=backward}
  %tb : f32[2, 4] = aten::threshold_backward(%expand, %relu, 0)  #{phase=backward}
  %t : f32[4, 2]{1, 4} = aten::t(%x)  #{phase=backward}
  %mm_1 : f32[4, 4] = aten::mm(%t, %tb)  #{phase=backward}
  return (%sum, %mm_1)
)";

// The joint above split by hand: the forward saves the loss (its shape seeds the
// backward) and the relu output.
const char* const kSplit = R"(module inputs (%w, %x) returns (forward.0, backward.0)
part forward
graph(
    param %w : f32[4, 4],
    arg %x : f32[2, 4]):
  %mm : f32[2, 4] = aten::mm(%x, %w)
  %relu : f32[2, 4] = aten::relu(%mm)
  %sum : f32[] = aten::sum(%relu, None)  #{phase=loss}
  return (%sum, %relu)
part backward from (forward.0, forward.1, -)
graph(
    arg %sum : f32[],
    arg %relu : f32[2, 4],
    arg %x : f32[2, 4]):
  %ones_like : f32[] = aten::ones_like(%sum, None, None, None, None, torch.contiguous_format)  #{phase=backward}
  %expand : f32[2, 4]{0, 0} = aten::expand(%ones_like, [2, 4], False)  #{phase=backward}
  %tb : f32[2, 4] = aten::threshold_backward(%expand, %relu, 0)  #{phase=backward}
  %t : f32[4, 2]{1, 4} = aten::t(%x)  #{phase=backward}
  %mm_1 : f32[4, 4] = aten::mm(%t, %tb)  #{phase=backward}
  return (%mm_1)
)";

std::string parse_error(const std::string& text) {
  try {
    ir::parse_module(text, "m.txt");
  } catch (const ir::ParseError& e) {
    return e.what();
  }
  return "no error";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(IrModule, TextRoundTripsAndKeepsTheLinks) {
  ir::Module m = ir::parse_module(kSplit, "m.txt");
  ASSERT_EQ(m.parts.size(), 2u);
  EXPECT_EQ(m.parts[1].name, "backward");
  ASSERT_EQ(m.parts[1].input_sources.size(), 3u);
  EXPECT_EQ(*m.parts[1].input_sources[1], (ir::PartOutput{0, 1}));
  EXPECT_FALSE(m.parts[1].input_sources[2].has_value());
  EXPECT_EQ(m.outputs[1], (ir::PartOutput{1, 0}));
  EXPECT_EQ(m.print(), kSplit);
  EXPECT_EQ(m.clone().print(), kSplit);
  EXPECT_TRUE(ir::is_module_text(kSplit));
  EXPECT_FALSE(ir::is_module_text(kJoint));
  EXPECT_TRUE(check::verify_module(m).empty());
  EXPECT_EQ(m.linked_outputs(0), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(m.linked_bytes(0), 4 + 2 * 4 * 4);
}

TEST(IrModule, MalformedModuleTextNamesLineAndColumn) {
  EXPECT_EQ(parse_error(replaced(kSplit, "from (forward.0,", "from (forwrd.0,")),
            "m.txt:10:21: 'forwrd.0' names part 'forwrd', which is not defined");
  EXPECT_EQ(parse_error(replaced(kSplit, "forward.1, -)", "forward.2, -)")),
            "m.txt:10:32: 'forward.2': part 'forward' has 2 outputs");
  EXPECT_EQ(parse_error(replaced(kSplit, "forward.1, -)", "forward.1)")),
            "m.txt:10:42: 'from' lists 2 sources but part 'backward' has 3 inputs");
  EXPECT_EQ(parse_error(replaced(kSplit, "returns (forward.0, backward.0)", "returns (forward.0, backward.1)")),
            "m.txt:1:44: 'backward.1': part 'backward' has 1 outputs");
  EXPECT_EQ(parse_error(replaced(kSplit, "module inputs (%w, %x)", "module inputs (%w)")),
            "m.txt:5:9: input %x of part 'forward' has no 'from' source and is not a module input");
  EXPECT_EQ(parse_error(replaced(kSplit, "part backward", "part forward")), "m.txt:10:6: part 'forward' is defined twice");
  // A parse error inside a part names the module file's line.
  EXPECT_EQ(parse_error(replaced(kSplit, "aten::relu(%mm)", "aten::relu(%nope)")).substr(0, 8), "m.txt:7:");
  EXPECT_NE(parse_error("module inputs () returns ()\n").find("no 'part NAME' line"), std::string::npos);
}

TEST(IrModule, TheVerifierRefusesALinkOfAnotherType) {
  ir::Module m = ir::parse_module(replaced(kSplit, "    arg %relu : f32[2, 4],", "    arg %relu : f32[4, 2],"), "m.txt");
  std::vector<check::VerifierIssue> issues = check::verify_module(m);
  ASSERT_FALSE(issues.empty());
  EXPECT_NE(issues[0].message.find("part 'backward' input %relu"), std::string::npos) << issues[0].message;
  EXPECT_NE(issues[0].message.find("which differs"), std::string::npos) << issues[0].message;
}

TEST(IrModule, TheSplitStepRunsBitForBitLikeTheJointGraph) {
  std::unique_ptr<ir::Graph> joint = ir::parse_graph(kJoint, "joint");
  ir::Module m = ir::parse_module(kSplit, "m.txt");
  graph_files::EquivReport report = graph_files::compare_graph_with_module(*joint, m);
  EXPECT_TRUE(report.equal()) << report.format();

  exec::ExecutorOptions options;
  options.track_live_bytes = true;
  exec::ModuleExecutor executor(m, options);
  std::vector<c10::IValue> outputs = executor.run(exec::make_inputs(*joint, {}));
  ASSERT_EQ(outputs.size(), 2u);
  const exec::ModuleRunStats& stats = executor.last_stats();
  EXPECT_EQ(stats.linked_bytes, 4 + 32);
  ASSERT_EQ(stats.parts.size(), 2u);
  // The backward's peak is its own plus the weight it does not take as an input.
  EXPECT_GE(stats.peak_live_bytes, stats.parts[1].peak_live_bytes + 64);
}

TEST(IrModule, AWrongSplitIsNotEquivalent) {
  std::unique_ptr<ir::Graph> joint = ir::parse_graph(kJoint, "joint");
  // The backward thresholds at 1 where the joint thresholds at 0: it type-checks and runs.
  ir::Module m = ir::parse_module(
      replaced(kSplit, "aten::threshold_backward(%expand, %relu, 0)", "aten::threshold_backward(%expand, %relu, 1)"),
      "m.txt");
  EXPECT_TRUE(check::verify_module(m).empty());
  EXPECT_FALSE(graph_files::compare_graph_with_module(*joint, m).equal());
}

TEST(IrModule, APipelineRunsGraphPassesOnEveryPart) {
  ir::Module m = ir::parse_module(replaced(kSplit, "  %t : f32[4, 2]{1, 4} = aten::t(%x)  #{phase=backward}\n",
                                           "  %t : f32[4, 2]{1, 4} = aten::t(%x)  #{phase=backward}\n"
                                           "  %dead : f32[4, 2] = aten::neg(%t)  #{phase=backward}\n"),
                                  "m.txt");
  std::vector<check::PassRecord> records = check::Pipeline::parse("dce").run(m);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].pass, "dce@forward");
  EXPECT_FALSE(records[0].changed);
  EXPECT_EQ(records[1].pass, "dce@backward");
  EXPECT_TRUE(records[1].changed);
  EXPECT_EQ(m.print(), kSplit);
}

}  // namespace
}  // namespace passcheck
