// Operator properties from the dispatcher's schemas and tags (op_properties.h).
// Answers are computed once per operator string and cached: DCE and CSE ask about
// every node of graphs with thousands of nodes. An operator the dispatcher does not
// know is assumed to mutate and to have side effects, so no pass deletes, merges or
// moves what it cannot reason about.
#include "framework/exec/op_properties.h"

#include "framework/exec/schema_args.h"

#include <ATen/core/enum_tag.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace passcheck::exec {

namespace {

struct OpProperties {
  bool known = false;
  bool mutating = false;
  bool aliases_input = false;
  bool random = false;
  bool collective = false;
  bool side_effects = false;
  bool uninitialized_allocation = false;
  bool async_assert = false;
  bool data_dependent_output_shape = false;  // has_data_dependent_output_shape(op_name)
  bool reads_device_data_on_host = false;    // reads_device_data_on_host(op_name)
  bool flop_formula = false;                 // has_flop_formula
  std::vector<size_t> written_args;  // schema argument positions the op writes
  /// Position of a `dropout_p` argument (the attention kernels): the op draws random
  /// numbers only when it is nonzero. -1 when the schema has none.
  int dropout_p_arg = -1;
};

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// RNG operators by base name, for builds whose schemas lack the
// nondeterministic_seeded tag on some of them.
bool is_random_by_name(const std::string& base) {
  static const char* const exact[] = {"bernoulli", "bernoulli_", "dropout", "dropout_", "native_dropout",
                                      "feature_dropout", "alpha_dropout", "feature_alpha_dropout", "normal",
                                      "normal_", "uniform_", "multinomial", "randperm", "exponential_",
                                      "geometric_", "cauchy_", "log_normal_", "random_"};
  for (const char* e : exact)
    if (base == e) return true;
  return starts_with(base, "rand") || starts_with(base, "rrelu");  // rand, rand_like, randn*, randint*
}

bool is_collective_name(const std::string& ns, const std::string&) {
  return ns == "c10d" || ns == "_c10d_functional" || ns == "c10d_functional";
}

bool is_async_assert_name(const std::string& ns, const std::string& base) {
  return ns == "aten" && (base == "_assert_async" || base == "_functional_assert_async");
}

bool flop_formula_of(const ir::Node& node) {
  if (node.op().rfind("aten::", 0) != 0) return false;
  const std::string base = node.op_base();
  static const char* const kMatmulLike[] = {"mm", "bmm", "addmm", "baddbmm", "convolution", "convolution_backward"};
  for (const char* m : kMatmulLike)
    if (base == m) return true;
  // _scaled_dot_product_{flash,efficient,cudnn}_attention[_backward], _flash_attention_forward, ...
  return base[0] == '_' && base.find("_attention") != std::string::npos;
}

OpProperties compute(const ir::Node& node) {
  OpProperties p;
  std::string name = node.op_name();
  std::string base = node.op_base();
  auto colon = name.find("::");
  std::string ns = colon == std::string::npos ? std::string() : name.substr(0, colon);

  p.data_dependent_output_shape = has_data_dependent_output_shape(name);
  p.reads_device_data_on_host = reads_device_data_on_host(name);
  p.flop_formula = flop_formula_of(node);
  p.collective = is_collective_name(ns, base);
  p.async_assert = is_async_assert_name(ns, base);
  static const char* const allocations[] = {"empty", "new_empty", "empty_strided", "new_empty_strided", "empty_like"};
  std::string overload = node.overload();
  for (const char* a : allocations)
    if (ns == "aten" && base == a) p.uninitialized_allocation = true;
  // empty.out writes its out argument; it is an allocation only in its functional forms.
  if (p.uninitialized_allocation && overload == "out") p.uninitialized_allocation = false;

  // A subgraph call is as pure as its body, which this per-operator cache cannot see:
  // it is treated like an unknown operator (may write, alias and draw anything).
  const bool opaque_call = ns == "passcheck" && base == "invoke_subgraph";
  std::optional<c10::OperatorHandle> op = opaque_call ? std::nullopt : find_operator(node.op());
  if (op) {
    p.known = true;
    const c10::FunctionSchema& schema = op->schema();
    for (size_t i = 0; i < schema.arguments().size(); ++i) {
      const c10::Argument& a = schema.arguments()[i];
      if (a.alias_info() && a.alias_info()->isWrite()) {
        p.mutating = true;
        p.written_args.push_back(i);
      }
    }
    for (const c10::Argument& r : schema.returns())
      if (r.alias_info()) p.aliases_input = true;
    for (size_t i = 0; i < schema.arguments().size(); ++i)
      if (schema.arguments()[i].name() == "dropout_p") p.dropout_p_arg = static_cast<int>(i);
    p.random = op->hasTag(at::Tag::nondeterministic_seeded) || is_random_by_name(base);
  } else {
    // Conservative: nothing may be removed, merged or assumed pure.
    p.mutating = true;
    p.aliases_input = true;
    p.random = opaque_call || is_random_by_name(base);
  }
  p.side_effects = p.mutating || (ns == "passcheck" && base.find("rng_state") != std::string::npos) ||
                   (ns == "aten" && base == "print");
  if (p.async_assert) {
    // An assert reads its input and writes nothing: pure for dead-code elimination,
    // even in builds whose dispatcher lacks the functional variant.
    p.side_effects = false;
    p.mutating = false;
    p.aliases_input = false;
  }
  return p;
}

const std::pair<const std::string, OpProperties>& lookup_shared(const ir::Node& node) {
  static std::mutex mutex;
  static std::unordered_map<std::string, OpProperties> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(node.op());
  if (it == cache.end()) it = cache.emplace(node.op(), compute(node)).first;
  return *it;  // unordered_map references stay valid across inserts
}

// Every pass asks about every node several times: a per-thread direct-mapped cache in
// front of the shared, locked one, keyed by the address of the node's operator name (one
// interned string per name, ir::intern_operator), so a hit reads neither the name nor the
// shared table. Entries point into the shared cache, whose elements never move or die.
const OpProperties& properties(const ir::Node& node) {
  struct Entry {
    const std::string* key = nullptr;
    const OpProperties* props = nullptr;
  };
  constexpr size_t kSlots = 512;
  thread_local Entry slots[kSlots];
  const std::string* op = &node.op();
  Entry& e = slots[(reinterpret_cast<uintptr_t>(op) >> 4) & (kSlots - 1)];
  if (e.key == op) return *e.props;
  const auto& shared = lookup_shared(node);
  e.key = op;
  e.props = &shared.second;
  return shared.second;
}

}  // namespace

bool is_mutating(const ir::Node& node) { return properties(node).mutating; }
bool aliases_input(const ir::Node& node) { return properties(node).aliases_input; }
bool is_random(const ir::Node& node) {
  const OpProperties& p = properties(node);
  if (!p.random || p.dropout_p_arg < 0) return p.random;
  // scaled_dot_product_attention's kernels carry the nondeterministic_seeded tag for
  // their dropout; with dropout_p 0 (or left at its default 0) they draw nothing.
  const size_t i = static_cast<size_t>(p.dropout_p_arg);
  if (i >= node.num_args()) return false;
  const ir::Arg& a = node.arg(i);
  if (a.kind == ir::Arg::Kind::Float) return a.f != 0.0;
  if (a.kind == ir::Arg::Kind::Int) return a.i != 0;
  return true;  // a value or symbol: it may be nonzero
}
bool is_collective(const ir::Node& node) { return properties(node).collective; }
bool has_side_effects(const ir::Node& node) { return properties(node).side_effects; }
bool is_uninitialized_allocation(const ir::Node& node) { return properties(node).uninitialized_allocation; }
bool is_async_assert(const ir::Node& node) { return properties(node).async_assert; }

bool has_flop_formula(const ir::Node& node) { return properties(node).flop_formula; }
bool has_data_dependent_output_shape(const ir::Node& node) { return properties(node).data_dependent_output_shape; }
bool reads_device_data_on_host(const ir::Node& node) { return properties(node).reads_device_data_on_host; }

std::optional<std::vector<ir::Value*>> written_values(const ir::Node& node) {
  const OpProperties& p = properties(node);
  if (!p.known) return std::nullopt;
  std::vector<ir::Value*> out;
  for (size_t i : p.written_args)
    if (i < node.num_args()) node.arg(i).for_each_value([&](ir::Value* v) { out.push_back(v); });
  return out;
}

bool has_data_dependent_output_shape(const std::string& op_name) {
  static const char* const kOps[] = {"aten::nonzero",       "aten::nonzero_numpy",    "aten::argwhere",
                                     "aten::masked_select", "aten::_unique",          "aten::_unique2",
                                     "aten::unique_dim",    "aten::unique_consecutive", "aten::unique_dim_consecutive",
                                     "aten::repeat_interleave", "aten::bincount"};
  for (const char* op : kOps)
    if (op_name == op) return true;
  return false;
}

bool reads_device_data_on_host(const std::string& op_name) {
  return op_name == "aten::_local_scalar_dense" || op_name == "aten::item" || op_name == "aten::is_nonzero" ||
         op_name == "aten::equal" || op_name == "passcheck::grouped_mm" || op_name == "passcheck::grouped_mm_weight_grad";
}

}  // namespace passcheck::exec
