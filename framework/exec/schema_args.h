// Conversion between IR arguments (ir::Arg) and the boxed IValues an operator schema
// takes or returns. Shared by the tracer (IValue -> Arg when recording) and the
// executor (Arg -> IValue when running), so both agree on every schema type.
#pragma once

#include "framework/ir/graph.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

#include <functional>
#include <string>

namespace passcheck::exec {

/// How a schema argument is represented in a boxed call.
enum class SchemaArgKind {
  Tensor,
  TensorList,          // Tensor[]
  OptionalTensorList,  // Tensor?[]
  Int,
  Float,
  Bool,
  Scalar,
  String,
  Dtype,
  Layout,
  MemoryFormat,
  Device,
  IntList,
  FloatList,
  BoolList,
  Generator,
  Any,  // `Any` (torch 2.15 types the group of a functional collective so: a name or a group)
  Other,
};

/// Classifies a schema argument (optional wrappers stripped).
SchemaArgKind classify(const c10::Argument& arg);

/// Converts one IR argument to the IValue the schema argument expects. Values are
/// looked up through `value_of`. Throws std::invalid_argument naming the argument.
c10::IValue to_ivalue(const ir::Arg& arg, const c10::Argument& schema_arg,
                      const std::function<const c10::IValue&(ir::Value*)>& value_of);

/// Resolves "aten::split.Tensor" through the dispatcher; nullopt when unknown.
std::optional<c10::OperatorHandle> find_operator(const std::string& qualified_op);

}  // namespace passcheck::exec
