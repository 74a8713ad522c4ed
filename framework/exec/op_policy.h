// Operators a graph file may not run. Graph and repro files arrive with bug reports and
// are replayed by someone who did not write them, so a graph may compute but never reach
// outside the process: no file opened by a name the graph holds, no process- or
// device-wide state changed (seeds, the current device, profiler or FFT-plan caches), no
// output written where the command line did not say. LibTorch also has operators that
// skip their own input checks on request (`unsafe=True`) or by design (the `_unsafe`
// sparse constructors); given a graph's arguments they read and write out of bounds, so
// they are refused too. The executor and the structural verifier both apply this policy,
// so a refused operator never reaches the dispatcher. docs/security.md lists the table.
#pragma once

#include "framework/exec/arg_check.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace passcheck::exec {

/// One row of the refusal table: an operator ("aten::from_file"), every operator of a
/// namespace ("symm_mem::*"), or an argument rule ("*(unsafe=True)").
struct RefusedOperator {
  const char* pattern;
  const char* effect;  ///< "file system", "process state", "device state", "unchecked"
  const char* reason;  ///< why, in the words of the error message
};

/// The whole table, in the order docs/security.md lists it.
const std::vector<RefusedOperator>& refused_operators();

/// Why `node` may not run (the message names the operator, the effect and the flag or
/// argument), or nullopt. `schema` may be null for an operator LibTorch does not know:
/// refusal by name does not need it.
std::optional<ArgumentProblem> refusal(const ir::Node& node, const c10::FunctionSchema* schema);

/// refusal() in halves, for a caller that asks about many nodes of one operator (the
/// verifier's per-operator schema checkers): what the operator's name alone refuses
/// (`op_name` without the overload)...
std::optional<ArgumentProblem> refusal_by_name(std::string_view op_name);
/// ...and the position of the schema's `unsafe` argument, refused when True (nullopt: none).
std::optional<size_t> unsafe_argument(const c10::FunctionSchema& schema);
/// The refusal of `node` (operator `op_name`) when its argument at `unsafe` (from
/// unsafe_argument) is True; nullopt otherwise.
std::optional<ArgumentProblem> unsafe_refusal(const ir::Node& node, std::string_view op_name,
                                              std::optional<size_t> unsafe);

}  // namespace passcheck::exec
