// An out-of-tree pass built against the installed passcheck package: fold-identity-arith
// replaces arithmetic that leaves its operand unchanged (x * 1, x - 0, x + 0 on integers)
// by the operand itself, declared with rules and guards like passcheck's own passes.
#pragma once

#include "framework/check/pass.h"

namespace example {

/// The pass's declaration: name, summary, numerics effect, rules and guards.
passcheck::check::PassInfo fold_identity_arith_info();

/// Runs the pass on `graph`.
passcheck::check::PassResult fold_identity_arith(passcheck::ir::Graph& graph,
                                                 const passcheck::check::PassOptions& options);

/// Adds fold-identity-arith to `registry`.
void register_example_passes(passcheck::check::PassRegistry& registry);

/// Adds the known-buggy variant mutant-fold-identity-arith-no-float-add-zero (the guard
/// against x + 0 on floating tensors disabled: -0.0 + 0 is +0.0, not x) to `registry`,
/// which must hold the real pass.
void register_example_mutants(passcheck::check::PassRegistry& registry);

}  // namespace example
