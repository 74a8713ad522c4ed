// Schema checks of a parsed graph (schema_check.h). Kinds are compared through the
// schema's return types: Scalar returns may be declared int, float or bool, Tensor and
// optional returns may also be None, a single list return spreads over the node's outputs, and a
// return type the IR has no kind for (str, complex, ...) is not judged.
#include "framework/check/schema_check.h"

#include "framework/exec/passcheck_ops.h"
#include "framework/exec/schema_args.h"
#include "framework/ir/text.h"

#include <algorithm>
#include <stdexcept>

namespace passcheck::check {

namespace {

using ir::ValueType;

// The value kinds a schema type can produce; empty when the IR has no kind for it.
std::vector<ValueType> kinds_of(const c10::TypePtr& type) {
  switch (type->kind()) {
    // The tracer records an undefined tensor (a backward op's masked-off gradient) as None.
    case c10::TypeKind::TensorType: return {ValueType::Tensor, ValueType::None};
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType: return {ValueType::Int};
    case c10::TypeKind::FloatType: return {ValueType::Float};
    case c10::TypeKind::BoolType: return {ValueType::Bool};
    case c10::TypeKind::NoneType: return {ValueType::None};
    case c10::TypeKind::NumberType: return {ValueType::Int, ValueType::Float, ValueType::Bool};
    case c10::TypeKind::OptionalType: {
      std::vector<ValueType> kinds = kinds_of(type->castRaw<c10::OptionalType>()->getElementType());
      if (!kinds.empty() && std::find(kinds.begin(), kinds.end(), ValueType::None) == kinds.end())
        kinds.push_back(ValueType::None);
      return kinds;
    }
    default: return {};
  }
}

std::string kinds_text(const std::vector<ValueType>& kinds) {
  std::string out;
  for (size_t i = 0; i < kinds.size(); ++i) out += (i ? (i + 1 == kinds.size() ? " or " : ", ") : "") + std::string(ir::to_string(kinds[i]));
  return out;
}

std::string where(const std::string& source, int line, int column) {
  return source + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
}

std::string where(const std::string& source, const ir::Node& node) {
  if (node.source_line > 0) return where(source, node.source_line, node.source_column);
  return source + ": in `" + ir::print_node(node) + "`: ";
}

std::string where(const std::string& source, const ir::Value& value) {
  if (value.source_line > 0) return where(source, value.source_line, value.source_column);
  return where(source, *value.producer());
}

void check_node(const ir::Node& node, const std::string& source, std::vector<std::string>& problems) {
  const std::optional<c10::OperatorHandle> handle = exec::find_operator(node.op());
  if (!handle) {
    const std::string renamed = exec::former_operator_message(node.op());
    problems.push_back(where(source, node) + (renamed.empty() ? "unknown operator '" + node.op() + "'" : renamed));
    return;
  }
  const c10::FunctionSchema& schema = handle->schema();
  const auto& arguments = schema.arguments();
  if (node.num_args() > arguments.size()) {
    problems.push_back(where(source, node) + node.op() + " takes " + std::to_string(arguments.size()) +
                       " arguments but " + std::to_string(node.num_args()) + " were given");
    return;
  }
  for (size_t i = node.num_args(); i < arguments.size(); ++i)
    if (!arguments[i].default_value()) {
      problems.push_back(where(source, node) + "missing argument '" + arguments[i].name() + "' of " + node.op());
      return;
    }
  const auto& returns = schema.returns();
  const bool returns_list = returns.size() == 1 && returns[0].type()->kind() == c10::TypeKind::ListType;
  if (!returns_list && returns.size() != node.num_outputs()) {
    problems.push_back(where(source, node) + node.op() + " returns " + std::to_string(returns.size()) +
                       " value(s) but the node defines " + std::to_string(node.num_outputs()));
    return;
  }
  for (size_t i = 0; i < node.num_outputs(); ++i) {
    const c10::TypePtr type =
        returns_list ? returns[0].type()->castRaw<c10::ListType>()->getElementType() : returns[i].type();
    const std::vector<ValueType> kinds = kinds_of(type);
    const ir::Value& out = *node.output(i);
    if (kinds.empty() || std::find(kinds.begin(), kinds.end(), out.type()) != kinds.end()) continue;
    problems.push_back(where(source, out) + node.op() + " returns " + kinds_text(kinds) + " but output %" + out.name() +
                       " is declared " + ir::to_string(out.type()));
  }
}

}  // namespace

std::vector<std::string> schema_problems(const ir::Graph& graph, const std::string& source) {
  exec::ensure_passcheck_ops_registered();
  std::vector<std::string> problems;
  for (const ir::Node* node : graph.nodes()) check_node(*node, source, problems);
  return problems;
}

void check_against_schemas(const ir::Graph& graph, const std::string& source) {
  const std::vector<std::string> problems = schema_problems(graph, source);
  if (problems.empty()) return;
  std::string message = problems.front();
  if (problems.size() > 1) message += " (+" + std::to_string(problems.size() - 1) + " more)";
  throw std::invalid_argument(message);
}

}  // namespace passcheck::check
