// Unit tests of the graph text form (framework/ir/text.h): hand-written graphs that must
// parse and print back byte for byte (a two-matmul training step, strides, devices,
// multi- and zero-output nodes, comments, every constant kind, every metadata key), and
// malformed inputs that must fail with a ParseError at the exact line and column of
// the problem. Expected graphs, CLI inputs and test fixtures are all written in this
// form, so a vague or misplaced error costs whoever writes them.
#include "framework/ir/text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace passcheck::ir {
namespace {

// Joins lines with '\n' (and a final newline) so that a test's line numbers are the
// 1-based indices of its lines.
std::string lines(const std::vector<std::string>& text_lines) {
  std::string out;
  for (const auto& l : text_lines) out += l + "\n";
  return out;
}

// A graph text with one input %x and a single node line.
std::string with_node(const std::string& node_line) {
  return lines({"graph(", "    arg %x : f32[2, 3]):", "  " + node_line, "  return ()"});
}

void expect_roundtrip(const std::string& text) {
  std::unique_ptr<Graph> g;
  ASSERT_NO_THROW(g = parse_graph(text)) << text;
  EXPECT_EQ(g->print(), text);
}

// The single argument of the single node of with_node(...).
Arg parse_single_arg(const std::string& arg_text) {
  auto g = parse_graph(with_node("() = test::f(" + arg_text + ")"));
  EXPECT_EQ(g->first_node()->num_args(), 1u);
  return g->first_node()->arg(0);
}

const std::string kTwoMatmulStep = lines({
    "graph(",
    "    param %w1 : f32[4, 8],",
    "    param %w2 : f32[8, 4],",
    "    arg %x : f32[2, 4]):",
    "  %mm : f32[2, 8] = aten::mm(%x, %w1)  #{fqn=\"fc1\", seq=0}",
    "  %gelu : f32[2, 8] = aten::gelu(%mm, \"none\")  #{fqn=\"act\", seq=1}",
    "  %mm_1 : f32[2, 4] = aten::mm(%gelu, %w2)  #{fqn=\"fc2\", seq=2}",
    "  %sum : f32[] = aten::sum(%mm_1)  #{phase=loss, seq=3}",
    "  %ones_like : f32[] = aten::ones_like(%sum, torch.float32, torch.strided, device(\"cpu\"), False, "
    "torch.preserve_format)  #{phase=backward, seq=3}",
    "  %expand : f32[2, 4]{0, 0} = aten::expand(%ones_like, [2, 4])  #{phase=backward, seq=3}",
    "  %t : f32[8, 2]{1, 8} = aten::t(%gelu)  #{phase=backward, fqn=\"fc2\", seq=2}",
    "  %mm_2 : f32[8, 4] = aten::mm(%t, %expand)  #{phase=backward, fqn=\"fc2\", seq=2}",
    "  %t_1 : f32[4, 8]{1, 4} = aten::t(%w2)  #{phase=backward, fqn=\"fc2\", seq=2}",
    "  %mm_3 : f32[2, 8] = aten::mm(%expand, %t_1)  #{phase=backward, fqn=\"fc2\", seq=2}",
    "  %gelu_backward : f32[2, 8] = aten::gelu_backward(%mm_3, %mm, \"none\")  #{phase=backward, fqn=\"act\", seq=1}",
    "  %t_2 : f32[4, 2]{1, 4} = aten::t(%x)  #{phase=backward, fqn=\"fc1\", seq=0}",
    "  %mm_4 : f32[4, 8] = aten::mm(%t_2, %gelu_backward)  #{phase=backward, fqn=\"fc1\", seq=0}",
    "  return (%sum, %mm_4, %mm_2)",
});

TEST(IrText, TwoMatmulTrainingStepRoundTrips) {
  expect_roundtrip(kTwoMatmulStep);
  auto g = parse_graph(kTwoMatmulStep, "step.graph");
  ASSERT_EQ(g->inputs().size(), 3u);
  EXPECT_EQ(g->inputs()[0]->role(), InputRole::Parameter);
  EXPECT_EQ(g->inputs()[2]->role(), InputRole::Argument);
  EXPECT_EQ(g->inputs()[0]->meta()->sizes, (std::vector<int64_t>{4, 8}));
  ASSERT_EQ(g->num_nodes(), 13u);

  std::vector<std::string> ops;
  int backward_nodes = 0;
  for (const Node* n : g->nodes()) {
    ops.push_back(n->op());
    backward_nodes += n->meta().phase == Phase::Backward;
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"aten::mm", "aten::gelu", "aten::mm", "aten::sum", "aten::ones_like",
                                           "aten::expand", "aten::t", "aten::mm", "aten::t", "aten::mm",
                                           "aten::gelu_backward", "aten::t", "aten::mm"}));
  EXPECT_EQ(backward_nodes, 9);

  Value* mm = g->find_value("mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->producer()->source_line, 5);
  EXPECT_EQ(mm->producer()->meta().module_fqn, "fc1");
  EXPECT_EQ(mm->uses().size(), 2u);  // gelu and gelu_backward
  const Node* gelu_backward = g->find_value("gelu_backward")->producer();
  EXPECT_EQ(gelu_backward->operands(), (std::vector<Value*>{g->find_value("mm_3"), mm}));
  const TensorMeta& expand = *g->find_value("expand")->meta();
  EXPECT_EQ(expand.strides, (std::vector<int64_t>{0, 0}));
  EXPECT_FALSE(expand.is_contiguous());
  EXPECT_EQ(g->outputs()[1]->name(), "mm_4");
  EXPECT_EQ(g->find_value("sum")->producer()->meta().phase, Phase::Loss);
}

TEST(IrText, StridesAndDevicesRoundTrip) {
  expect_roundtrip(lines({
      "graph(",
      "    param %w : bf16[3, 4]{1, 3}@cuda:0,",
      "    buffer %m : i64[0, 5]@meta,",
      "    arg %x : f64[]@cuda,",
      "    arg %y : b8[2, 1, 7]{1, 14, 2},",
      "    arg %n : int,",
      "    arg %u : Tensor):",
      "  %v : f16[6]{2}@cuda:1 = aten::view(%w, [-1])",
      "  return (%v, %w)",
  }));
  auto g = parse_graph(with_node("%v : bf16[2, 3]{1, 2}@cuda:0 = aten::t(%x)"));
  const TensorMeta& meta = *g->find_value("v")->meta();
  EXPECT_EQ(meta.dtype, c10::ScalarType::BFloat16);
  EXPECT_EQ(meta.strides, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(meta.device, c10::Device(c10::kCUDA, 0));
}

TEST(IrText, ContiguousStridesAndCpuDeviceAreImplied) {
  auto g = parse_graph(with_node("%v : f32[2, 0, 3]{3, 3, 1}@cpu = aten::empty([2, 0, 3])"));
  const TensorMeta& meta = *g->find_value("v")->meta();
  EXPECT_TRUE(meta.is_contiguous());
  EXPECT_NE(g->print().find("%v : f32[2, 0, 3] = aten::empty"), std::string::npos) << g->print();
}

TEST(IrText, MultiOutputAndZeroOutputNodes) {
  const std::string text = lines({
      "graph(",
      "    arg %x : f32[4, 2]):",
      "  %lo : f32[2, 2], %hi : f32[2, 2], %count : int = aten::split.Tensor(%x, 2)",
      "  () = aten::_foreach_add_([%lo, %hi], 1.0)  #{phase=optimizer}",
      "  %flag : bool, %nothing : None, %scale : float = test::three(%count)",
      "  return (%hi, %lo, %hi)",
  });
  expect_roundtrip(text);
  auto g = parse_graph(text);
  const Node* split = g->first_node();
  ASSERT_EQ(split->num_outputs(), 3u);
  EXPECT_EQ(split->output(1)->name(), "hi");
  EXPECT_EQ(split->output(1)->output_index(), 1u);
  EXPECT_EQ(split->output(2)->type(), ValueType::Int);
  EXPECT_FALSE(split->output(2)->meta().has_value());
  const Node* foreach_add = split->next();
  EXPECT_EQ(foreach_add->num_outputs(), 0u);
  EXPECT_EQ(foreach_add->meta().phase, Phase::Optimizer);
  EXPECT_EQ(g->find_value("hi")->uses().size(), 3u);  // one operand, two graph outputs
  EXPECT_EQ(g->find_value("nothing")->type(), ValueType::None);
}

TEST(IrText, EmptyGraphRoundTrips) {
  expect_roundtrip("graph():\n  return ()\n");
  auto g = parse_graph("graph():\n  return ()\n");
  EXPECT_EQ(g->num_nodes(), 0u);
  EXPECT_TRUE(g->inputs().empty());
}

TEST(IrText, CommentsAreIgnored) {
  const std::string commented = lines({
      "# a training step",
      "graph(  # inputs follow",
      "    # the only input",
      "    arg %x : f32[2]):",
      "  # a node comment with %z, \"quotes\" and #{braces}",
      "#{not metadata: a comment line}",
      "  %y : f32[2] = aten::relu(%x)  # trailing comment",
      "#{also a comment, after a node}",
      "  %z : f32[2] = aten::neg(%y)  #{seq=4}  # comment after metadata",
      "  return (%z)  # done",
      "# end",
  });
  auto g = parse_graph(commented);
  EXPECT_EQ(g->print(), lines({
                            "graph(",
                            "    arg %x : f32[2]):",
                            "  %y : f32[2] = aten::relu(%x)",
                            "  %z : f32[2] = aten::neg(%y)  #{seq=4}",
                            "  return (%z)",
                        }));
  EXPECT_EQ(g->first_node()->meta(), NodeMeta{});
  EXPECT_EQ(g->first_node()->source_line, 7);
}

TEST(IrText, EveryConstantKindRoundTrips) {
  const std::vector<std::string> constants = {
      "None", "True", "False", "0", "-7", "9223372036854775807", "-9223372036854775808",
      "1.0", "-0.0", "0.5", "1e-300", "5e-324", "-2.5e-310", "1.7976931348623157e+308", "0.1",
      "inf", "-inf", "nan", "-nan",
      "\"\"", "\"plain\"", "\"q\\\"uote\"", "\"back\\\\slash\"", "\"new\\nline\"", "\"tab\\tbed\"",
      "\"#{not meta} # not a comment\"", "\"caf\xc3\xa9\"",
      "torch.float32", "torch.bfloat16", "torch.float16", "torch.float64", "torch.int64", "torch.bool",
      "torch.uint8", "torch.complex64", "torch.strided", "torch.sparse_coo", "torch.contiguous_format",
      "torch.preserve_format", "torch.channels_last", "torch.channels_last_3d",
      "device(\"cpu\")", "device(\"cuda\")", "device(\"cuda:1\")", "device(\"meta\")",
      "%x", "[]", "[[]]", "[1, 2, 3]", "[%x, [%x, None, [\"s\", 1.5]], torch.int64]",
  };
  for (const std::string& c : constants) {
    SCOPED_TRACE(c);
    expect_roundtrip(with_node("() = test::f(" + c + ")"));
  }
  std::string all;
  for (const std::string& c : constants) all += (all.empty() ? "" : ", ") + c;
  expect_roundtrip(with_node("%out : f32[2, 3] = test::f(" + all + ")"));
}

TEST(IrText, ConstantsParseToTheRightValues) {
  EXPECT_EQ(parse_single_arg("-9223372036854775808"), Arg::integer(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(parse_single_arg("+5"), Arg::integer(5));
  const Arg negative_zero = parse_single_arg("-0.0");
  EXPECT_EQ(negative_zero.kind, Arg::Kind::Float);
  EXPECT_TRUE(std::signbit(negative_zero.f));
  EXPECT_EQ(parse_single_arg("5e-324").f, std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(parse_single_arg("-inf").f, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(parse_single_arg("nan").f));
  EXPECT_TRUE(std::signbit(parse_single_arg("-nan").f));
  EXPECT_EQ(parse_single_arg("1e3"), Arg::real(1000.0));
  EXPECT_EQ(parse_single_arg("\"a\\\"b\\\\c\\nd\\te\"").str(), "a\"b\\c\nd\te");
  EXPECT_EQ(parse_single_arg("torch.bfloat16"), Arg::dtype(c10::ScalarType::BFloat16));
  EXPECT_EQ(parse_single_arg("torch.sparse_coo"), Arg::layout(c10::Layout::Sparse));
  EXPECT_EQ(parse_single_arg("torch.channels_last"), Arg::memory_format(c10::MemoryFormat::ChannelsLast));
  EXPECT_EQ(parse_single_arg("device(\"cuda:1\")"), Arg::dev(c10::Device(c10::kCUDA, 1)));
  const Arg nested = parse_single_arg("[1, [], [True, None]]");
  ASSERT_EQ(nested.kind, Arg::Kind::List);
  ASSERT_EQ(nested.list().size(), 3u);
  EXPECT_TRUE(nested.list()[1].list().empty());
  EXPECT_EQ(nested.list()[2].list()[1], Arg::none());
}

// Values without a torch.* name print as torch.dtype(N) and friends; they must read
// back, or a graph holding one could not be saved.
TEST(IrText, EnumValuesWithoutANameRoundTrip) {
  Graph g;
  Value* x = g.add_input("x", ValueType::Tensor, std::nullopt);
  g.create("test::f", {Arg::of(x), Arg::dtype(c10::ScalarType::ComplexHalf), Arg::layout(c10::Layout::SparseCsr),
                       Arg::memory_format(c10::MemoryFormat::NumOptions)});
  const std::string text = g.print();
  EXPECT_NE(text.find("torch.dtype(" + std::to_string(int(c10::ScalarType::ComplexHalf)) + ")"), std::string::npos)
      << text;
  auto parsed = parse_graph(text);
  EXPECT_EQ(parsed->print(), text);
  EXPECT_EQ(parsed->first_node()->arg(1), Arg::dtype(c10::ScalarType::ComplexHalf));
  EXPECT_EQ(parsed->first_node()->arg(2), Arg::layout(c10::Layout::SparseCsr));
}

TEST(IrText, EveryMetadataKeyRoundTrips) {
  const std::string text = lines({
      "graph(",
      "    arg %x : f32[2]):",
      "  %a : f32[2] = aten::relu(%x)  #{fqn=\"layers.0.mlp\", seq=0, recompute=must_save, ac_region=0}",
      "  %b : f32[2] = aten::relu(%a)  #{phase=loss, recompute=prefer_save, ac_region=-1}",
      "  %c : f32[2] = aten::relu(%b)  #{phase=backward, fqn=\"a \\\"b\\\" \\\\ c\", seq=12, "
      "recompute=must_recompute, custom={\"\": \"\", \"chunk_id\": \"3\", \"k\\nl\": \"v\\tw\"}}",
      "  %d : f32[2] = aten::relu(%c)  #{phase=optimizer, recompute=prefer_recompute}",
      "  return (%d)",
  });
  expect_roundtrip(text);
  auto g = parse_graph(text);
  const NodeMeta& c = g->find_value("c")->producer()->meta();
  EXPECT_EQ(c.phase, Phase::Backward);
  EXPECT_EQ(c.module_fqn, "a \"b\" \\ c");
  EXPECT_EQ(c.seq_nr, 12);
  EXPECT_EQ(c.recompute, RecomputePolicy::MustRecompute);
  EXPECT_FALSE(c.ac_region_id.has_value());
  EXPECT_EQ(c.custom, (std::map<std::string, std::string>{{"", ""}, {"chunk_id", "3"}, {"k\nl", "v\tw"}}));
  EXPECT_EQ(g->find_value("a")->producer()->meta().ac_region_id, 0);
  EXPECT_EQ(g->find_value("b")->producer()->meta().ac_region_id, -1);

  // Defaults are not printed, and keys may come in any order.
  auto reordered = parse_graph(with_node("%y : f32[2, 3] = aten::relu(%x)  #{seq=-1, phase=forward, "
                                         "recompute=unset, custom={}, seq=2, fqn=\"\"}"));
  EXPECT_EQ(reordered->first_node()->meta().seq_nr, 2);
  EXPECT_NE(reordered->print().find("aten::relu(%x)  #{seq=2}\n"), std::string::npos) << reordered->print();
}

// ---- malformed input ----------------------------------------------------------------

void expect_parse_error(const std::string& text, int line, int column, const std::string& message_part) {
  try {
    parse_graph(text, "bad.graph");
    ADD_FAILURE() << "expected a ParseError for:\n" << text;
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.column(), column) << e.what();
    EXPECT_NE(e.message().find(message_part), std::string::npos) << "message: " << e.message();
    const std::string prefix = "bad.graph:" + std::to_string(line) + ":" + std::to_string(column) + ": ";
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

TEST(IrTextErrors, UndefinedValue) {
  expect_parse_error(with_node("%y : f32[2] = aten::relu(%z)"), 3, 28, "use of undefined value %z");
  expect_parse_error(lines({"graph(", "    arg %x : f32[2]):", "  return (%x, %nope)"}), 3, 15,
                     "use of undefined value %nope");
  // A node cannot use its own output.
  expect_parse_error(with_node("%y : f32[2] = aten::relu(%y)"), 3, 28, "undefined value %y");
}

TEST(IrTextErrors, DuplicateDefinition) {
  expect_parse_error(with_node("%x : f32[2] = aten::relu(%x)"), 3, 3, "value %x is defined twice");
  expect_parse_error(with_node("%y : int, %y : int = aten::f(%x)"), 3, 13, "value %y is defined twice");
  expect_parse_error(lines({"graph(", "    arg %x : f32[2],", "    param %x : f32[2]):", "  return ()"}), 3, 11,
                     "value %x is defined twice");
}

TEST(IrTextErrors, UnknownDtype) {
  expect_parse_error(lines({"graph(", "    arg %x : f33[2]):", "  return ()"}), 2, 14, "unknown type 'f33'");
  expect_parse_error(with_node("%y : float32[2] = aten::relu(%x)"), 3, 8, "unknown type 'float32'");
  expect_parse_error(with_node("() = aten::to(%x, torch.float33)"), 3, 21,
                     "unknown dtype, layout or memory format 'torch.float33'");
}

TEST(IrTextErrors, UnknownRole) {
  expect_parse_error(lines({"graph(", "    argument %x : f32[2]):", "  return ()"}), 2, 5,
                     "expected an input role (param, buffer or arg) but found 'argument'");
}

TEST(IrTextErrors, MissingReturn) {
  expect_parse_error(lines({"graph(", "    arg %x : f32[2]):", "  %y : f32[2] = aten::relu(%x)"}), 4, 1,
                     "missing 'return (...)'");
  expect_parse_error("graph():", 1, 9, "missing 'return (...)'");
}

TEST(IrTextErrors, UnterminatedString) {
  expect_parse_error(with_node("() = aten::f(\"abc)"), 3, 16, "unterminated string");
  expect_parse_error("graph():\n  () = aten::f(\"abc\\", 2, 16, "unterminated string");
  expect_parse_error(with_node("%y : int = aten::f(%x)  #{fqn=\"a.b}"), 3, 33, "unterminated string");
}

TEST(IrTextErrors, BadEscape) {
  expect_parse_error(with_node("() = aten::f(\"a\\qb\")"), 3, 18, "unknown escape '\\q' in string");
  expect_parse_error(with_node("() = aten::f(%x)  #{custom={\"k\": \"\\x41\"}}"), 3, 37, "unknown escape '\\x'");
}

TEST(IrTextErrors, UnknownMetadataKey) {
  expect_parse_error(with_node("%y : int = aten::f(%x)  #{seq=1, phse=backward}"), 3, 36,
                     "unknown node metadata key 'phse'");
}

TEST(IrTextErrors, UnknownPhaseAndPolicy) {
  expect_parse_error(with_node("%y : int = aten::f(%x)  #{phase=backwards}"), 3, 35,
                     "unknown phase 'backwards' (forward, loss, backward, optimizer)");
  expect_parse_error(with_node("%y : int = aten::f(%x)  #{recompute=always}"), 3, 39,
                     "unknown recompute policy 'always'");
}

TEST(IrTextErrors, BadNumber) {
  expect_parse_error(with_node("() = aten::f(%x, 1.2.3)"), 3, 20, "malformed number '1.2.3'");
  expect_parse_error(with_node("() = aten::f(1e)"), 3, 16, "malformed number '1e'");
  expect_parse_error(with_node("() = aten::f(-)"), 3, 16, "malformed number '-'");
  expect_parse_error(with_node("() = aten::f(99999999999999999999)"), 3, 16,
                     "integer 99999999999999999999 is out of range");
  expect_parse_error(lines({"graph(", "    arg %x : f32[2, x]):", "  return ()"}), 2, 21, "expected an integer");
  expect_parse_error(with_node("%y : int = aten::f(%x)  #{seq=12345678901234567890}"), 3, 33,
                     "integer 12345678901234567890 is out of range");
}

TEST(IrTextErrors, BadDevice) {
  expect_parse_error(lines({"graph(", "    arg %x : f32[2]@gpu:0):", "  return ()"}), 2, 21,
                     "invalid device 'gpu:0'");
  expect_parse_error(with_node("() = aten::to(%x, device(\"tpu\"))"), 3, 28, "invalid device \"tpu\"");
  expect_parse_error(with_node("() = aten::to(%x, device(\"cuda:x\"))"), 3, 28, "invalid device \"cuda:x\"");
}

TEST(IrTextErrors, TrailingGarbage) {
  expect_parse_error(lines({"graph(", "    arg %x : f32[2]):", "  return (%x)", "  extra"}), 4, 3,
                     "unexpected text after 'return (...)'");
  expect_parse_error("graph():\n  return ())", 2, 12, "unexpected text after 'return (...)'");
}

TEST(IrTextErrors, StridesSizesCountMismatch) {
  expect_parse_error(lines({"graph(", "    arg %x : f32[2, 3]{1}):", "  return ()"}), 2, 14,
                     "type has 2 sizes but 1 strides");
  expect_parse_error(with_node("%y : f32[]{1, 1} = aten::f(%x)"), 3, 8, "type has 0 sizes but 2 strides");
  expect_parse_error(with_node("%y : f32[2, -3] = aten::f(%x)"), 3, 8, "negative size");
}

TEST(IrTextErrors, BadOpName) {
  expect_parse_error(with_node("%y : f32[2] = mm(%x)"), 3, 17, "expected an operator such as aten::mm but found 'mm'");
  expect_parse_error(with_node("%y : f32[2] = ::mm(%x)"), 3, 17, "found '::mm'");
  expect_parse_error(with_node("%y : f32[2] = aten::(%x)"), 3, 17, "found 'aten::'");
  expect_parse_error(with_node("%y : f32[2] = aten::mm.(%x)"), 3, 17, "found 'aten::mm.'");
  expect_parse_error(with_node("%y : f32[2] = (%x)"), 3, 17, "found ''");
}

TEST(IrTextErrors, StructuralMistakes) {
  expect_parse_error("", 1, 1, "expected 'graph' but found end of text");
  expect_parse_error("grph():\n  return ()\n", 1, 1, "expected 'graph' but found 'grph():'");
  expect_parse_error(with_node("%y f32[2] = aten::relu(%x)"), 3, 6, "expected ':' but found 'f32[2]");
  expect_parse_error(with_node("%y : f32[2] = aten::relu(%x,)"), 3, 31, "expected an argument but found ')'");
  expect_parse_error(with_node("%y : f32[2] = aten::relu(%x"), 4, 3, "expected ')' but found 'return ()'");
  expect_parse_error(with_node("%y : f32[2] = aten::relu(%x)  #{seq=1"), 4, 3, "expected '}'");
  expect_parse_error(with_node("%y : f32[2] = aten::relu(what)"), 3, 28, "unknown argument 'what'");
  expect_parse_error(with_node("% : f32[2] = aten::relu(%x)"), 3, 4, "expected a value name after '%'");
  expect_parse_error(with_node("%1y : f32[2] = aten::relu(%x)"), 3, 3, "invalid value name %1y");
}

// Parsing hostile input must fail cleanly: no crash, no exception other than
// ParseError, whatever the damage.
TEST(IrTextErrors, EveryTruncationOfAValidGraphFailsCleanly) {
  for (size_t len = 0; len < kTwoMatmulStep.size(); ++len) {
    const std::string prefix = kTwoMatmulStep.substr(0, len);
    if (prefix.find("return (%sum, %mm_4, %mm_2)") != std::string::npos) continue;  // complete already
    EXPECT_THROW(parse_graph(prefix), ParseError) << "prefix of length " << len;
  }
}

TEST(IrTextErrors, EveryByteDeletionFailsOrParsesCleanly) {
  for (size_t pos = 0; pos < kTwoMatmulStep.size(); ++pos) {
    std::string damaged = kTwoMatmulStep;
    damaged.erase(pos, 1);
    try {
      auto g = parse_graph(damaged);
      EXPECT_EQ(parse_graph(g->print())->print(), g->print());
    } catch (const ParseError&) {
    }
  }
}

TEST(IrTextErrors, DeeplyNestedListIsRejectedNotAStackOverflow) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  expect_parse_error(with_node("() = aten::f(" + deep + ")"), 3, 16 + 256, "nested too deeply");
  // Realistic nesting is fine.
  expect_roundtrip(with_node("() = aten::f(" + std::string(32, '[') + std::string(32, ']') + ")"));
}

TEST(IrTextErrors, NulAndControlBytesAreErrorsOrStringContent) {
  const std::string with_nul = with_node(std::string("() = aten::f(\"a\0b\")", 19));
  auto g = parse_graph(with_nul);
  EXPECT_EQ(g->first_node()->arg(0).str(), std::string("a\0b", 3));
  EXPECT_EQ(g->print(), with_nul);
  expect_parse_error(with_node(std::string("() = aten::f(\0)", 15)), 3, 16, "expected an argument");
}

// A type of rank r: "f32[1, 1, ...]" with r entries, and its strides when asked.
std::string type_of_rank(size_t rank, bool with_strides = false) {
  std::string sizes, strides;
  for (size_t i = 0; i < rank; ++i) {
    sizes += i ? ", 1" : "1";
    strides += i ? ", 1" : "1";
  }
  return "f32[" + sizes + "]" + (with_strides ? "{" + strides + "}" : "");
}

TEST(IrTextLimits, RankUpToTheCapRoundTrips) {
  const auto g = parse_graph(lines({"graph(", "    arg %x : " + type_of_rank(kMaxTensorRank) + "):", "  return (%x)"}));
  EXPECT_EQ(g->inputs()[0]->meta()->sizes.size(), kMaxTensorRank);
  expect_roundtrip(g->print());
}

TEST(IrTextLimits, RankAboveTheCapNamesTheFirstDimensionTooMany) {
  // "    arg %x : f32[" is 17 characters; each "1, " entry 3 more: entry 65 starts at 18 + 64 * 3.
  const int column = 18 + static_cast<int>(kMaxTensorRank) * 3;
  expect_parse_error(lines({"graph(", "    arg %x : " + type_of_rank(kMaxTensorRank + 1) + "):", "  return (%x)"}), 2,
                     column, "type has more than 64 sizes (the graph format's maximum rank is 64)");
  // A hostile rank fails at the same place: the parser stops at the first entry too many.
  expect_parse_error(lines({"graph(", "    arg %x : " + type_of_rank(200000) + "):", "  return (%x)"}), 2, column,
                     "type has more than 64 sizes");
  // Node outputs and stride lists are capped alike.
  expect_parse_error(with_node("%y : " + type_of_rank(kMaxTensorRank + 1) + " = aten::relu(%x)"), 3,
                     12 + static_cast<int>(kMaxTensorRank) * 3, "type has more than 64 sizes");
  // "    arg %x : f32[1]{" is 20 characters: stride entry 65 starts at 21 + 64 * 3, before
  // the sizes-versus-strides count is ever compared.
  std::string strides = "1";
  for (size_t i = 1; i <= kMaxTensorRank; ++i) strides += ", 1";
  expect_parse_error(lines({"graph(", "    arg %x : f32[1]{" + strides + "}):", "  return (%x)"}), 2,
                     21 + static_cast<int>(kMaxTensorRank) * 3, "type has more than 64 strides");
}

// Found by the parser fuzzer (suites/parser_fuzz/corpus/graph/size-product-overflows-int64.graph):
// the product of the sizes overflowed int64 while computing the contiguous strides.
TEST(IrTextLimits, SizesWhoseByteCountOverflowsAreRefusedAtTheType) {
  expect_parse_error(lines({"graph(", "    arg %x : f32[5081498052211215928, 8]):", "  return (%x)"}), 2, 14,
                     "type's byte count overflows int64 (sizes [5081498052211215928, 8])");
  // 2^62 elements of 4 bytes overflow; 2^62 one-byte elements do not.
  expect_parse_error(with_node("%y : f32[4611686018427387904] = aten::relu(%x)"), 3, 8, "byte count overflows int64");
  expect_roundtrip(lines({"graph(", "    arg %x : b8[4611686018427387904]):", "  return (%x)"}));
  // At the symbols' hints too.
  expect_parse_error(lines({"symbol s0 in [1, 4611686018427387904] hint 4611686018427387904", "graph(",
                            "    arg %x : f32[sym(s0)]):", "  return (%x)"}),
                     3, 14, "byte count overflows int64");
}

}  // namespace
}  // namespace passcheck::ir
