// The partitioners' dense answer to "does this node read a storage written in place
// after it, one a recomputation would not create afresh" (WrittenStorage, passes/partition)
// against MutationIndex (passes/ac), the map-based answer the activation-checkpointing
// passes use. Random graphs over a few inputs: fresh results, views and aliases of
// earlier values (chains of them), in-place writes through any of those, recompute tags
// on every kind of node, some nodes in the backward. Every node must get the same answer
// from both.
#include "framework/ir/graph.h"
#include "framework/ir/text.h"
#include "passes/ac/ac_passes.h"
#include "passes/partition/classify.h"
#include "passes/partition/op_facts.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

namespace passcheck::passes {
namespace {

struct Line {
  int op = 0;       // 0 fresh, 1 view, 2 alias, 3 in-place add, 4 in-place mul, 5 copy_
  int a = 0, b = 0;  // operands: how many values back from the last one defined
  int tag = 0;      // 0 none, 1 prefer_recompute, 2 must_save, 3 must_recompute
  bool backward = false;
};

std::string graph_text(const std::vector<Line>& lines) {
  std::string text = "graph(param %w : f32[4], buffer %buf : f32[4], arg %x : f32[4]):\n";
  std::vector<std::string> values = {"w", "buf", "x"};
  static const char* const kTags[] = {"", "recompute=prefer_recompute", "recompute=must_save",
                                      "recompute=must_recompute"};
  bool in_backward = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const Line& l = lines[i];
    const std::string a = "%" + values[values.size() - 1 - static_cast<size_t>(l.a) % values.size()];
    const std::string b = "%" + values[values.size() - 1 - static_cast<size_t>(l.b) % values.size()];
    const std::string name = "v" + std::to_string(i);
    std::string rhs;
    switch (l.op % 6) {
      case 0: rhs = "aten::add.Tensor(" + a + ", " + b + ", 1)"; break;
      case 1: rhs = "aten::view(" + a + ", [4])"; break;
      case 2: rhs = "aten::alias(" + a + ")"; break;
      case 3: rhs = "aten::add_.Tensor(" + a + ", " + b + ", 1)"; break;
      case 4: rhs = "aten::mul_.Tensor(" + a + ", " + b + ")"; break;
      default: rhs = "aten::copy_(" + a + ", " + b + ", False)"; break;
    }
    // The backward starts once and stays: phases are in order in a joint graph.
    in_backward = in_backward || l.backward;
    std::string meta;
    if (in_backward) meta = "phase=backward";
    else if (l.tag % 4) meta = kTags[l.tag % 4];
    text += "  %" + name + " : f32[4] = " + rhs + (meta.empty() ? "" : "  #{" + meta + "}") + "\n";
    values.push_back(name);
  }
  text += "  return (%" + values.back() + ")\n";
  return text;
}

rc::Gen<Line> any_line() {
  // Operators and tags drawn evenly whatever the size (inRange grows with it).
  return rc::gen::build<Line>(rc::gen::set(&Line::op, rc::gen::element(0, 1, 2, 3, 4, 5)),
                              rc::gen::set(&Line::a, rc::gen::inRange(0, 64)),
                              rc::gen::set(&Line::b, rc::gen::inRange(0, 64)),
                              rc::gen::set(&Line::tag, rc::gen::element(0, 1, 2, 3)),
                              rc::gen::set(&Line::backward, rc::gen::weightedElement<bool>({{9, false}, {1, true}})));
}

RC_GTEST_PROP(WrittenStorage, AnswersReadsValueWrittenLaterAsTheMutationIndexDoes, ()) {
  const auto lines = *rc::gen::resize(40, rc::gen::nonEmpty(rc::gen::container<std::vector<Line>>(any_line())));
  const std::string text = graph_text(lines);
  RC_LOG() << text;
  const std::unique_ptr<ir::Graph> g = ir::parse_graph(text);
  const Classification classes = classify_nodes(*g);
  OpFactsCache ops;
  const WrittenStorage written(classes, ops);
  const MutationIndex mutations(*g);
  int later = 0;
  for (uint32_t p = 0; p < classes.nodes.size(); ++p) {
    const bool expected = mutations.reads_value_written_later(*classes.nodes[p]);
    later += expected;
    RC_ASSERT(written.reads_value_written_later(*g, p) == expected);
  }
  RC_TAG(later > 0);
}

// A read of the buffer before its in-place update must stay in the forward; a read of a
// fresh value a recomputation would create again need not.
TEST(WrittenStorage, AReadBeforeAnInPlaceWriteOfAnInputIsWrittenLater) {
  const std::unique_ptr<ir::Graph> g = ir::parse_graph(
      "graph(buffer %buf : f32[4], arg %x : f32[4]):\n"
      "  %fresh : f32[4] = aten::add.Tensor(%x, %x, 1)  #{recompute=prefer_recompute}\n"
      "  %r : f32[4] = aten::add.Tensor(%buf, %fresh, 1)\n"
      "  %s : f32[4] = aten::mul.Tensor(%fresh, %x)\n"
      "  %u : f32[4] = aten::add_.Tensor(%buf, %x, 1)\n"
      "  %t : f32[4] = aten::mul_.Tensor(%fresh, %x)\n"
      "  return (%r, %s, %u, %t)\n");
  const Classification classes = classify_nodes(*g);
  OpFactsCache ops;
  const WrittenStorage written(classes, ops);
  EXPECT_TRUE(written.reads_value_written_later(*g, 1));   // %r reads %buf, updated by %u
  EXPECT_FALSE(written.reads_value_written_later(*g, 2));  // %fresh is recomputed afresh
  EXPECT_FALSE(written.reads_value_written_later(*g, 3));  // %u is the last write of %buf
}

}  // namespace
}  // namespace passcheck::passes
