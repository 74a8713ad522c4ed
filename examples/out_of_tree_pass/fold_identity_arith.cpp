// fold-identity-arith (see fold_identity_arith.h). Bit for bit, x * 1 and x - 0 are x for
// every value of every dtype (-0.0 * 1 = -0.0, -0.0 - 0 = -0.0, NaN stays NaN), but
// x + 0 is not: -0.0 + 0 = +0.0. So the pass folds add(x, 0) only for integer tensors.
// It folds only where the result has x's exact type (a float scalar promotes an integer
// tensor) and where no user writes the result in place (after folding, the write would
// land in x itself).
#include "fold_identity_arith.h"

#include "framework/exec/op_properties.h"

#include <c10/core/ScalarType.h>

namespace example {

using namespace passcheck;

namespace {

// A Scalar argument equal to `value` (given as an int or a float constant).
bool scalar_is(const ir::Arg& a, double value) {
  if (a.kind == ir::Arg::Kind::Int) return static_cast<double>(a.i) == value;
  if (a.kind == ir::Arg::Kind::Float) return a.f == value;
  return false;
}

// The rule that would fold `n` to its first operand, or nullptr when none applies.
const char* rule_for(const ir::Node& n) {
  if (n.num_args() < 2 || !n.arg(0).is_value()) return nullptr;
  if (n.op() == "aten::mul.Scalar" && scalar_is(n.arg(1), 1)) return "fold-mul-one";
  if (n.op() == "aten::sub.Scalar" && scalar_is(n.arg(1), 0)) return "fold-sub-zero";
  if (n.op() == "aten::add.Scalar" && scalar_is(n.arg(1), 0)) return "fold-add-zero";
  return nullptr;
}

}  // namespace

check::PassInfo fold_identity_arith_info() {
  return check::PassInfo(
      "fold-identity-arith", "Replace x * 1, x - 0 and (integer) x + 0 by x", {}, check::NumericsEffect::Preserves,
      /*idempotent=*/true,
      {{"fold-mul-one", "mul.Scalar(x, 1): its uses go to x"},
       {"fold-sub-zero", "sub.Scalar(x, 0): its uses go to x"},
       {"fold-add-zero", "add.Scalar(x, 0) of an integer tensor: its uses go to x"}},
      {{"float-add-zero", "add.Scalar(x, 0) of a floating tensor: -0.0 + 0 is +0.0, not x"},
       {"type-changes", "the result's dtype, sizes or strides differ from x's (type promotion)"},
       {"result-written-in-place", "a user writes the result in place; folded, it would write x"}});
}

check::PassResult fold_identity_arith(ir::Graph& graph, const check::PassOptions& options) {
  check::PassResult result;
  check::Decisions d(result, options);
  int64_t folded = 0;
  for (ir::Node* n : graph.nodes()) {
    const char* rule = rule_for(*n);
    if (rule == nullptr || n->num_outputs() != 1) continue;
    ir::Value* x = n->arg(0).value;
    ir::Value* out = n->output(0);
    if (d.refuse("type-changes", !x->meta() || !out->meta() || !(*x->meta() == *out->meta()))) continue;
    if (d.refuse("float-add-zero", std::string(rule) == "fold-add-zero" && c10::isFloatingType(x->meta()->dtype)))
      continue;
    bool written = false;
    for (const ir::Use& use : out->uses()) written |= !use.is_graph_output() && exec::is_mutating(*use.user);
    if (d.refuse("result-written-in-place", written)) continue;
    out->replace_all_uses_with(x);
    graph.erase(n);
    d.fire(rule);
    ++folded;
  }
  result.changed = folded > 0;
  result.stats["folded_nodes"] = folded;
  return result;
}

void register_example_passes(check::PassRegistry& registry) {
  registry.add(fold_identity_arith_info(), fold_identity_arith);
}

void register_example_mutants(check::PassRegistry& registry) {
  // The same construction passcheck's own mutant library uses: the real pass called with
  // one declared guard disabled, so the faults are checked against its declaration.
  check::PassInfo info = fold_identity_arith_info();
  info.name = "mutant-fold-identity-arith-no-float-add-zero";
  info.summary = "fold-identity-arith folding x + 0 of floating tensors too";
  check::InjectedFaults faults;
  faults.disabled_guards.insert("float-add-zero");
  check::check_faults_declared(fold_identity_arith_info(), faults);
  registry.add(info, [faults](ir::Graph& graph, const check::PassOptions& options) {
    return fold_identity_arith(graph, options.with_faults(faults));
  });
}

}  // namespace example
