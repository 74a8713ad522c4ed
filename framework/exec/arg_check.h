// Checking a node's arguments against its operator schema before anything is dispatched:
// every constant and value must be of a kind the schema argument can take in a boxed
// call, and ints that encode an enum (dtype, layout, memory format, reduction, ...) must
// name one LibTorch 1.13 can run. LibTorch unpacks boxed arguments with internal
// asserts and indexes tables by these codes unchecked, so a wrong kind or an
// out-of-range code would otherwise crash or report "please report a bug to PyTorch".
// Used by the executor (before it runs anything) and the structural verifier.
#pragma once

#include "framework/ir/graph.h"

#include <ATen/core/function_schema.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace passcheck::exec {

/// The enum an int-coded schema argument holds, and the codes a graph may use.
struct EnumDomain {
  const char* what;   ///< "dtype", "layout", "memory format", "reduction", ...
  const char* valid;  ///< the valid codes with their names, for messages
  bool (*accepts)(int64_t code);
  /// Why an enum member that exists cannot be used ("a quantized dtype ..."); empty otherwise.
  std::string (*unusable)(int64_t code);
};

/// The enum `arg` of `op_name` ("aten::mse_loss") encodes, or nullptr for plain ints.
const EnumDomain* enum_domain(const c10::Argument& arg, const std::string& op_name);

/// "-1 is not a dtype (valid: ...)"; empty when `code` is valid.
std::string enum_problem(const EnumDomain& domain, int64_t code);

/// One argument (or the arity) of a node that does not fit the operator schema.
struct ArgumentProblem {
  std::optional<size_t> arg;  ///< the argument's position; nullopt for arity problems
  std::string message;        ///< "aten::_to_copy argument 'dtype': -1 is not a dtype (...)"
};

/// Every argument of `node` that `schema` cannot take: too many or missing arguments,
/// constants or values of the wrong kind, list elements of the wrong kind, enum codes
/// out of range. Values that carry an enum code are checked when the graph runs.
std::vector<ArgumentProblem> check_arguments(const ir::Node& node, const c10::FunctionSchema& schema);

/// check_arguments for many nodes of one operator: the schema's arguments classified once
/// (kind, enum domain), each node then checked against that. The schema must outlive it
/// (the dispatcher's schemas live as long as the process).
class SchemaChecker {
 public:
  SchemaChecker(const c10::FunctionSchema& schema, const std::string& op_name);
  ~SchemaChecker();
  SchemaChecker(SchemaChecker&&) noexcept;
  /// What check_arguments(node, schema) returns.
  std::vector<ArgumentProblem> check(const ir::Node& node) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

/// "file:line:col" of argument `arg` of `node` (of its operator without one), "line N"
/// when the graph has no file name, empty when the node was not parsed.
std::string source_location(const ir::Node& node, std::optional<size_t> arg = std::nullopt);

/// A problem prefixed with where it is: "g.txt:3:14: aten::_to_copy argument ...".
std::string located(const ir::Node& node, const ArgumentProblem& problem);

}  // namespace passcheck::exec
