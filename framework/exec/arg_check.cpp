// Schema checks of node arguments (arg_check.h). The accepted kinds mirror what
// to_ivalue (schema_args.cpp) converts and what LibTorch's boxed unpacking takes
// without an internal assert: an int where a float is expected is converted, a bool
// where an int is expected is not.
#include "framework/exec/arg_check.h"

#include "framework/exec/op_policy.h"
#include "framework/exec/schema_args.h"
#include "framework/ir/text.h"

#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

#include <sstream>

namespace passcheck::exec {

namespace {

// ---- enum domains (c10/core/ScalarType.h, Layout.h, MemoryFormat.h) ----------------------
// A graph's types can name the twelve dtypes below. The others LibTorch numbers
// (ComplexHalf with almost no CPU kernels, the quantized ones that need a quantizer, the
// float8 / float4 / sub-byte and unsigned 16-64 bit types with few kernels) cannot be
// held by a graph value, so an argument naming them is refused before LibTorch sees it.
bool runnable_dtype(int64_t code) {
  switch (code) {
    case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7:  // uint8 .. float64
    case 9: case 10: case 11:                                       // complex64, complex128, bool
    case 15: return true;                                           // bfloat16
    default: return false;
  }
}
std::string dtype_unusable(int64_t code) {
  if (code < 0 || code >= static_cast<int64_t>(c10::ScalarType::NumOptions)) return "";
  auto t = static_cast<c10::ScalarType>(code);
  if (t == c10::ScalarType::ComplexHalf) return "complex32 (ComplexHalf), which graphs cannot hold";
  if (c10::isQIntType(t)) return std::string("the quantized dtype ") + c10::toString(t) + ", which graphs cannot hold";
  return std::string("the dtype ") + c10::toString(t) + ", which graphs cannot hold";
}
// Only dense strided tensors: graph types describe sizes and strides, nothing else.
bool strided_layout(int64_t code) { return code == static_cast<int64_t>(c10::Layout::Strided); }
std::string layout_unusable(int64_t code) {
  if (code <= 0 || code >= static_cast<int64_t>(c10::Layout::NumOptions)) return "";
  std::ostringstream os;
  os << "the layout " << static_cast<c10::Layout>(code) << ", which graphs cannot hold (dense strided tensors only)";
  return os.str();
}
bool memory_format(int64_t code) { return code >= 0 && code < static_cast<int64_t>(c10::MemoryFormat::NumOptions); }
std::string none_unusable(int64_t) { return ""; }
template <int64_t N>
bool below(int64_t code) {
  return code >= 0 && code < N;
}

const EnumDomain kDtype{"dtype",
                        "0-7, 9-11, 15: uint8, int8, int16, int32, int64, float16, float32, float64, complex64, "
                        "complex128, bool, bfloat16",
                        &runnable_dtype, &dtype_unusable};
const EnumDomain kLayout{"layout", "0: strided", &strided_layout, &layout_unusable};
const EnumDomain kMemoryFormat{"memory format", "0-3: contiguous, preserve, channels_last, channels_last_3d",
                               &memory_format, &none_unusable};
// at::Reduction (ATen/core/Reduction.h): None, Mean, Sum.
const EnumDomain kReduction{"reduction", "0-2: none, mean, sum", &below<3>, &none_unusable};
// at::native::GridSamplerInterpolation and GridSamplerPadding.
const EnumDomain kInterpolation{"grid sampler interpolation mode", "0-2: bilinear, nearest, bicubic", &below<3>,
                                &none_unusable};
const EnumDomain kPadding{"grid sampler padding mode", "0-2: zeros, border, reflection", &below<3>, &none_unusable};
// embedding_bag's mode (sum, mean, max) and _pad_enum's at::padding_mode.
const EnumDomain kBagMode{"embedding_bag mode", "0-2: sum, mean, max", &below<3>, &none_unusable};
const EnumDomain kPadMode{"padding mode", "0-3: constant, reflect, replicate, circular", &below<4>, &none_unusable};

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

bool optional_type(const c10::Argument& a) {
  return a.type()->kind() == c10::TypeKind::OptionalType || a.type()->kind() == c10::TypeKind::NoneType;
}

const char* value_kind(ir::ValueType t) {
  switch (t) {
    case ir::ValueType::Tensor: return "a Tensor value";
    case ir::ValueType::Int: return "an int value";
    case ir::ValueType::Float: return "a float value";
    case ir::ValueType::Bool: return "a bool value";
    case ir::ValueType::None: return "a None value";
  }
  return "a value";
}

std::string constant_kind(const ir::Arg& a) {
  using K = ir::Arg::Kind;
  switch (a.kind) {
    case K::None: return "None";
    case K::Bool: return std::string("the bool ") + (a.b ? "True" : "False");
    case K::Int: return "the int " + std::to_string(a.i);
    case K::Float: return "a float";
    case K::String: return "a string";
    case K::Dtype: return "a dtype";
    case K::Device: return "a device";
    case K::Layout: return "a layout";
    case K::MemoryFormat: return "a memory format";
    case K::Value: return value_kind(a.value->type());
    case K::List: return "a list";
    case K::Sym: return "a symbolic int";
  }
  return "a constant";
}

// Checks one argument against one schema argument; "" when it fits.
class ArgChecker {
 public:
  ArgChecker(const c10::Argument& schema_arg, const std::string& op)
      : schema_arg_(schema_arg), kind_(classify(schema_arg)), domain_(enum_domain(schema_arg, op)) {}

  std::string check(const ir::Arg& a) const {
    using K = ir::Arg::Kind;
    // `Any` takes whatever the operator's kernel makes of it (it checks the value itself).
    if (kind_ == SchemaArgKind::Any) return "";
    if (a.kind == K::None) return optional_type(schema_arg_) ? "" : "None for an argument that cannot be None";
    if (a.kind == K::Value) return check_value(a.value->type());
    if (a.kind == K::List) return check_list(a);
    // A symbolic int stands for an integer (concretize substitutes it), so it fits an
    // int, a Scalar (div.Scalar by a symbolic extent) and a wrapped-number Tensor slot.
    if (a.kind == K::Sym)
      return kind_ == SchemaArgKind::Int || kind_ == SchemaArgKind::Scalar || kind_ == SchemaArgKind::Tensor ? "" : wrong(a);
    switch (kind_) {
      case SchemaArgKind::Tensor:
        return a.kind == K::Bool || a.kind == K::Int || a.kind == K::Float ? "" : wrong(a);
      case SchemaArgKind::Int:
        if (a.kind != K::Int) return wrong(a);
        return domain_ ? enum_problem(*domain_, a.i) : "";
      case SchemaArgKind::Float: return a.kind == K::Int || a.kind == K::Float ? "" : wrong(a);
      case SchemaArgKind::Bool: return a.kind == K::Bool ? "" : wrong(a);
      case SchemaArgKind::Scalar: return a.kind == K::Bool || a.kind == K::Int || a.kind == K::Float ? "" : wrong(a);
      case SchemaArgKind::String: return a.kind == K::String ? "" : wrong(a);
      case SchemaArgKind::Device: return a.kind == K::Device ? "" : wrong(a);
      case SchemaArgKind::Dtype: return coded(a, K::Dtype);
      case SchemaArgKind::Layout: return coded(a, K::Layout);
      case SchemaArgKind::MemoryFormat: return coded(a, K::MemoryFormat);
      default: return wrong(a);
    }
  }

  /// The enum a value-carried int must be checked against at run time.
  const EnumDomain* domain() const { return domain_; }

 private:
  std::string wrong(const ir::Arg& a) const { return constant_kind(a) + " where " + expected() + " is expected"; }
  // The schema's own spelling (real_type: ScalarType, not the int a boxed call carries).
  std::string expected() const { return "`" + schema_arg_.real_type()->str() + "`"; }

  // Enum arguments take their own constant kind or a plain int code.
  std::string coded(const ir::Arg& a, ir::Arg::Kind own) const {
    if (a.kind != own && a.kind != ir::Arg::Kind::Int) return wrong(a);
    return domain_ ? enum_problem(*domain_, a.i) : "";
  }

  std::string check_value(ir::ValueType t) const {
    using T = ir::ValueType;
    bool fits = false;
    switch (kind_) {
      case SchemaArgKind::Tensor: fits = t == T::Tensor; break;
      case SchemaArgKind::Int:
      case SchemaArgKind::Dtype:
      case SchemaArgKind::Layout:
      case SchemaArgKind::MemoryFormat: fits = t == T::Int; break;
      case SchemaArgKind::Float: fits = t == T::Float; break;
      case SchemaArgKind::Bool: fits = t == T::Bool; break;
      case SchemaArgKind::Scalar: fits = t == T::Int || t == T::Float || t == T::Bool; break;
      default: break;
    }
    if (t == T::None) fits = optional_type(schema_arg_);
    return fits ? "" : std::string(value_kind(t)) + " where " + expected() + " is expected";
  }

  std::string check_list(const ir::Arg& a) const {
    using K = ir::Arg::Kind;
    using T = ir::ValueType;
    for (size_t i = 0; i < a.list().size(); ++i) {
      const ir::Arg& e = a.list()[i];
      bool fits = false;
      switch (kind_) {
        case SchemaArgKind::TensorList: fits = e.is_value() && e.value->type() == T::Tensor; break;
        case SchemaArgKind::OptionalTensorList:
          fits = e.is_none() || (e.is_value() && (e.value->type() == T::Tensor || e.value->type() == T::None));
          break;
        case SchemaArgKind::IntList:
          fits = e.kind == K::Int || e.kind == K::Sym || (e.is_value() && e.value->type() == T::Int);
          break;
        case SchemaArgKind::FloatList: fits = e.kind == K::Int || e.kind == K::Float; break;
        case SchemaArgKind::BoolList: fits = e.kind == K::Bool; break;
        default: return "a list where " + expected() + " is expected";
      }
      if (!fits)
        return "element " + std::to_string(i) + " is " + constant_kind(e) + " where " + expected() + " is expected";
    }
    return "";
  }

  const c10::Argument& schema_arg_;
  SchemaArgKind kind_;
  const EnumDomain* domain_;
};

}  // namespace

const EnumDomain* enum_domain(const c10::Argument& arg, const std::string& op_name) {
  switch (classify(arg)) {
    case SchemaArgKind::Dtype: return &kDtype;
    case SchemaArgKind::Layout: return &kLayout;
    case SchemaArgKind::MemoryFormat: return &kMemoryFormat;
    case SchemaArgKind::Int: break;
    default: return nullptr;
  }
  const std::string& name = arg.name();
  if (name == "reduction") return &kReduction;
  if (contains(op_name, "grid_sampler") && name == "interpolation_mode") return &kInterpolation;
  if (contains(op_name, "grid_sampler") && name == "padding_mode") return &kPadding;
  if (contains(op_name, "embedding_bag") && name == "mode") return &kBagMode;
  if (contains(op_name, "_pad_enum") && name == "mode") return &kPadMode;
  return nullptr;
}

std::string enum_problem(const EnumDomain& domain, int64_t code) {
  if (domain.accepts(code)) return "";
  std::string unusable = domain.unusable(code);
  std::string what = unusable.empty() ? std::string("not a ") + domain.what : unusable;
  return std::to_string(code) + " is " + what + " (valid " + domain.what + " codes: " + domain.valid +
         "; see docs/graph-format.md, Limits and validation)";
}

struct SchemaChecker::Compiled {
  const c10::FunctionSchema& schema;
  std::string op_name;
  std::vector<ArgChecker> checkers;  // one per schema argument
  // refusal(), decided once for the operator: by its name, and where `unsafe` sits.
  std::optional<ArgumentProblem> refused;
  std::optional<size_t> unsafe;
};

SchemaChecker::SchemaChecker(const c10::FunctionSchema& schema, const std::string& op_name)
    : compiled_(std::make_unique<Compiled>(Compiled{schema, op_name, {}, refusal_by_name(op_name), unsafe_argument(schema)})) {
  compiled_->checkers.reserve(schema.arguments().size());
  for (const c10::Argument& a : schema.arguments()) compiled_->checkers.emplace_back(a, op_name);
}

SchemaChecker::~SchemaChecker() = default;
SchemaChecker::SchemaChecker(SchemaChecker&&) noexcept = default;

std::vector<ArgumentProblem> SchemaChecker::check(const ir::Node& node) const {
  const c10::FunctionSchema& schema = compiled_->schema;
  std::vector<ArgumentProblem> problems;
  // As refusal(node, &schema), from what the operator decided once.
  if (compiled_->refused) return {*compiled_->refused};
  if (std::optional<ArgumentProblem> refused = unsafe_refusal(node, compiled_->op_name, compiled_->unsafe))
    return {*refused};
  const auto& schema_args = schema.arguments();
  if (node.num_args() > schema_args.size()) {
    problems.push_back({std::nullopt, node.op() + " takes " + std::to_string(schema_args.size()) +
                                          " arguments but " + std::to_string(node.num_args()) + " were given"});
    return problems;
  }
  for (size_t i = 0; i < schema_args.size(); ++i) {
    const c10::Argument& schema_arg = schema_args[i];
    if (i >= node.num_args()) {
      if (!schema_arg.default_value())
        problems.push_back({std::nullopt, "missing argument '" + schema_arg.name() + "' of " + node.op()});
      continue;
    }
    std::string problem = compiled_->checkers[i].check(node.arg(i));
    if (!problem.empty())
      problems.push_back({i, node.op() + " argument '" + schema_arg.name() + "': " + problem});
  }
  return problems;
}

std::vector<ArgumentProblem> check_arguments(const ir::Node& node, const c10::FunctionSchema& schema) {
  return SchemaChecker(schema, node.op_name()).check(node);
}

std::string source_location(const ir::Node& node, std::optional<size_t> arg) {
  if (node.source_line <= 0) return "";
  ir::SourcePos pos{node.source_line, 0};
  if (arg && *arg < node.source_args().size()) pos = node.source_args()[*arg];
  else if (node.source_op().line > 0) pos = node.source_op();
  const ir::Graph* g = node.graph();
  if (g == nullptr || g->source_name.empty()) return "line " + std::to_string(pos.line);
  return g->source_name + ":" + std::to_string(pos.line) + (pos.column > 0 ? ":" + std::to_string(pos.column) : "");
}

std::string located(const ir::Node& node, const ArgumentProblem& problem) {
  std::string where = source_location(node, problem.arg);
  return where.empty() ? problem.message + " in node `" + ir::print_node(node) + "`" : where + ": " + problem.message;
}

}  // namespace passcheck::exec
