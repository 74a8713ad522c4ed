// Mutants of output aliasing (see alias_mutants.h).
#include "suites/mutants/alias_mutants.h"

#include "framework/ir/text.h"

#include <set>
#include <string>

namespace passcheck::mutants {

namespace {

// View operators whose result, from a dense input, is dense: its clone keeps its strides.
const std::set<std::string>& dense_views() {
  static const std::set<std::string> ops = {"aten::t", "aten::transpose", "aten::permute", "aten::view",
                                            "aten::alias", "aten::detach"};
  return ops;
}

check::PassResult copy_view_outputs(ir::Graph& g, const check::PassOptions&) {
  check::PassResult result;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    ir::Value* out = g.outputs()[i];
    ir::Node* producer = out->producer();
    if (!producer || !dense_views().count(producer->op_name()) || !out->meta()) continue;
    ir::Node* clone = g.create("aten::clone", {ir::Arg::of(out), ir::Arg::none()});
    clone->mutable_meta() = producer->meta();
    g.set_output(i, clone->add_output(ir::ValueType::Tensor, *out->meta(), out->name() + "_copy"));
    result.changed = true;
  }
  return result;
}

std::string call_text(const ir::Node& n) {
  std::string text = n.op();
  for (const ir::Arg& a : n.args()) text += "|" + ir::print_arg(a);
  return text;
}

check::PassResult share_equal_outputs(ir::Graph& g, const check::PassOptions&) {
  check::PassResult result;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    ir::Node* a = g.outputs()[i]->producer();
    if (!a || a->num_outputs() != 1) continue;
    for (size_t k = i + 1; k < g.outputs().size(); ++k) {
      ir::Node* b = g.outputs()[k]->producer();
      if (!b || b == a || b->num_outputs() != 1 || call_text(*a) != call_text(*b)) continue;
      g.set_output(k, g.outputs()[i]);
      result.changed = true;
    }
  }
  return result;
}

}  // namespace

void register_alias_mutants(check::PassRegistry& registry) {
  registry.add({"mutant-copy-view-outputs",
                "MUTANT: returns a clone in place of a graph output that is a view of an input (values kept, the "
                "output no longer aliases the input)",
                {},
                check::NumericsEffect::Preserves,
                false},
               copy_view_outputs);
  registry.add({"mutant-share-equal-outputs",
                "MUTANT: of two graph outputs computed alike, the second returns the first's value (values kept, two "
                "distinct outputs now share storage)",
                {},
                check::NumericsEffect::Preserves,
                false},
               share_equal_outputs);
}

}  // namespace passcheck::mutants
