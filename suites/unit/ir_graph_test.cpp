// Unit tests of the Graph / Node / Value API (framework/ir/graph.h): node creation and
// erasure, exact use lists (operands inside nested lists, repeated operands, graph
// outputs), use rewiring, argument updates, ordering and renumbering, deep copies,
// naming and hashing. Passes rely on these invariants without re-checking them, so a
// use list that drifts from the arguments would corrupt every later rewrite.
#include "framework/ir/graph.h"
#include "framework/ir/text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace passcheck::ir {
namespace {

TensorMeta f32(std::vector<int64_t> sizes) {
  TensorMeta m;
  m.sizes = std::move(sizes);
  m.strides = TensorMeta::contiguous_strides(m.sizes);
  return m;
}

// Adds a node with one tensor output named after `name`.
Value* add_node(Graph& g, const std::string& op, std::vector<Arg> args, const std::string& name = "",
                Node* insert_before = nullptr) {
  Node* n = g.create(op, std::move(args), insert_before);
  return n->add_output(ValueType::Tensor, f32({2}), name);
}

// The uses a value should have, recomputed from scratch: every operand slot and graph
// output that names it. Compared as sets because use-list order is not part of the API.
std::multiset<std::pair<const Node*, uint32_t>> expected_uses(const Graph& g, const Value* v) {
  std::multiset<std::pair<const Node*, uint32_t>> out;
  for (const Node* n : g.nodes())
    for (size_t s = 0; s < n->num_operands(); ++s)
      if (n->operand(s) == v) out.insert({n, static_cast<uint32_t>(s)});
  for (size_t i = 0; i < g.outputs().size(); ++i)
    if (g.outputs()[i] == v) out.insert({nullptr, static_cast<uint32_t>(i)});
  return out;
}

std::multiset<std::pair<const Node*, uint32_t>> actual_uses(const Value* v) {
  std::multiset<std::pair<const Node*, uint32_t>> out;
  for (const Use& u : v->uses()) out.insert({u.user, u.slot});
  return out;
}

// Checks every value of the graph, so a test cannot miss a stale use on a value it did
// not think about.
void expect_use_lists_exact(const Graph& g) {
  for (const Value* in : g.inputs()) EXPECT_EQ(actual_uses(in), expected_uses(g, in)) << "%" << in->name();
  for (const Node* n : g.nodes())
    for (const Value* out : n->outputs()) EXPECT_EQ(actual_uses(out), expected_uses(g, out)) << "%" << out->name();
}

std::vector<std::string> op_sequence(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes()) out.push_back(n->outputs().empty() ? n->op() : n->output()->name());
  return out;
}

void expect_order_consistent(const Graph& g) {
  const auto nodes = g.node_list();
  for (size_t i = 0; i < nodes.size(); ++i)
    for (size_t j = 0; j < nodes.size(); ++j)
      ASSERT_EQ(nodes[i]->is_before(nodes[j]), i < j) << "nodes " << i << " and " << j;
}

class GraphTest : public ::testing::Test {
 protected:
  Graph g;
  Value* a = g.add_input("a", ValueType::Tensor, f32({2}), InputRole::Parameter);
  Value* b = g.add_input("b", ValueType::Tensor, f32({2}), InputRole::Argument);
};

TEST_F(GraphTest, CreateAppendsOrInsertsBeforeAnchor) {
  Value* first = add_node(g, "aten::relu", {Arg::of(a)}, "first");
  Value* last = add_node(g, "aten::relu", {Arg::of(b)}, "last");
  Value* middle = add_node(g, "aten::neg", {Arg::of(a)}, "middle", last->producer());
  EXPECT_EQ(op_sequence(g), (std::vector<std::string>{"first", "middle", "last"}));
  EXPECT_EQ(g.num_nodes(), 3u);
  EXPECT_EQ(g.first_node(), first->producer());
  EXPECT_EQ(g.last_node(), last->producer());
  EXPECT_EQ(middle->producer()->prev(), first->producer());
  EXPECT_EQ(middle->producer()->next(), last->producer());
  expect_order_consistent(g);
}

TEST_F(GraphTest, OpNameParts) {
  Node* split = g.create("aten::split.Tensor", {Arg::of(a), Arg::integer(1)});
  EXPECT_EQ(split->op_name(), "aten::split");
  EXPECT_EQ(split->overload(), "Tensor");
  EXPECT_EQ(split->op_base(), "split");
  Node* gather = g.create("_c10d_functional::all_gather_into_tensor", {Arg::of(a)});
  EXPECT_EQ(gather->overload(), "");
  EXPECT_EQ(gather->op_base(), "all_gather_into_tensor");
}

// Nodes share one string per operator name (ir::intern_operator): passes and exec's
// property cache key on its address, so equal names must be the same object across graphs,
// copies and threads, and different names different objects.
TEST_F(GraphTest, OperatorNamesAreOneStringPerName) {
  Node* relu = g.create("aten::relu", {Arg::of(a)});
  Node* neg = g.create("aten::neg", {Arg::of(a)});
  Graph other;
  Value* c = other.add_input("c", ValueType::Tensor, f32({2}));
  const std::string spelled = std::string("aten::") + "relu";
  Node* relu_elsewhere = other.create(spelled, {Arg::of(c)});
  EXPECT_EQ(&relu->op(), &relu_elsewhere->op());
  EXPECT_NE(&relu->op(), &neg->op());
  EXPECT_EQ(relu->op(), "aten::relu");
  EXPECT_EQ(&g.clone()->first_node()->op(), &relu->op());
  const std::string* from_thread = nullptr;
  std::thread t([&] { from_thread = intern_operator("aten::relu"); });
  t.join();
  EXPECT_EQ(from_thread, &relu->op());
  EXPECT_EQ(intern_operator("aten::neg"), &neg->op());
}

TEST_F(GraphTest, CreateRejectsNullValueAndLeavesGraphUnchanged) {
  const std::string before = g.print();
  try {
    g.create("aten::add.Tensor", {Arg::of(a), Arg::of(nullptr)});
    FAIL() << "expected IrError";
  } catch (const IrError& e) {
    EXPECT_NE(std::string(e.what()).find("null value"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g.num_nodes(), 0u);
  EXPECT_FALSE(a->has_uses());
  EXPECT_EQ(g.print(), before);
}

TEST_F(GraphTest, CreateRejectsValueOfAnotherGraph) {
  Graph other;
  Value* foreign = other.add_input("f", ValueType::Tensor, f32({2}));
  try {
    g.create("aten::add.Tensor", {Arg::of(a), Arg::of_list({Arg::of(foreign)})});
    FAIL() << "expected IrError";
  } catch (const IrError& e) {
    EXPECT_NE(std::string(e.what()).find("%f belongs to another graph"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g.num_nodes(), 0u);
  EXPECT_FALSE(a->has_uses());
  EXPECT_FALSE(foreign->has_uses());
}

TEST_F(GraphTest, UsesCoverRepeatsNestedListsAndGraphOutputs) {
  Value* sum = add_node(g, "aten::add.Tensor", {Arg::of(a), Arg::of(a)}, "sum");
  Node* cat = g.create("aten::cat", {Arg::of_list({Arg::of(b), Arg::of_list({Arg::of(sum), Arg::of(a)})}),
                                     Arg::integer(0), Arg::of(b)});
  Value* cat_out = cat->add_output(ValueType::Tensor, f32({6}));
  g.add_output(cat_out);
  g.add_output(a);

  ASSERT_EQ(cat->num_operands(), 4u);
  EXPECT_EQ(cat->operands(), (std::vector<Value*>{b, sum, a, b}));
  EXPECT_EQ(actual_uses(a), (std::multiset<std::pair<const Node*, uint32_t>>{
                                {sum->producer(), 0}, {sum->producer(), 1}, {cat, 2}, {nullptr, 1}}));
  EXPECT_EQ(actual_uses(b), (std::multiset<std::pair<const Node*, uint32_t>>{{cat, 0}, {cat, 3}}));
  EXPECT_EQ(actual_uses(cat_out), (std::multiset<std::pair<const Node*, uint32_t>>{{nullptr, 0}}));
  EXPECT_TRUE(cat_out->uses()[0].is_graph_output());
  EXPECT_TRUE(sum->producer()->has_users());
  expect_use_lists_exact(g);
}

TEST_F(GraphTest, EraseUnusedNodeDropsItsUsesAndNames) {
  Value* sum = add_node(g, "aten::add.Tensor", {Arg::of(a), Arg::of(a)}, "sum");
  g.erase(sum->producer());
  EXPECT_EQ(g.num_nodes(), 0u);
  EXPECT_EQ(g.first_node(), nullptr);
  EXPECT_EQ(g.last_node(), nullptr);
  EXPECT_FALSE(a->has_uses());
  EXPECT_EQ(g.find_value("sum"), nullptr);
}

TEST_F(GraphTest, EraseUsedNodeThrowsNamingTheValue) {
  Value* mm = add_node(g, "aten::mm", {Arg::of(a), Arg::of(b)}, "mm");
  add_node(g, "aten::relu", {Arg::of(mm)}, "relu");
  try {
    g.erase(mm->producer());
    FAIL() << "expected IrError";
  } catch (const IrError& e) {
    EXPECT_NE(std::string(e.what()).find("%mm"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1 use"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(g.find_value("mm"), mm);
  expect_use_lists_exact(g);
}

TEST_F(GraphTest, EraseNodeUsedOnlyAsGraphOutputThrows) {
  Node* split = g.create("aten::split.Tensor", {Arg::of(a), Arg::integer(1)});
  split->add_output(ValueType::Tensor, f32({1}), "lo");
  Value* hi = split->add_output(ValueType::Tensor, f32({1}), "hi");
  g.add_output(hi);
  try {
    g.erase(split);
    FAIL() << "expected IrError";
  } catch (const IrError& e) {
    EXPECT_NE(std::string(e.what()).find("%hi"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g.num_nodes(), 1u);
}

TEST_F(GraphTest, ReplaceAllUsesRewiresOperandsAndGraphOutputs) {
  Value* sum = add_node(g, "aten::add.Tensor", {Arg::of(a), Arg::of_list({Arg::of(a)})}, "sum");
  g.add_output(a);
  g.add_output(sum);
  g.add_output(a);
  a->replace_all_uses_with(b);
  EXPECT_FALSE(a->has_uses());
  EXPECT_EQ(sum->producer()->operands(), (std::vector<Value*>{b, b}));
  EXPECT_EQ(g.outputs(), (std::vector<Value*>{b, sum, b}));
  EXPECT_EQ(sum->producer()->arg(1).list()[0].value, b);
  EXPECT_EQ(b->uses().size(), 4u);
  expect_use_lists_exact(g);
  EXPECT_EQ(g.print(), parse_graph(g.print())->print());
}

TEST_F(GraphTest, ReplaceAllUsesWithItselfChangesNothing) {
  add_node(g, "aten::add.Tensor", {Arg::of(a), Arg::of(a)}, "sum");
  const std::string before = g.print();
  a->replace_all_uses_with(a);
  EXPECT_EQ(a->uses().size(), 2u);
  EXPECT_EQ(g.print(), before);
  expect_use_lists_exact(g);
}

// The rewrite must touch only the uses, not walk the graph: with 50,000 unrelated
// nodes and 20,000 rewrites, a graph walk would take seconds, a use walk microseconds.
TEST_F(GraphTest, ReplaceAllUsesCostDoesNotDependOnGraphSize) {
  for (int i = 0; i < 50000; ++i) g.create("aten::relu", {Arg::of(b)});
  Value* x = add_node(g, "aten::neg", {Arg::of(b)}, "x");
  Value* y = add_node(g, "aten::neg", {Arg::of(b)}, "y");
  add_node(g, "aten::relu", {Arg::of(x)}, "user");
  g.add_output(x);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10000; ++i) {
    x->replace_all_uses_with(y);
    y->replace_all_uses_with(x);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);
  EXPECT_EQ(x->uses().size(), 2u);
  EXPECT_FALSE(y->has_uses());
  EXPECT_EQ(g.outputs()[0], x);
}

TEST_F(GraphTest, ReplaceUsesIfRewiresOnlySelectedUses) {
  Value* first = add_node(g, "aten::relu", {Arg::of(a)}, "first");
  Value* second = add_node(g, "aten::add.Tensor", {Arg::of(a), Arg::of(first)}, "second");
  g.add_output(a);
  Node* second_node = second->producer();
  a->replace_uses_if(b, [&](const Use& u) { return u.user == second_node || u.is_graph_output(); });
  EXPECT_EQ(first->producer()->operand(0), a);
  EXPECT_EQ(second_node->operand(0), b);
  EXPECT_EQ(second_node->operand(1), first);
  EXPECT_EQ(g.outputs()[0], b);
  EXPECT_EQ(a->uses().size(), 1u);
  expect_use_lists_exact(g);
}

TEST_F(GraphTest, ReplaceOperandMovesExactlyOneUse) {
  Value* sum = add_node(g, "aten::add.Tensor", {Arg::of(a), Arg::of(a)}, "sum");
  sum->producer()->replace_operand(1, b);
  EXPECT_EQ(sum->producer()->operands(), (std::vector<Value*>{a, b}));
  EXPECT_EQ(sum->producer()->arg(1).value, b);
  expect_use_lists_exact(g);
}

TEST_F(GraphTest, SetArgAndSetArgsKeepUseListsExact) {
  Value* sum = add_node(g, "aten::add.Tensor", {Arg::of(a), Arg::of(a), Arg::real(1.0)}, "sum");
  Node* n = sum->producer();
  n->set_arg(1, Arg::of_list({Arg::of(b), Arg::of(a), Arg::of(b)}));
  EXPECT_EQ(n->operands(), (std::vector<Value*>{a, b, a, b}));
  expect_use_lists_exact(g);

  n->set_arg(5, Arg::of(b));  // past the end: the gap is filled with None
  ASSERT_EQ(n->num_args(), 6u);
  EXPECT_TRUE(n->arg(3).is_none());
  EXPECT_TRUE(n->arg(4).is_none());
  EXPECT_EQ(n->operands(), (std::vector<Value*>{a, b, a, b, b}));
  expect_use_lists_exact(g);

  n->set_args({Arg::integer(3)});
  EXPECT_EQ(n->num_operands(), 0u);
  EXPECT_FALSE(a->has_uses());
  EXPECT_FALSE(b->has_uses());
}

TEST_F(GraphTest, SetArgsWithInvalidValueLeavesNodeUnchanged) {
  Value* sum = add_node(g, "aten::add.Tensor", {Arg::of(a), Arg::of(b)}, "sum");
  Node* n = sum->producer();
  EXPECT_THROW(n->set_arg(0, Arg::of(nullptr)), IrError);
  EXPECT_EQ(n->operands(), (std::vector<Value*>{a, b}));
  expect_use_lists_exact(g);
  // The node is still fully usable: erasing it must find its uses.
  g.erase(n);
  EXPECT_FALSE(a->has_uses());
  EXPECT_FALSE(b->has_uses());
}

TEST_F(GraphTest, MoveBeforeAndAfterReorder) {
  Value* x = add_node(g, "aten::relu", {Arg::of(a)}, "x");
  Value* y = add_node(g, "aten::relu", {Arg::of(a)}, "y");
  Value* z = add_node(g, "aten::relu", {Arg::of(a)}, "z");
  z->producer()->move_before(x->producer());
  EXPECT_EQ(op_sequence(g), (std::vector<std::string>{"z", "x", "y"}));
  expect_order_consistent(g);
  z->producer()->move_after(y->producer());
  EXPECT_EQ(op_sequence(g), (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(g.last_node(), z->producer());
  expect_order_consistent(g);
  x->producer()->move_after(y->producer());
  EXPECT_EQ(op_sequence(g), (std::vector<std::string>{"y", "x", "z"}));
  EXPECT_EQ(g.first_node(), y->producer());
  expect_order_consistent(g);
  y->producer()->move_before(y->producer());  // no-op
  EXPECT_EQ(op_sequence(g), (std::vector<std::string>{"y", "x", "z"}));
  EXPECT_TRUE(y->producer()->is_before(z->producer()));
  EXPECT_FALSE(z->producer()->is_before(z->producer()));
}

// Inserting repeatedly between the same two nodes halves the order gap each time, so
// this exhausts it many times over and forces renumbering.
TEST_F(GraphTest, ManyInsertionsAtOnePointKeepIsBeforeConsistent) {
  Value* head = add_node(g, "aten::relu", {Arg::of(a)}, "head");
  Value* tail = add_node(g, "aten::relu", {Arg::of(a)}, "tail");
  std::vector<Node*> inserted;
  for (int i = 0; i < 200; ++i) {
    Node* n = g.create("aten::neg", {Arg::of(a)}, tail->producer());
    inserted.push_back(n);
  }
  // Also insert repeatedly right after the head and at the very front.
  for (int i = 0; i < 100; ++i) {
    Node* n = g.create("aten::abs", {Arg::of(a)}, head->producer()->next());
    inserted.push_back(n);
    g.create("aten::sign", {Arg::of(a)}, g.first_node());
  }
  EXPECT_EQ(g.num_nodes(), 402u);
  expect_order_consistent(g);
  EXPECT_TRUE(inserted[0]->is_before(inserted[199]));
  EXPECT_TRUE(inserted[299]->is_before(inserted[200]));  // each abs went before the previous
  EXPECT_TRUE(head->producer()->is_before(tail->producer()));
  // Moves into the same crowded spot keep the order consistent too.
  for (int i = 0; i < 100; ++i) inserted[i]->move_after(head->producer());
  expect_order_consistent(g);
}

TEST_F(GraphTest, CloneIsADeepCopy) {
  Node* split = g.create("aten::split.Tensor", {Arg::of(a), Arg::integer(1), Arg::of_list({Arg::of(b)})});
  Value* lo = split->add_output(ValueType::Tensor, f32({1}), "lo");
  split->add_output(ValueType::Int, std::nullopt, "hi");
  split->mutable_meta().phase = Phase::Backward;
  split->mutable_meta().custom["k"] = "v";
  Value* sum = add_node(g, "aten::add.Tensor", {Arg::of(lo), Arg::of(lo)}, "sum");
  g.add_output(sum);
  g.add_output(a);

  auto copy = g.clone();
  EXPECT_EQ(copy->print(), g.print());
  EXPECT_EQ(copy->hash(), g.hash());
  std::set<const Value*> original_values(g.inputs().begin(), g.inputs().end());
  for (const Node* n : g.nodes()) original_values.insert(n->outputs().begin(), n->outputs().end());
  for (const Value* v : copy->inputs()) {
    EXPECT_EQ(original_values.count(v), 0u);
    EXPECT_EQ(v->graph(), copy.get());
  }
  for (const Node* n : copy->nodes()) {
    EXPECT_EQ(n->graph(), copy.get());
    for (const Value* v : n->operands()) EXPECT_EQ(original_values.count(v), 0u) << "%" << v->name();
    for (const Value* v : n->outputs()) EXPECT_EQ(original_values.count(v), 0u) << "%" << v->name();
  }
  expect_use_lists_exact(*copy);
  EXPECT_EQ(copy->first_node()->meta(), split->meta());
  EXPECT_EQ(copy->find_value("lo")->uses().size(), 2u);
  EXPECT_EQ(copy->inputs()[0]->role(), InputRole::Parameter);

  // Editing the copy leaves the original alone.
  copy->find_value("sum")->replace_all_uses_with(copy->find_value("lo"));
  EXPECT_NE(copy->print(), g.print());
  EXPECT_EQ(g.outputs()[0], sum);
  expect_use_lists_exact(g);
}

TEST_F(GraphTest, CloneNodeRemapsOperandsCopiesMetadataAndSuffixesNames) {
  Node* split = g.create("aten::split.Tensor", {Arg::of(a), Arg::of_list({Arg::of(a), Arg::integer(2)})});
  split->add_output(ValueType::Tensor, f32({1}), "lo");
  split->add_output(ValueType::Bool, std::nullopt, "hi");
  split->mutable_meta().module_fqn = "layers.0";
  split->mutable_meta().seq_nr = 7;
  split->mutable_meta().recompute = RecomputePolicy::MustRecompute;

  Node* copy = g.clone_node(*split, [&](Value* v) { return v == a ? b : v; }, split, "_recomputed");
  EXPECT_EQ(g.first_node(), copy);
  EXPECT_EQ(copy->op(), "aten::split.Tensor");
  EXPECT_EQ(copy->operands(), (std::vector<Value*>{b, b}));
  EXPECT_EQ(copy->arg(1).list()[1], Arg::integer(2));
  EXPECT_EQ(copy->meta(), split->meta());
  ASSERT_EQ(copy->num_outputs(), 2u);
  EXPECT_EQ(copy->output(0)->name(), "lo_recomputed");
  EXPECT_EQ(copy->output(1)->name(), "hi_recomputed");
  EXPECT_EQ(copy->output(0)->meta(), split->output(0)->meta());
  EXPECT_EQ(copy->output(1)->type(), ValueType::Bool);
  EXPECT_EQ(copy->output(1)->output_index(), 1u);
  EXPECT_EQ(copy->output(0)->producer(), copy);

  // A second copy with the same suffix cannot reuse the names.
  Node* again = g.clone_node(*split, [](Value* v) { return v; }, nullptr, "_recomputed");
  EXPECT_EQ(again->output(0)->name(), "lo_recomputed_1");
  expect_use_lists_exact(g);
}

TEST_F(GraphTest, ClearOutputsDropsTheirUses) {
  Value* x = add_node(g, "aten::neg", {Arg::of(a)}, "x");
  g.add_output(x);
  g.add_output(a);
  g.add_output(x);
  g.clear_outputs();
  EXPECT_TRUE(g.outputs().empty());
  EXPECT_FALSE(x->has_uses());
  EXPECT_FALSE(a->has_uses() && a->uses().front().is_graph_output());
  expect_use_lists_exact(g);
}

// adopt moves nodes between graphs without copying: the node and value objects stay,
// operands are rewired through the map (a value whose producer moves too maps to itself),
// names move from one table to the other, and once every reader has moved or been erased
// both graphs' use lists are exact.
TEST_F(GraphTest, AdoptMovesNodesKeepingIdentityAndExactUses) {
  Value* x = add_node(g, "aten::neg", {Arg::of(a)}, "x");
  Value* y = add_node(g, "aten::add.Tensor", {Arg::of(x), Arg::of_list({Arg::of(x), Arg::of(b)})}, "y");
  Value* dead = add_node(g, "aten::relu", {Arg::of(x)}, "dead");
  g.add_output(y);
  g.clear_outputs();

  Graph target;
  Value* ta = target.add_input("a", ValueType::Tensor, f32({2}));
  Value* tb = target.add_input("b", ValueType::Tensor, f32({2}));
  Value* taken = add_node(target, "aten::zeros", {}, "y");  // the name %y is taken here
  auto map = [&](Value* v) { return v == a ? ta : v == b ? tb : v; };
  Node* nx = x->producer();
  Node* ny = y->producer();
  EXPECT_EQ(target.adopt(ny, map), ny);  // a reader moves before its producer
  EXPECT_EQ(target.adopt(nx, map), nx);
  EXPECT_EQ(nx->graph(), &target);
  EXPECT_EQ(x->graph(), &target);
  EXPECT_EQ(y->name(), "y_1");
  EXPECT_EQ(target.find_value("y_1"), y);
  EXPECT_EQ(target.find_value("y"), taken);
  EXPECT_EQ(g.find_value("x"), nullptr);
  EXPECT_EQ(ny->operands(), (std::vector<Value*>{x, x, tb}));
  EXPECT_EQ(target.num_nodes(), 3u);
  EXPECT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(op_sequence(target), (std::vector<std::string>{"y", "y_1", "x"}));
  EXPECT_TRUE(x->producer()->touched() & kTouchCreated);

  g.erase(dead->producer());  // the one reader left behind drops its use of %x
  EXPECT_EQ(g.num_nodes(), 0u);
  EXPECT_FALSE(a->has_uses());
  EXPECT_FALSE(b->has_uses());
  expect_use_lists_exact(g);
  expect_use_lists_exact(target);
  expect_order_consistent(target);
}

// A parsed node's operator and argument positions live in an array of its graph: a node
// that moves to another graph or is cloned must carry them over, or an error message
// would point at another node's text (or past the array).
TEST(SourcePositions, ParsedNodesKeepTheirPositionsWhenClonedOrAdopted) {
  auto parsed = parse_graph(
      "graph(\n"
      "    arg %x : f32[2]):\n"
      "  %y : f32[2] = aten::neg(%x)\n"
      "  %z : f32[2] = aten::add.Tensor(%y,\n"
      "                                 %x, 1)\n"
      "  return (%z)\n");
  const Node* add = parsed->find_value("z")->producer();
  ASSERT_EQ(add->source_args().size(), 3u);
  EXPECT_EQ(add->source_op().line, 4);
  EXPECT_EQ(add->source_op().column, 17);
  EXPECT_EQ(add->source_args()[1].line, 5);
  EXPECT_EQ(add->source_args()[1].column, 34);

  auto copy = parsed->clone();
  const Node* copied = copy->find_value("z")->producer();
  EXPECT_EQ(copied->source_line, add->source_line);
  EXPECT_EQ(copied->source_column, add->source_column);
  EXPECT_EQ(copied->source_op().column, 17);
  ASSERT_EQ(copied->source_args().size(), 3u);
  EXPECT_EQ(copied->source_args()[1].line, 5);

  // The target graph has positions of its own, so an index carried over unchanged would
  // read the neg node's.
  auto target = parse_graph("graph(\n    arg %x : f32[2]):\n  %w : f32[2] = aten::relu(%x)\n  return (%w)\n");
  Value* tx = target->inputs()[0];
  Node* neg = parsed->find_value("y")->producer();
  Node* moved = parsed->find_value("z")->producer();
  parsed->clear_outputs();
  target->adopt(neg, [&](Value*) { return tx; });
  target->adopt(moved, [&](Value* v) { return v->graph() == target.get() ? v : tx; });
  EXPECT_EQ(moved->source_op().line, 4);
  ASSERT_EQ(moved->source_args().size(), 3u);
  EXPECT_EQ(moved->source_args()[1].line, 5);
  EXPECT_EQ(moved->source_args()[1].column, 34);
  EXPECT_EQ(neg->source_op().line, 3);

  Graph built;
  Value* in = built.add_input("in", ValueType::Tensor, f32({2}));
  Node* made = built.create("aten::neg", {Arg::of(in)});
  EXPECT_EQ(made->source_op().line, 0);
  EXPECT_TRUE(made->source_args().empty());
}

// Strings, lists and symbolic integers live out of line: a copy must own its own.
TEST(ArgStorage, ACopyOwnsItsListStringAndExpression) {
  const Arg list = Arg::of_list({Arg::integer(1), Arg::string("mean")});
  Arg copy = list;
  copy.mutable_list()[0] = Arg::integer(7);
  EXPECT_EQ(list.list()[0], Arg::integer(1));
  EXPECT_EQ(copy.list()[0], Arg::integer(7));
  EXPECT_EQ(copy.list()[1].str(), "mean");

  Arg assigned = Arg::integer(3);
  assigned = list;
  EXPECT_EQ(assigned, list);
  assigned.mutable_list().pop_back();
  EXPECT_EQ(list.list().size(), 2u);

  const sym::Expr s = sym::Expr::symbol("s0");
  const Arg symbolic = Arg::symbolic(2 * s);
  Arg other = symbolic;
  EXPECT_EQ(other.expr(), 2 * s);
  other = Arg::integer(4);
  EXPECT_EQ(symbolic.expr(), 2 * s);

  // Other kinds read as empty, and only a list can be rewritten in place.
  EXPECT_TRUE(Arg::integer(1).list().empty());
  EXPECT_TRUE(Arg::integer(1).str().empty());
  Arg number = Arg::integer(1);
  EXPECT_THROW(number.mutable_list(), IrError);
  EXPECT_EQ(Arg::real(-0.0), Arg::real(-0.0));
  EXPECT_NE(Arg::real(-0.0), Arg::real(0.0));
  EXPECT_NE(Arg::integer(0), Arg::real(0.0));
}

// A TensorMeta's expressions live out of line: a copy must keep them and own them.
TEST(TensorMetaStorage, ACopyKeepsTheSymbolicShape) {
  TensorMeta m;
  m.set_symbolic({sym::Expr::symbol("s0"), sym::Expr::constant(4)}, {sym::Expr::constant(4), sym::Expr::constant(1)},
                 {{"s0", 8}});
  ASSERT_TRUE(m.is_symbolic());
  EXPECT_EQ(m.sizes, (std::vector<int64_t>{8, 4}));
  TensorMeta copy = m;
  EXPECT_EQ(copy, m);
  EXPECT_EQ(copy.sym_sizes()[0], sym::Expr::symbol("s0"));
  copy.drop_symbolic();
  EXPECT_FALSE(copy.is_symbolic());
  EXPECT_TRUE(m.is_symbolic());
  EXPECT_NE(copy, m);
  EXPECT_EQ(copy.sizes, m.sizes);
  TensorMeta assigned;
  assigned = m;
  EXPECT_EQ(assigned.sym_sizes(), m.sym_sizes());
}

TEST_F(GraphTest, AdoptRefusesWhatWouldLeaveAReferenceBehind) {
  Value* x = add_node(g, "aten::neg", {Arg::of(a)}, "x");
  g.add_output(x);
  Graph target;
  Value* ta = target.add_input("a", ValueType::Tensor, f32({2}));
  Graph third;
  Value* other = third.add_input("o", ValueType::Tensor, f32({2}));
  const std::string before = g.print();
  // An output of its graph, an input of another graph kept as it is, a value of a third
  // graph: each refused with both graphs unchanged.
  EXPECT_THROW(target.adopt(x->producer(), [&](Value*) { return ta; }), IrError);
  g.clear_outputs();
  const std::string cleared = g.print();
  EXPECT_THROW(target.adopt(x->producer(), [](Value* v) { return v; }), IrError);
  EXPECT_THROW(target.adopt(x->producer(), [&](Value*) { return other; }), IrError);
  EXPECT_THROW(target.adopt(x->producer(), [](Value*) { return nullptr; }), IrError);
  EXPECT_THROW(g.adopt(x->producer(), [](Value* v) { return v; }), IrError);
  EXPECT_EQ(g.print(), cleared);
  EXPECT_NE(cleared, before);
  EXPECT_EQ(target.num_nodes(), 0u);
  EXPECT_FALSE(ta->has_uses());
  expect_use_lists_exact(g);
}

TEST_F(GraphTest, UniqueNameSanitizesAndAvoidsCollisions) {
  EXPECT_EQ(g.unique_name("fresh"), "fresh");
  EXPECT_EQ(g.unique_name("a"), "a_1");
  EXPECT_EQ(g.unique_name("bad-name"), "bad_name");
  EXPECT_EQ(g.unique_name("0x"), "v0x");
  EXPECT_EQ(g.unique_name(".hidden"), "v.hidden");
  EXPECT_EQ(g.unique_name(""), "v");
  EXPECT_EQ(g.unique_name("layers.0.weight"), "layers.0.weight");

  // Explicitly taken suffixed names are skipped, not reused.
  Value* a1 = g.add_input("a_1", ValueType::Int, std::nullopt);
  Value* a2 = g.add_input("a", ValueType::Int, std::nullopt);
  EXPECT_EQ(a1->name(), "a_1");
  EXPECT_EQ(a2->name(), "a_2");
  Value* relu = add_node(g, "aten::relu", {Arg::of(a)});
  Value* relu2 = add_node(g, "aten::relu", {Arg::of(a)});
  EXPECT_EQ(relu->name(), "relu");
  EXPECT_EQ(relu2->name(), "relu_1");
  // A name freed by erasure is not handed out again under the same counter.
  g.erase(relu2->producer());
  EXPECT_EQ(g.find_value("relu_1"), nullptr);
  EXPECT_EQ(add_node(g, "aten::relu", {Arg::of(a)})->name(), "relu_2");
}

TEST_F(GraphTest, FindValueAndRename) {
  Value* mm = add_node(g, "aten::mm", {Arg::of(a), Arg::of(b)});
  EXPECT_EQ(g.find_value("mm"), mm);
  EXPECT_EQ(g.find_value("a"), a);
  EXPECT_EQ(g.find_value("missing"), nullptr);

  g.rename(mm, "logits");
  EXPECT_EQ(mm->name(), "logits");
  EXPECT_EQ(g.find_value("logits"), mm);
  EXPECT_EQ(g.find_value("mm"), nullptr);
  g.rename(mm, "logits");  // renaming to its own name is allowed
  EXPECT_EQ(g.find_value("logits"), mm);

  try {
    g.rename(mm, "a");
    FAIL() << "expected IrError";
  } catch (const IrError& e) {
    EXPECT_NE(std::string(e.what()).find("%a is already taken"), std::string::npos) << e.what();
  }
  EXPECT_THROW(g.rename(mm, "has space"), IrError);
  EXPECT_THROW(g.rename(mm, "9lives"), IrError);
  EXPECT_EQ(mm->name(), "logits");
  EXPECT_NE(g.print().find("%logits : f32[2] = aten::mm(%a, %b)"), std::string::npos) << g.print();
}

TEST_F(GraphTest, NodeListSnapshotSurvivesErasure) {
  Value* x = add_node(g, "aten::relu", {Arg::of(a)}, "x");
  Value* y = add_node(g, "aten::relu", {Arg::of(x)}, "y");
  add_node(g, "aten::relu", {Arg::of(y)}, "z");
  add_node(g, "aten::relu", {Arg::of(b)}, "w");
  // Erase from the back so every node is unused when its turn comes.
  auto nodes = g.node_list();
  ASSERT_EQ(nodes.size(), 4u);
  std::reverse(nodes.begin(), nodes.end());
  for (Node* n : nodes) g.erase(n);
  EXPECT_EQ(g.num_nodes(), 0u);
  EXPECT_FALSE(a->has_uses());

  // The iterator caches the next node, so erasing the current one is safe too.
  add_node(g, "aten::relu", {Arg::of(a)}, "p");
  add_node(g, "aten::relu", {Arg::of(a)}, "q");
  add_node(g, "aten::relu", {Arg::of(a)}, "r");
  int visited = 0;
  for (Node* n : g.nodes()) {
    ++visited;
    g.erase(n);
  }
  EXPECT_EQ(visited, 3);
  EXPECT_EQ(g.num_nodes(), 0u);
}

TEST_F(GraphTest, HashIsEqualForEqualGraphsAndChangesOnEdit) {
  auto build = [](Graph& graph) {
    Value* w = graph.add_input("w", ValueType::Tensor, f32({4, 4}), InputRole::Parameter);
    Value* x = graph.add_input("x", ValueType::Tensor, f32({2, 4}));
    Node* mm = graph.create("aten::mm", {Arg::of(x), Arg::of(w)});
    graph.add_output(mm->add_output(ValueType::Tensor, f32({2, 4})));
    return mm;
  };
  Graph g1, g2;
  Node* mm1 = build(g1);
  build(g2);
  EXPECT_EQ(g1.hash(), g2.hash());

  mm1->mutable_meta().seq_nr = 3;
  EXPECT_NE(g1.hash(), g2.hash());
  mm1->mutable_meta().seq_nr = -1;
  EXPECT_EQ(g1.hash(), g2.hash());

  mm1->replace_operand(0, g1.inputs()[0]);
  EXPECT_NE(g1.hash(), g2.hash());
  mm1->replace_operand(0, g1.inputs()[1]);
  EXPECT_EQ(g1.hash(), g2.hash());

  g1.inputs()[1]->set_meta(f32({2, 5}));
  EXPECT_NE(g1.hash(), g2.hash());
}

}  // namespace
}  // namespace passcheck::ir
