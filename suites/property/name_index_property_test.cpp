// The graph's value-name table (framework/ir/name_index.h) against a plain map. Random
// sequences of inputs added, nodes added with a name hint, values renamed and nodes
// erased, with names drawn so that they collide often and cover every shape the table
// treats differently: <prefix><number> in order and out of order, numbers below the
// first one a prefix saw, numbers far beyond what a prefix holds, leading zeros ("v07"
// is not "v7"), ten-digit numbers, names without a number, and prefixes that are other
// names ("v1" and "v1_2"). After every step each name the model holds finds its value,
// no other name finds anything, and unique_name never hands out a taken name.
#include "framework/ir/graph.h"
#include "framework/ir/name_index.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace passcheck::ir {
namespace {

std::string name_from(int prefix, int number_kind, int small) {
  static const char* const kPrefixes[] = {"v", "in", "mm_", "a", "x.y_", "v1_", "getitem_"};
  std::string name = kPrefixes[prefix % 7];
  switch (number_kind % 7) {
    case 0: return name;                                              // no number
    case 1: return name + std::to_string(small % 40);                 // small, in any order
    case 2: return name + "0" + std::to_string(small % 10);           // leading zero
    case 3: return name + std::to_string(100000000 + small % 5);      // far beyond the run
    case 4: return name + std::to_string(1234567890 + small % 3);     // ten digits
    case 5: return name + std::to_string(small % 40) + "_" + std::to_string(small % 3);
    default: return name + std::to_string(20 + small % 4);            // above a run's start
  }
}

struct Step {
  int kind = 0;  // 0 input, 1 node, 2 rename, 3 erase
  int prefix = 0, number_kind = 0, small = 0, pick = 0;
};

Step any_step() {
  Step s;
  s.kind = *rc::gen::inRange(0, 4);
  s.prefix = *rc::gen::inRange(0, 7);
  s.number_kind = *rc::gen::inRange(0, 7);
  s.small = *rc::gen::inRange(0, 1000);
  s.pick = *rc::gen::inRange(0, 1000);
  return s;
}

void expect_agrees(const Graph& g, const std::map<std::string, Value*>& model) {
  for (const auto& [name, v] : model) {
    RC_ASSERT(v->name() == name);
    RC_ASSERT(g.find_value(name) == v);
  }
  for (int p = 0; p < 7; ++p)
    for (int k = 0; k < 7; ++k)
      for (int small : {0, 3, 7, 21, 39}) {
        const std::string probe = name_from(p, k, small);
        const auto it = model.find(probe);
        RC_ASSERT(g.find_value(probe) == (it == model.end() ? nullptr : it->second));
      }
}

RC_GTEST_PROP(NameIndex, AgreesWithAMapUnderAddsRenamesAndErasures, ()) {
  const int steps = *rc::gen::inRange(1, 120);
  Graph g;
  std::map<std::string, Value*> model;
  Value* source = g.add_input("source", ValueType::Tensor, std::nullopt);
  model["source"] = source;
  std::vector<Node*> nodes;
  for (int i = 0; i < steps; ++i) {
    const Step s = any_step();
    const std::string name = name_from(s.prefix, s.number_kind, s.small);
    if (s.kind == 0 || s.kind == 1) {
      Value* v = nullptr;
      if (s.kind == 0) {
        v = g.add_input(name, ValueType::Int, std::nullopt);
      } else {
        Node* n = g.create("aten::relu", {Arg::of(source)});
        v = n->add_output(ValueType::Tensor, std::nullopt, name);
        nodes.push_back(n);
      }
      // A taken name comes back changed, never shared.
      RC_ASSERT(model.count(v->name()) == 0u);
      RC_ASSERT((v->name() == name) == (model.count(name) == 0u));
      model[v->name()] = v;
    } else if (s.kind == 2 && !nodes.empty()) {
      Value* v = nodes[static_cast<size_t>(s.pick) % nodes.size()]->output();
      const auto taken = model.find(name);
      if (taken != model.end() && taken->second != v) {
        RC_ASSERT_THROWS_AS(g.rename(v, name), IrError);
      } else {
        model.erase(v->name());
        g.rename(v, name);
        model[name] = v;
      }
    } else if (s.kind == 3 && !nodes.empty()) {
      const size_t at = static_cast<size_t>(s.pick) % nodes.size();
      model.erase(nodes[at]->output()->name());
      g.erase(nodes[at]);
      nodes.erase(nodes.begin() + static_cast<std::ptrdiff_t>(at));
    }
    RC_ASSERT(model.count(g.unique_name(name)) == 0u);
    expect_agrees(g, model);
  }
}

// A number far beyond what its prefix holds goes to the hash part: an array indexed by it
// would cost memory for every number below it.
TEST(NameIndex, ArraysStayWithinAFewTimesTheNamesTheyHold) {
  Graph g;
  NameIndex index([](const Value* v) -> const std::string& { return v->name(); });
  const std::vector<std::string> names = {"v3", "v4", "v100000000", "v999999999", "v5", "mm_2", "mm_400000000"};
  std::vector<Value*> values;
  for (const std::string& name : names) {
    values.push_back(g.add_input(name, ValueType::Int, std::nullopt));
    ASSERT_TRUE(index.insert(values.back())) << name;
  }
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(index.find(names[i]), values[i]) << names[i];
  EXPECT_EQ(index.size(), names.size());
  EXPECT_LE(index.array_slots(), 2 * index.size() + 16 * 2);
}

}  // namespace
}  // namespace passcheck::ir
