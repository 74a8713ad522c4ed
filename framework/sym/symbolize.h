// Differential symbolization: a graph traced at several values of one dimension becomes
// one graph whose integer arguments and shapes are expressions of a symbol. The traces
// must be isomorphic (same operators, same dataflow, same metadata); every integer that
// differs between them must be affine in the symbol's value (fitted on two traces,
// confirmed on the others) or, with four traces or more, quadratic (fitted on three,
// confirmed on the fourth: the strides of [seq, seq] attention scores). Shape-dependent control flow shows up as traces that are
// not isomorphic, reported at the first node where they differ.
#pragma once

#include "framework/ir/graph.h"
#include "framework/ir/sym_expr.h"

#include <memory>
#include <stdexcept>
#include <vector>

namespace passcheck::sym {

class SymbolizeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One trace and the symbol value it was recorded at.
struct TraceAt {
  const ir::Graph* graph = nullptr;
  int64_t value = 0;
};

/// Symbolizes `traces` (at least 3, distinct values, 4 for quadratic fits; traces[0] must be at symbol.hint)
/// into a copy of traces[0] that declares `symbol`. Throws SymbolizeError naming the
/// first differing node or argument.
std::unique_ptr<ir::Graph> symbolize(const std::vector<TraceAt>& traces, const Symbol& symbol);

}  // namespace passcheck::sym
