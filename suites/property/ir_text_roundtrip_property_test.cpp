// Property tests of the graph text form over generated graphs (generators/random_graph.h):
// printing is a fixed point of parse-then-print, parsing preserves the hash, clone() is
// indistinguishable from the original, and corrupted text is either accepted or
// rejected with a ParseError, never with another exception. Every graph-changing tool
// in passcheck reads and writes this text, so these are the IR's serialization contract.
#include "framework/ir/text.h"
#include "generators/random_graph.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

namespace passcheck {
namespace {

using ir::Graph;
using ir::ParseError;

// Labels the run's distribution so a generator regression (say, every graph empty)
// shows up in the test output.
void tag_shape(const Graph& g) {
  RC_TAG(g.num_nodes() == 0 ? "no nodes" : g.num_nodes() < 8 ? "1-7 nodes" : "8+ nodes");
}

RC_GTEST_PROP(IrTextRoundtrip, PrintIsAFixedPointOfParse, ()) {
  const auto graph = *gen::arbitrary_graph();
  tag_shape(*graph);
  const std::string text = graph->print();
  const auto reparsed = ir::parse_graph(text, "<generated>");
  RC_ASSERT(reparsed->print() == text);
  RC_ASSERT(reparsed->num_nodes() == graph->num_nodes());
  RC_ASSERT(reparsed->inputs().size() == graph->inputs().size());
  RC_ASSERT(reparsed->outputs().size() == graph->outputs().size());
}

RC_GTEST_PROP(IrTextRoundtrip, ParsePreservesHash, ()) {
  const auto graph = *gen::arbitrary_graph();
  const auto reparsed = ir::parse_graph(graph->print());
  RC_ASSERT(reparsed->hash() == graph->hash());
}

// Metadata and argument trees are not visible in the value-level structure, so compare
// them node by node as well: a printer that dropped a field would still round-trip its
// own output.
RC_GTEST_PROP(IrTextRoundtrip, ParseRestoresNodeFieldsExactly, ()) {
  const auto graph = *gen::arbitrary_graph();
  const auto reparsed = ir::parse_graph(graph->print());
  const auto original_nodes = graph->node_list();
  const auto parsed_nodes = reparsed->node_list();
  RC_ASSERT(original_nodes.size() == parsed_nodes.size());
  for (size_t i = 0; i < original_nodes.size(); ++i) {
    const ir::Node& a = *original_nodes[i];
    const ir::Node& b = *parsed_nodes[i];
    RC_ASSERT(a.op() == b.op());
    RC_ASSERT(a.meta() == b.meta());
    RC_ASSERT(a.num_args() == b.num_args());
    RC_ASSERT(a.num_operands() == b.num_operands());
    for (size_t s = 0; s < a.num_operands(); ++s) RC_ASSERT(a.operand(s)->name() == b.operand(s)->name());
    RC_ASSERT(a.num_outputs() == b.num_outputs());
    for (size_t o = 0; o < a.num_outputs(); ++o) {
      RC_ASSERT(a.output(o)->name() == b.output(o)->name());
      RC_ASSERT(a.output(o)->type() == b.output(o)->type());
      RC_ASSERT(a.output(o)->meta() == b.output(o)->meta());
    }
  }
  for (size_t i = 0; i < graph->inputs().size(); ++i) {
    RC_ASSERT(graph->inputs()[i]->role() == reparsed->inputs()[i]->role());
    RC_ASSERT(graph->inputs()[i]->meta() == reparsed->inputs()[i]->meta());
  }
}

RC_GTEST_PROP(IrTextRoundtrip, CloneIsIndistinguishable, ()) {
  const auto graph = *gen::arbitrary_graph();
  const auto copy = graph->clone();
  RC_ASSERT(copy->print() == graph->print());
  RC_ASSERT(copy->hash() == graph->hash());
  for (ir::Value* in : copy->inputs()) RC_ASSERT(in->graph() == copy.get());
  for (ir::Node* n : copy->nodes())
    for (ir::Value* operand : n->operands()) RC_ASSERT(operand->graph() == copy.get());
}

// Byte-level damage of valid text: each edit replaces, inserts or deletes one byte,
// favouring the bytes that carry syntax.
RC_GTEST_PROP(IrTextRoundtrip, CorruptedTextParsesOrThrowsParseError, ()) {
  const auto graph = *gen::arbitrary_graph().as("graph");
  std::string text = graph->print();
  const auto edits = *rc::gen::inRange(1, 5).as("edit count");
  for (int e = 0; e < edits; ++e) {
    const auto pos = *rc::gen::inRange<size_t>(0, text.size() + 1).as("edit position");
    const char byte = *rc::gen::oneOf(rc::gen::elementOf(std::string("%()[]{}:,=\"\\#@.-_ \n0123456789ef")),
                                      rc::gen::arbitrary<char>())
                           .as("byte");
    switch (*rc::gen::inRange(0, 3).as("edit kind (replace, insert, delete)")) {
      case 0:
        if (pos < text.size()) text[pos] = byte;
        break;
      case 1: text.insert(text.begin() + pos, byte); break;
      default:
        if (pos < text.size()) text.erase(pos, 1);
    }
  }
  try {
    const auto parsed = ir::parse_graph(text);
    RC_TAG("still parses");
    // Whatever was accepted must itself be printable text that round-trips.
    const std::string printed = parsed->print();
    RC_ASSERT(ir::parse_graph(printed)->print() == printed);
  } catch (const ParseError& error) {
    RC_TAG("ParseError");
    RC_ASSERT(error.line() >= 1);
    RC_ASSERT(error.column() >= 1);
    RC_ASSERT(!error.message().empty());
  } catch (const std::exception& other) {
    RC_FAIL(std::string("parse_graph threw a non-ParseError exception: ") + other.what() + "\ninput:\n" + text);
  }
}

}  // namespace
}  // namespace passcheck
