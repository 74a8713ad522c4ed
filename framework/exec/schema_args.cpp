// IR argument <-> boxed IValue conversion driven by operator schemas.
#include "framework/exec/schema_args.h"

#include <ATen/ATen.h>
#include <ATen/ScalarOps.h>
#include <ATen/core/List.h>

#include <stdexcept>

#include <mutex>
#include <unordered_map>

namespace passcheck::exec {

namespace {
c10::TypePtr strip_optional(c10::TypePtr t) {
  if (auto opt = t->cast<c10::OptionalType>()) return opt->getElementType();
  return t;
}

// True for schema types that carry a plain or symbolic integer (int, SymInt).
bool is_int_type(const c10::TypePtr& t) {
  return t->kind() == c10::TypeKind::IntType || t->kind() == c10::TypeKind::SymIntType;
}

// The declared kind of an argument (a dtype, layout or memory format is declared as one
// and typed as int), optional stripped.
c10::TypeKind real_kind(const c10::Argument& a) { return strip_optional(a.real_type())->kind(); }
}  // namespace

SchemaArgKind classify(const c10::Argument& arg) {
  switch (real_kind(arg)) {
    case c10::TypeKind::ScalarTypeType: return SchemaArgKind::Dtype;
    case c10::TypeKind::LayoutType: return SchemaArgKind::Layout;
    case c10::TypeKind::MemoryFormatType: return SchemaArgKind::MemoryFormat;
    default: break;
  }
  c10::TypePtr t = strip_optional(arg.type());
  switch (t->kind()) {
    case c10::TypeKind::TensorType: return SchemaArgKind::Tensor;
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType: return SchemaArgKind::Int;
    case c10::TypeKind::FloatType: return SchemaArgKind::Float;
    case c10::TypeKind::BoolType: return SchemaArgKind::Bool;
    case c10::TypeKind::NumberType: return SchemaArgKind::Scalar;
    case c10::TypeKind::StringType: return SchemaArgKind::String;
    case c10::TypeKind::DeviceObjType: return SchemaArgKind::Device;
    case c10::TypeKind::GeneratorType: return SchemaArgKind::Generator;
    case c10::TypeKind::AnyType: return SchemaArgKind::Any;
    case c10::TypeKind::ListType: {
      c10::TypePtr elem = t->castRaw<c10::ListType>()->getElementType();
      if (elem->kind() == c10::TypeKind::TensorType) return SchemaArgKind::TensorList;
      if (auto opt = elem->cast<c10::OptionalType>())
        if (opt->getElementType()->kind() == c10::TypeKind::TensorType) return SchemaArgKind::OptionalTensorList;
      if (is_int_type(elem)) return SchemaArgKind::IntList;
      if (elem->kind() == c10::TypeKind::FloatType) return SchemaArgKind::FloatList;
      if (elem->kind() == c10::TypeKind::BoolType) return SchemaArgKind::BoolList;
      return SchemaArgKind::Other;
    }
    default: return SchemaArgKind::Other;
  }
}

namespace {
// Symbols only exist between symbolization and concretization; an executor never guesses a value.
std::string symbolic_left_message(const sym::Expr& e) {
  return "symbolic integer sym(" + e.to_string() + ") reached execution; run the concretize pass first";
}

[[noreturn]] void bad(const c10::Argument& schema_arg, const std::string& what) {
  throw std::invalid_argument("argument '" + schema_arg.name() + "' (" + schema_arg.type()->str() + "): " + what);
}
// A number constant in a Tensor slot is a scalar operand (`x * 0.5`): LibTorch's own
// "wrapped number" tensor, which type promotion treats as a scalar, so the graph computes
// in the dtype eager does (float32 * 0.5 stays float32).
at::Tensor wrapped_number(const ir::Arg& arg) {
  at::Tensor t = c10::scalar_to_tensor(arg.kind == ir::Arg::Kind::Bool  ? c10::Scalar(arg.b)
                                       : arg.kind == ir::Arg::Kind::Int ? c10::Scalar(arg.i)
                                                                        : c10::Scalar(arg.f));
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}
}  // namespace

c10::IValue to_ivalue(const ir::Arg& arg, const c10::Argument& schema_arg,
                      const std::function<const c10::IValue&(ir::Value*)>& value_of) {
  using K = ir::Arg::Kind;
  if (arg.kind == K::None) return c10::IValue();
  if (arg.kind == K::Value) return value_of(arg.value);
  SchemaArgKind kind = classify(schema_arg);
  if (kind == SchemaArgKind::Tensor && (arg.kind == K::Bool || arg.kind == K::Int || arg.kind == K::Float))
    return c10::IValue(wrapped_number(arg));
  switch (arg.kind) {
    case K::Bool: return c10::IValue(arg.b);
    case K::Int: return kind == SchemaArgKind::Float ? c10::IValue(static_cast<double>(arg.i)) : c10::IValue(arg.i);
    case K::Float: return c10::IValue(arg.f);
    case K::String: return c10::IValue(arg.str());
    case K::Dtype:
    case K::Layout:
    case K::MemoryFormat: return c10::IValue(arg.i);  // boxed calls carry these enums as ints
    case K::Device: return c10::IValue(arg.device);
    case K::List: break;
    case K::Sym: bad(schema_arg, symbolic_left_message(arg.expr()));
    default: bad(schema_arg, "unsupported constant");
  }
  switch (kind) {
    case SchemaArgKind::TensorList: {
      c10::List<at::Tensor> list;
      for (const ir::Arg& e : arg.list()) {
        if (!e.is_value()) bad(schema_arg, "Tensor[] element is not a value");
        list.push_back(value_of(e.value).toTensor());
      }
      return c10::IValue(list);
    }
    case SchemaArgKind::OptionalTensorList: {
      c10::List<c10::optional<at::Tensor>> list;
      for (const ir::Arg& e : arg.list()) {
        if (e.is_none()) list.push_back(c10::nullopt);
        else if (e.is_value()) list.push_back(value_of(e.value).toTensor());
        else bad(schema_arg, "Tensor?[] element is neither a value nor None");
      }
      return c10::IValue(list);
    }
    case SchemaArgKind::IntList: {
      std::vector<int64_t> v;
      for (const ir::Arg& e : arg.list()) {
        if (e.kind == K::Int) v.push_back(e.i);
        else if (e.is_value()) v.push_back(value_of(e.value).toInt());
        else if (e.is_symbolic()) bad(schema_arg, symbolic_left_message(e.expr()));
        else bad(schema_arg, "int[] element is not an int");
      }
      return c10::IValue(v);
    }
    case SchemaArgKind::FloatList: {
      std::vector<double> v;
      for (const ir::Arg& e : arg.list()) {
        if (e.kind == K::Float) v.push_back(e.f);
        else if (e.kind == K::Int) v.push_back(static_cast<double>(e.i));
        else bad(schema_arg, "float[] element is not a number");
      }
      return c10::IValue(v);
    }
    case SchemaArgKind::BoolList: {
      c10::List<bool> v;
      for (const ir::Arg& e : arg.list()) {
        if (e.kind != K::Bool) bad(schema_arg, "bool[] element is not a bool");
        v.push_back(e.b);
      }
      return c10::IValue(v);
    }
    default: bad(schema_arg, "a list was given for a non-list argument");
  }
}

namespace {

// Operators of these namespaces are registered by LibTorch's and passcheck's own static
// registrations and stay registered for the life of the process: their handles are
// looked up once per operator name (under the dispatcher's lock, a hash of the name) and
// kept. Operators of other namespaces (a Python extension's, a test's library fragment)
// can be deregistered, which would leave a kept handle dangling: looked up every time.
bool stays_registered(const std::string& qualified_op) {
  for (const char* ns : {"aten::", "prims::", "passcheck::", "torchtitan::", "_c10d_functional::", "c10d::"})
    if (qualified_op.rfind(ns, 0) == 0) return true;
  return false;
}

std::optional<c10::OperatorHandle> lookup_operator(const std::string& qualified_op) {
  auto dot = qualified_op.find('.');
  std::string name = dot == std::string::npos ? qualified_op : qualified_op.substr(0, dot);
  std::string overload = dot == std::string::npos ? "" : qualified_op.substr(dot + 1);
  auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!handle) return std::nullopt;
  return *handle;
}

}  // namespace

std::optional<c10::OperatorHandle> find_operator(const std::string& qualified_op) {
  if (!stays_registered(qualified_op)) return lookup_operator(qualified_op);
  // Found handles only: an operator registered later is found then.
  static std::mutex mutex;
  static std::unordered_map<std::string, c10::OperatorHandle>* found =
      new std::unordered_map<std::string, c10::OperatorHandle>();  // never destroyed: used until exit
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = found->find(qualified_op);
    if (it != found->end()) return it->second;
  }
  std::optional<c10::OperatorHandle> handle = lookup_operator(qualified_op);
  if (handle) {
    std::lock_guard<std::mutex> lock(mutex);
    found->emplace(qualified_op, *handle);
  }
  return handle;
}

}  // namespace passcheck::exec
