// The refusal table (op_policy.h). Names come from LibTorch's operator registry: every
// operator whose schema takes a file name, changes state outside the graph's values, or
// documents itself as unchecked.
#include "framework/exec/op_policy.h"

#include <string_view>

namespace passcheck::exec {

namespace {

constexpr const char* kUnsafeArgument = "*(unsafe=True)";

// Views, not strings: the verifier and the executor ask this of every node.
bool matches(std::string_view op, std::string_view p) {
  if (p.size() > 3 && p.substr(p.size() - 3) == "::*") return op.substr(0, p.size() - 1) == p.substr(0, p.size() - 1);
  return op == p;
}

}  // namespace

const std::vector<RefusedOperator>& refused_operators() {
  static const std::vector<RefusedOperator> table = {
      {"aten::from_file", "file system", "maps a file the graph names (shared=True writes through to it)"},
      {"aten::save", "file system", "writes a file the graph names"},
      {"debugprims::*", "file system", "loads tensors from files by name"},
      {"aten::_print", "process output", "writes to the process's standard output"},
      {"aten::manual_seed", "process state", "reseeds the process's default generator"},
      {"aten::set_grad_enabled", "process state", "switches autograd for the whole thread"},
      {"aten::_cufft_set_plan_cache_max_size", "device state", "resizes a device's FFT plan cache"},
      {"aten::_cufft_clear_plan_cache", "device state", "clears a device's FFT plan cache"},
      {"cuda::*", "device state", "sets the current device or synchronizes it"},
      {"profiler::*", "process state", "starts and stops the process's profiler ranges"},
      {"prim::*", "process state", "TorchScript interpreter operators (remote calls, threads, the interpreter's state)"},
      {"symm_mem::*", "device state", "symmetric-memory operators share device memory across processes"},
      {"aten::_sparse_coo_tensor_unsafe", "unchecked", "builds a sparse tensor without checking its indices"},
      {"aten::_sparse_compressed_tensor_unsafe", "unchecked", "builds a sparse tensor without checking its indices"},
      {"aten::_sparse_csr_tensor_unsafe", "unchecked", "builds a sparse tensor without checking its indices"},
      {"aten::_sparse_csc_tensor_unsafe", "unchecked", "builds a sparse tensor without checking its indices"},
      {"aten::_sparse_bsr_tensor_unsafe", "unchecked", "builds a sparse tensor without checking its indices"},
      {"aten::_sparse_bsc_tensor_unsafe", "unchecked", "builds a sparse tensor without checking its indices"},
      {kUnsafeArgument, "unchecked",
       "skips the operator's bounds checks (segment_reduce, _index_put_impl_): indices past the data read and "
       "write out of bounds"},
  };
  return table;
}

namespace {
// The table's operator patterns as views, measured once: the verifier asks refusal() of
// every node, and measuring each pattern's length per node was a fifth of the question.
struct PatternView {
  std::string_view pattern;
  const RefusedOperator* row;
};
const std::vector<PatternView>& operator_patterns() {
  static const std::vector<PatternView> views = [] {
    std::vector<PatternView> out;
    for (const RefusedOperator& row : refused_operators())
      if (row.pattern != kUnsafeArgument) out.push_back({row.pattern, &row});
    return out;
  }();
  return views;
}
}  // namespace

std::optional<ArgumentProblem> refusal_by_name(std::string_view op) {
  for (const PatternView& view : operator_patterns()) {
    if (!matches(op, view.pattern)) continue;
    const RefusedOperator& row = *view.row;
    return ArgumentProblem{std::nullopt, std::string(op) + " is refused (" + row.effect + "): it " + row.reason +
                                             "; a graph may not reach outside passcheck's process (docs/security.md)"};
  }
  return std::nullopt;
}

std::optional<size_t> unsafe_argument(const c10::FunctionSchema& schema) {
  const auto& args = schema.arguments();
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name() == "unsafe") return i;
  return std::nullopt;
}

std::optional<ArgumentProblem> unsafe_refusal(const ir::Node& node, std::string_view op, std::optional<size_t> unsafe) {
  if (!unsafe || *unsafe >= node.num_args()) return std::nullopt;
  const ir::Arg& a = node.arg(*unsafe);
  if (a.kind != ir::Arg::Kind::Bool || !a.b) return std::nullopt;
  return ArgumentProblem{*unsafe, std::string(op) + " argument 'unsafe': True is refused (unchecked): it skips the "
                                      "operator's bounds checks, so the graph's indices could read and write out of "
                                      "bounds (docs/security.md)"};
}

std::optional<ArgumentProblem> refusal(const ir::Node& node, const c10::FunctionSchema* schema) {
  const std::string_view op = std::string_view(node.op()).substr(0, node.op().find('.'));
  if (std::optional<ArgumentProblem> refused = refusal_by_name(op)) return refused;
  if (schema == nullptr) return std::nullopt;
  return unsafe_refusal(node, op, unsafe_argument(*schema));
}

}  // namespace passcheck::exec
