// Selective activation-checkpoint policies (specs/passes.md "Activation checkpointing
// family"): the save lists, the "FQN_PATTERN::OP" selectors of the full policy, and the
// stateful per-operator decision of the default, eager, full and op policies. The graph
// tagging pass and the eager checkpoint oracle both feed operators through AcPolicy in
// forward execution order, so the counters (eager's per-layer mm counter, op's global one)
// advance identically on both sides.
#include "framework/check/ac_policy.h"

#include <fnmatch.h>

#include <cctype>
#include <functional>
#include <stdexcept>
#include <unordered_set>

namespace passcheck::check {

// Callers may pass qualified names; the lists compare base names in any namespace.
std::string op_base_name(const std::string& op) {
  std::string name = op;
  auto colon = name.rfind("::");
  if (colon != std::string::npos) name = name.substr(colon + 2);
  auto dot = name.find('.');
  if (dot != std::string::npos) name = name.substr(0, dot);
  return name;
}

std::string_view op_base_view(std::string_view name) {
  auto colon = name.rfind("::");
  if (colon != std::string_view::npos) name = name.substr(colon + 2);
  auto dot = name.find('.');
  if (dot != std::string_view::npos) name = name.substr(0, dot);
  return name;
}

std::vector<std::string> split_fqn(const std::string& fqn) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = fqn.find('.', start);
    parts.push_back(fqn.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

std::optional<std::string> fqn_pattern_root(const std::string& fqn, const std::string& pattern) {
  if (fqn.empty() || pattern.empty()) return std::nullopt;
  const std::vector<std::string> parts = split_fqn(fqn);
  const std::vector<std::string> want = split_fqn(pattern);
  if (parts.size() < want.size()) return std::nullopt;
  std::string root;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] != "*" && want[i] != parts[i]) return std::nullopt;
    root += (i ? "." : "") + parts[i];
  }
  return root;
}

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// Sets of names looked up by std::string_view (no string built per lookup).
struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using NameSet = std::unordered_set<std::string, NameHash, std::equal_to<>>;

const NameSet& attention_kernels() {
  // The attention kernels torchtitan's op policy saves; on the CPU the flash kernel is
  // _scaled_dot_product_flash_attention_for_cpu.
  static const NameSet names{"_scaled_dot_product_flash_attention",
                                                     "_scaled_dot_product_flash_attention_for_cpu",
                                                     "_scaled_dot_product_fused_attention_overrideable",
                                                     "_scaled_dot_product_efficient_attention",
                                                     "_scaled_dot_product_cudnn_attention",
                                                     "_scaled_dot_product_attention_math",
                                                     "_flash_attention_forward",
                                                     "_efficient_attention_forward",
                                                     "flex_attention"};
  return names;
}

const NameSet& default_save_list() {
  static const NameSet names = [] {
    NameSet s{"mm", "bmm", "addmm", "linear", "convolution", "convolution_backward", "max",
                                      "topk", "_scaled_mm", "reduce_scatter_tensor", "all_to_all",
                                      // The functional collective is spelled all_to_all_single.
                                      "all_to_all_single"};
    s.insert(attention_kernels().begin(), attention_kernels().end());
    // all_gather_into_tensor is deliberately absent: gathered weights are cheap to
    // re-gather and expensive to keep.
    return s;
  }();
  return names;
}

}  // namespace

AcPolicyKind parse_ac_policy(const std::string& name) {
  if (name == "default") return AcPolicyKind::Default;
  if (name == "eager") return AcPolicyKind::Eager;
  if (name == "full") return AcPolicyKind::Full;
  if (name == "op") return AcPolicyKind::Op;
  throw std::invalid_argument("unknown AC policy '" + name + "' (known: default, eager, full, op)");
}

const char* to_string(AcPolicyKind kind) {
  switch (kind) {
    case AcPolicyKind::Default: return "default";
    case AcPolicyKind::Eager: return "eager";
    case AcPolicyKind::Full: return "full";
    case AcPolicyKind::Op: return "op";
  }
  return "?";
}

OpSelector OpSelector::parse(const std::string& text) {
  auto fail = [&](const std::string& why) -> std::invalid_argument {
    return std::invalid_argument("invalid selector '" + text + "': " + why);
  };
  size_t sep = text.find("::");
  if (sep == std::string::npos) throw fail("expected FQN_PATTERN::OP (e.g. 'layers.*.attention.*::mm')");
  std::string pattern = text.substr(0, sep);
  std::string op = text.substr(sep + 2);
  if (pattern.empty()) throw fail("the FQN pattern is empty");
  if (op.empty()) throw fail("the operator is empty");
  if (op != "*" && !is_identifier(op))
    throw fail("the operator must be an operator base name such as 'mm' (no namespace or overload) or '*'");
  OpSelector sel;
  sel.fqn_components = split_fqn(pattern);
  for (const auto& c : sel.fqn_components)
    if (c.empty()) throw fail("the FQN pattern has an empty component");
  sel.op = op;
  return sel;
}

bool OpSelector::matches(const std::string& fqn, const std::string& op_base) const {
  if (op != "*" && op != op_base_name(op_base)) return false;
  std::vector<std::string> parts = split_fqn(fqn);
  if (parts.size() != fqn_components.size()) return false;
  for (size_t i = 0; i < parts.size(); ++i)
    if (fnmatch(fqn_components[i].c_str(), parts[i].c_str(), 0) != 0) return false;
  return true;
}

namespace {

// The three lists, for a name op_base_view() already reduced.
bool in_save_list(std::string_view base) { return default_save_list().find(base) != default_save_list().end(); }
bool is_counted_matmul(std::string_view base) { return base == "mm" || base == "linear"; }
bool in_attention_kernels(std::string_view base) { return attention_kernels().find(base) != attention_kernels().end(); }

}  // namespace

bool in_default_save_list(const std::string& op_base) { return in_save_list(op_base_view(op_base)); }

bool is_matmul_for_counting(const std::string& op_base) { return is_counted_matmul(op_base_view(op_base)); }

bool is_attention_kernel(const std::string& op_base) { return in_attention_kernels(op_base_view(op_base)); }

AcPolicy::AcPolicy(AcPolicyKind kind, std::vector<OpSelector> selectors)
    : kind_(kind), selectors_(std::move(selectors)) {}

ir::RecomputePolicy AcPolicy::decide(std::string_view op_base, const std::string& fqn, std::optional<int64_t> layer,
                                     bool is_random) {
  using P = ir::RecomputePolicy;
  const std::string_view base = op_base_view(op_base);
  switch (kind_) {
    case AcPolicyKind::Default: return in_save_list(base) ? P::MustSave : P::PreferRecompute;

    case AcPolicyKind::Eager: {
      // Eager selective AC keeps one counter per checkpoint wrapper, i.e. per layer.
      if (counted_layer_ != layer) {
        mm_count_ = 0;
        counted_layer_ = layer;
      }
      if (is_counted_matmul(base)) {
        ++mm_count_;
        return mm_count_ % 2 == 0 ? P::PreferRecompute : P::MustSave;
      }
      return in_save_list(base) ? P::MustSave : P::PreferRecompute;
    }

    case AcPolicyKind::Full:
      // A forward-loss-backward graph cannot replay randomness, so RNG ops are saved.
      if (is_random) return P::MustSave;
      if (!selectors_.empty()) {
        const std::string name(base);
        for (const OpSelector& s : selectors_)
          if (s.matches(fqn, name)) return P::MustSave;
      }
      return P::MustRecompute;

    case AcPolicyKind::Op:
      if (is_counted_matmul(base)) {
        ++mm_count_;  // global: never reset between layers
        return mm_count_ % 2 == 1 ? P::MustSave : P::PreferRecompute;
      }
      if (in_attention_kernels(base)) return P::MustSave;
      if (base == "add" && (!any_add_seen_ || add_seen_layer_ != layer)) {
        // The first add of a block (in a transformer block: the attention residual).
        any_add_seen_ = true;
        add_seen_layer_ = layer;
        return P::MustSave;
      }
      return P::PreferRecompute;
  }
  return P::PreferRecompute;
}

std::optional<int64_t> layer_of(const std::string& fqn) {
  // "layers.N" or "layers.N.rest": N is 1 to 18 decimal digits (no sign), so it fits.
  static constexpr std::string_view prefix = "layers.";
  if (fqn.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  size_t end = fqn.find('.', prefix.size());
  if (end == std::string::npos) end = fqn.size();
  const size_t digits = end - prefix.size();
  if (digits == 0 || digits > 18) return std::nullopt;
  int64_t value = 0;
  for (size_t i = prefix.size(); i < end; ++i) {
    const char c = fqn[i];
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

}  // namespace passcheck::check
