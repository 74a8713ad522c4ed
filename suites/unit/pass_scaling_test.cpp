// `passcheck bench --passes` (workflows/bench/pass_scaling.h) without timing anything: the
// exponent fit on exact power laws, graph families of the requested size that verify,
// the command listing every registered pass and refusing bad options, and the order
// labels staying consistent under the insertion pattern the local relabelling serves.
#include "framework/check/pass.h"
#include "framework/check/verifier.h"
#include "workflows/bench/pass_scaling.h"
#include "suites/support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace passcheck {
namespace {

using bench::fit_exponent;

TEST(PassScaling, FitsTheExponentOfExactPowerLaws) {
  const std::vector<double> sizes = {1e3, 1e4, 1e5, 1e6};
  std::vector<double> linear, quadratic, n_log_n;
  for (double n : sizes) {
    linear.push_back(3e-7 * n);
    quadratic.push_back(2e-9 * n * n);
    n_log_n.push_back(1e-8 * n * std::log(n));
  }
  EXPECT_NEAR(fit_exponent(sizes, linear), 1.0, 1e-9);
  EXPECT_NEAR(fit_exponent(sizes, quadratic), 2.0, 1e-9);
  const double e = fit_exponent(sizes, n_log_n);
  EXPECT_GT(e, 1.0);
  EXPECT_LT(e, 1.15);  // n log n reads as near-linear over these sizes
  EXPECT_THROW(fit_exponent({1e3}, {1.0}), std::invalid_argument);
  EXPECT_THROW(fit_exponent({1e3, 1e3}, {1.0, 2.0}), std::invalid_argument);
  EXPECT_THROW(fit_exponent({1e3, 1e4}, {0.0, 1.0}), std::invalid_argument);
}

void expect_sized_and_valid(const std::string& family, int64_t nodes, double tolerance) {
  std::unique_ptr<ir::Graph> g = bench::family_graph(family, nodes);
  EXPECT_NEAR(static_cast<double>(g->num_nodes()), static_cast<double>(nodes), tolerance * static_cast<double>(nodes))
      << family;
  EXPECT_TRUE(check::verify_graph(*g).empty()) << family;
}

TEST(PassScaling, SyntheticGraphsHaveTheRequestedSizeAndVerify) {
  expect_sized_and_valid("synthetic", 500, 0.2);
  expect_sized_and_valid("synthetic", 5000, 0.1);
}

TEST(PassScaling, TracedFamiliesHaveTheRequestedSizeAndVerify) {
  // Within a layer (about 230 nodes) of the request.
  expect_sized_and_valid("llama3", 1200, 0.2);
  expect_sized_and_valid("llama3-fsdp", 1200, 0.25);
  EXPECT_THROW(bench::family_graph("gpt5", 1000), std::invalid_argument);
}

TEST(PassScaling, BenchTimesEveryPassAndWritesJson) {
  const std::string dir = testing::make_temp_dir();
  const auto r = testing::run_command(testing::passcheck_binary() +
                                      " bench --passes --sizes 300,600 --families synthetic --joint-layers 0 --json " +
                                      dir + "/s.json 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const check::RegisteredPass* p : check::PassRegistry::global().list())
    EXPECT_NE(r.output.find("| " + p->info.name + " |"), std::string::npos) << p->info.name << "\n" << r.output;
  for (const char* subject : {"| parse |", "| print |", "| verify |", "| pipeline:default |"})
    EXPECT_NE(r.output.find(subject), std::string::npos) << subject;
  std::ifstream in(dir + "/s.json");
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"exponent\""), std::string::npos);
  EXPECT_NE(json.find("\"synthetic\""), std::string::npos);
}

// --pass names what to time, whole-graph subjects included: the parser alone at 10^6
// nodes is one command.
TEST(PassScaling, BenchTimesOnlyTheNamedSubjects) {
  const auto r = testing::run_command(testing::passcheck_binary() +
                                      " bench --passes --sizes 300 --families synthetic --joint-layers 0 --pass parse,dce"
                                      " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("| parse |"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("| dce |"), std::string::npos) << r.output;
  for (const char* absent : {"| print |", "| verify |", "| pipeline:default |", "| cse |"})
    EXPECT_EQ(r.output.find(absent), std::string::npos) << absent << "\n" << r.output;
}

TEST(PassScaling, BenchRejectsBadSizesPassesAndFamilies) {
  const std::string bin = testing::passcheck_binary() + " bench --passes --joint-layers 0 ";
  auto r = testing::run_command(bin + "--sizes 10");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--sizes"), std::string::npos) << r.output;
  r = testing::run_command(bin + "--sizes 300 --pass nopass --families synthetic");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("nopass"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("pipeline:default"), std::string::npos) << r.output;  // names what it takes
  r = testing::run_command(bin + "--sizes 300 --families gpt5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("gpt5"), std::string::npos) << r.output;
}

// remat puts thousands of duplicates before one node; the order labels are then
// relabelled locally at growing ranges (framework/ir/graph.cpp assign_order). is_before
// must still agree with the list everywhere.
TEST(PassScaling, ThousandsOfInsertionsAtOnePlaceKeepIsBeforeConsistent) {
  ir::Graph g;
  ir::Value* x = g.add_input("x", ir::ValueType::Tensor, std::nullopt);
  ir::Node* head = g.create("aten::relu", {ir::Arg::of(x)});
  ir::Node* tail = g.create("aten::relu", {ir::Arg::of(x)});
  for (int i = 0; i < 6000; ++i) {
    g.create("aten::neg", {ir::Arg::of(x)}, tail);          // before one node, each after the last
    g.create("aten::abs", {ir::Arg::of(x)}, head->next());  // right after one node
    if (i % 3 == 0) g.create("aten::sign", {ir::Arg::of(x)}, g.first_node());
  }
  const std::vector<ir::Node*> nodes = g.node_list();
  ASSERT_EQ(nodes.size(), 2u + 12000u + 2000u);
  for (size_t i = 0; i + 1 < nodes.size(); ++i) ASSERT_TRUE(nodes[i]->is_before(nodes[i + 1])) << i;
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> pick(0, nodes.size() - 1);
  for (int k = 0; k < 20000; ++k) {
    const size_t i = pick(rng), j = pick(rng);
    ASSERT_EQ(nodes[i]->is_before(nodes[j]), i < j) << i << " " << j;
  }
  EXPECT_TRUE(check::verify_graph(g).empty());
}

}  // namespace
}  // namespace passcheck
