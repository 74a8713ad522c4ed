// Selective activation-checkpoint policies (specs/passes.md "AC family"), as decisions
// over a stream of forward operators. Shared by the graph policy-tagging pass and the
// eager checkpoint oracle, so both checkpoint exactly the same operators.
#pragma once

#include "framework/ir/meta.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace passcheck::check {

enum class AcPolicyKind { Default, Eager, Full, Op };
/// "default", "eager", "full", "op"; throws std::invalid_argument otherwise.
AcPolicyKind parse_ac_policy(const std::string& name);
const char* to_string(AcPolicyKind kind);

/// "FQN_PATTERN::OP" selector of the full policy: fnmatch per FQN component, same
/// component count; OP is an operator base name ("mm") or "*".
struct OpSelector {
  std::vector<std::string> fqn_components;
  std::string op;
  /// Throws std::invalid_argument naming the selector when malformed.
  static OpSelector parse(const std::string& text);
  bool matches(const std::string& fqn, const std::string& op_base) const;
};

/// Operator base name: "aten::max.dim" -> "max", "_c10d_functional::all_to_all_single" ->
/// "all_to_all_single", "mm" -> "mm".
std::string op_base_name(const std::string& op);
/// op_base_name() as a view into `op` (no copy).
std::string_view op_base_view(std::string_view op);

/// Operators the default policy saves (matmuls, attention kernels, max, topk, scaled
/// mm, reduce_scatter, all_to_all; not all_gather). `op_base` is "mm", "bmm", ...
bool in_default_save_list(const std::string& op_base);
bool is_matmul_for_counting(const std::string& op_base);  ///< mm and linear
bool is_attention_kernel(const std::string& op_base);

/// Stateful decision over forward operators in execution order.
class AcPolicy {
 public:
  explicit AcPolicy(AcPolicyKind kind, std::vector<OpSelector> selectors = {});
  /// Decision for the next forward operator: base name, module FQN, AC region (layer)
  /// and whether it draws random numbers.
  ir::RecomputePolicy decide(std::string_view op_base, const std::string& fqn, std::optional<int64_t> layer,
                             bool is_random);
  AcPolicyKind kind() const { return kind_; }

 private:
  AcPolicyKind kind_;
  std::vector<OpSelector> selectors_;
  int64_t mm_count_ = 0;
  std::optional<int64_t> counted_layer_;
  std::optional<int64_t> add_seen_layer_;  // op policy: first add of each block is saved
  bool any_add_seen_ = false;
};

/// Layer index of a module FQN "layers.N..." (the AC region), nullopt outside layers.
std::optional<int64_t> layer_of(const std::string& fqn);

/// "layers.3.moe" -> {"layers", "3", "moe"}.
std::vector<std::string> split_fqn(const std::string& fqn);
/// The prefix of `fqn` that matches `pattern`, where '*' matches exactly one FQN
/// component: "layers.*" gives "layers.3" for "layers.3.moe.router", "layers.*.moe" gives
/// "layers.3.moe"; nullopt when no prefix matches. The chunk pass and the eager-chunked
/// oracle select the same modules through it.
std::optional<std::string> fqn_pattern_root(const std::string& fqn, const std::string& pattern);

}  // namespace passcheck::check
