// Every pass in the registry, on every debug model: the pipeline gate (verifier clean,
// changed flag truthful), idempotence where declared, text identity, bit-for-bit
// numerics unless declared otherwise, and no peak-memory growth for memory-only
// passes. A pass added to the registry is covered here without writing a test.
#include "framework/exec/inputs.h"
#include "oracles/pass_on_models.h"
#include "oracles/training_driver.h"
#include "suites/support/pass_oracle.h"
#include "suites/support/traced_joint.h"

#include <gtest/gtest.h>

#include <map>

namespace passcheck {
namespace {

class EveryPass : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryPass, HoldsItsDeclaredPropertiesOnEveryModel) {
  const std::string& pass = GetParam();
  for (const std::string& model : models::available_subjects()) {
    SCOPED_TRACE(model);
    const testing::TracedJoint& m = testing::traced_joint(model);
    auto records = testing::expect_pass_preserves(*m.graph, m.inputs, oracles::pipeline_with_prerequisites(pass, model));
    EXPECT_FALSE(records.empty());
  }
}

// Every pass the registry properties hold on the traced subjects (all but chunk, which
// suites/model/chunking_test.cpp and suites/property/chunk_fuzz_properties_test.cpp check).
std::vector<std::string> registered_passes() {
  std::vector<std::string> names;
  for (const auto* p : check::PassRegistry::global().list())
    if (oracles::runs_on_traced_subjects(p->info.name)) names.push_back(p->info.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryPass, ::testing::ValuesIn(registered_passes()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

TEST(EveryPass, TheRegistryHoldsTheCleanupAndAcFamilies) {
  auto names = registered_passes();
  for (const char* expected : {"dce", "remove-detach", "remove-identity-view", "remove-b2b-transpose",
                               "remove-identity-slice", "normalize-views", "canonicalize", "cse", "ac-regions",
                               "sac-tag", "apply-ac", "remat"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
}

TEST(EveryPass, TheGenericCheckFailsOnAPassThatChangesNumerics) {
  // A pass that declares "preserves" but flips gelu to its tanh approximation.
  check::PassRegistry registry;
  check::register_builtin_passes(registry);
  registry.add({"gelu-to-tanh", "test-only: silently approximates gelu", {}, check::NumericsEffect::Preserves, true},
               [](ir::Graph& g, const check::PassOptions&) {
                 check::PassResult r;
                 for (ir::Node* n : g.nodes())
                   if (n->op() == "aten::gelu" && n->arg(1).str() != "tanh") {
                     n->set_arg(1, ir::Arg::string("tanh"));
                     r.changed = true;
                   }
                 return r;
               });
  const testing::TracedJoint& m = testing::traced_joint("mlp");
  auto report = check::check_pass_properties(*m.graph, m.inputs, "gelu-to-tanh", registry);
  ASSERT_FALSE(report.violations.empty());
  EXPECT_NE(report.violations[0].find("changed numerics"), std::string::npos) << report.violations[0];
}

TEST(EveryPass, TheGenericCheckFailsOnANonIdempotentPassDeclaredIdempotent) {
  check::PassRegistry registry;
  registry.add({"append-neg", "test-only: appends a node every run", {}, check::NumericsEffect::Preserves, true},
               [](ir::Graph& g, const check::PassOptions&) {
                 ir::Node* n = g.create("aten::neg", {ir::Arg::of(g.outputs()[0])});
                 n->mutable_meta().phase = ir::Phase::Backward;  // after the backward, as the verifier requires
                 n->add_output(ir::ValueType::Tensor, g.outputs()[0]->meta());
                 check::PassResult r;
                 r.changed = true;
                 return r;
               });
  const testing::TracedJoint& m = testing::traced_joint("two_matmul");
  auto report = check::check_pass_properties(*m.graph, m.inputs, "append-neg", registry);
  bool found = false;
  for (const auto& v : report.violations) found |= v.find("declared idempotent but changed the graph") != std::string::npos;
  EXPECT_TRUE(found) << (report.violations.empty() ? "no violation" : report.violations[0]);
}

}  // namespace
}  // namespace passcheck
