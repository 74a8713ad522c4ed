// The built-in passes by family (defined in passes/registry.cpp): which passes each
// directory under passes/ registers. `passcheck gate` maps changed files to families here.
#pragma once

#include <string>
#include <vector>

namespace passcheck::check {

/// A family of built-in passes: the directory under passes/ that holds them ("cleanup",
/// "ac", ...) and the registry names of its passes.
struct PassFamily {
  std::string name;
  std::vector<std::string> passes;
};

/// The built-in passes by family, in registration order.
std::vector<PassFamily> builtin_pass_families();

}  // namespace passcheck::check
