// Metadata carried by graph values and nodes: tensor metadata (sizes, strides, dtype,
// device) and node metadata (phase, module FQN, autograd sequence number, recompute
// policy, AC region, custom string map). This header is the single list of every
// metadata key, what it means, and which component writes it; node copies made by
// passes must preserve all of them (Graph::clone_node does).
#pragma once

#include "framework/ir/sym_expr.h"

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace passcheck::ir {

/// Sizes, strides, dtype and device of a tensor value. A value of a graph traced with a
/// symbolic dimension (framework/sym/symbolize.h) also carries its sizes and strides as
/// expressions of the graph's symbols; `sizes`/`strides` then hold their values at the
/// symbols' hints (the verifier checks that they agree), so code that only needs
/// concrete shapes keeps working unchanged.
struct TensorMeta {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  c10::ScalarType dtype = c10::ScalarType::Float;
  c10::Device device = c10::Device(c10::DeviceType::CPU);

  TensorMeta() = default;
  TensorMeta(const TensorMeta& other)
      : sizes(other.sizes), strides(other.strides), dtype(other.dtype), device(other.device),
        symbolic_(other.symbolic_ ? std::make_unique<SymbolicShape>(*other.symbolic_) : nullptr) {}
  TensorMeta(TensorMeta&&) noexcept = default;
  TensorMeta& operator=(const TensorMeta& other) {
    if (this != &other) *this = TensorMeta(other);
    return *this;
  }
  TensorMeta& operator=(TensorMeta&&) noexcept = default;

  /// Empty when the shape is concrete; otherwise one expression per dimension.
  const std::vector<sym::Expr>& sym_sizes() const { return symbolic_ ? symbolic_->sizes : no_exprs(); }
  const std::vector<sym::Expr>& sym_strides() const { return symbolic_ ? symbolic_->strides : no_exprs(); }
  /// Forgets the expressions; the concrete sizes and strides stay.
  void drop_symbolic() { symbolic_.reset(); }

  bool operator==(const TensorMeta& other) const {
    return sizes == other.sizes && strides == other.strides && dtype == other.dtype &&
           device == other.device && sym_sizes() == other.sym_sizes() && sym_strides() == other.sym_strides();
  }
  bool is_symbolic() const { return symbolic_ != nullptr; }
  /// Size / stride of dimension d as an expression (a constant when concrete).
  sym::Expr size_expr(size_t d) const;
  sym::Expr stride_expr(size_t d) const;
  std::vector<sym::Expr> size_exprs() const;
  std::vector<sym::Expr> stride_exprs() const;
  /// Sets symbolic sizes and strides, recomputing the concrete ones at `hints`; drops
  /// the expressions when they are all constants. Throws std::invalid_argument when an
  /// expression has a symbol without a hint.
  void set_symbolic(std::vector<sym::Expr> sizes_expr, std::vector<sym::Expr> strides_expr,
                    const std::map<std::string, int64_t>& hints);
  /// Row-major strides of symbolic sizes.
  static std::vector<sym::Expr> contiguous_stride_exprs(const std::vector<sym::Expr>& sizes);
  /// Every symbol in the sizes and strides.
  std::set<std::string> free_symbols() const;
  bool operator!=(const TensorMeta& other) const { return !(*this == other); }
  int64_t numel() const;
  /// Bytes spanned by the tensor's elements (what a fresh contiguous copy would take).
  int64_t nbytes() const;
  bool is_contiguous() const;
  static std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes);

 private:
  // Out of line: only graphs traced with a symbolic dimension have expressions, and a
  // million-node graph holds a TensorMeta in every value.
  struct SymbolicShape {
    std::vector<sym::Expr> sizes;
    std::vector<sym::Expr> strides;
  };
  static const std::vector<sym::Expr>& no_exprs();  // out of line: the pass libraries hold no statics
  std::unique_ptr<SymbolicShape> symbolic_;  // null: concrete
};

/// How a value of a distributed graph is laid out along one mesh dim (DTensor's
/// placements): Shard(dim) holds slice `rank` of dim `dim`, Replicate holds the whole
/// value, Partial holds a term that reduces (reduce_op) to the whole value. Text form:
/// "S(0)", "R", "P(sum)". Written by the parallelized models (oracles/models) on module
/// state and read by the placement passes.
struct Placement {
  enum class Kind : uint8_t { Shard, Replicate, Partial };
  Kind kind = Kind::Replicate;
  int64_t dim = 0;               ///< Shard
  std::string reduce_op = "sum";  ///< Partial
  std::string str() const;
  /// Parses "S(d)", "R" or "P(op)" (op: sum, avg, product, min, max); nullopt otherwise.
  static std::optional<Placement> parse(const std::string& text);
  bool operator==(const Placement& o) const {
    return kind == o.kind && (kind != Kind::Shard || dim == o.dim) && (kind != Kind::Partial || reduce_op == o.reduce_op);
  }
  bool operator!=(const Placement& o) const { return !(*this == o); }
};

/// The device mesh a per-rank graph belongs to: its dims (name, size), major to minor,
/// and the rank whose graph it is. Text form: `mesh dp=2, tp=2 rank 1`.
struct MeshInfo {
  std::vector<std::pair<std::string, int64_t>> dims;
  int64_t rank = 0;
  bool operator==(const MeshInfo& o) const { return dims == o.dims && rank == o.rank; }
};

/// Which part of a training step a node belongs to.
enum class Phase : uint8_t { Forward, Loss, Backward, Optimizer };

/// Activation-checkpoint decision for a forward node (specs/passes.md "AC family").
enum class RecomputePolicy : uint8_t { Unset, MustSave, PreferSave, MustRecompute, PreferRecompute };

const char* to_string(Phase phase);
const char* to_string(RecomputePolicy policy);
std::optional<Phase> parse_phase(const std::string& text);
std::optional<RecomputePolicy> parse_recompute_policy(const std::string& text);
inline bool is_recomputable(RecomputePolicy p) {
  return p == RecomputePolicy::MustRecompute || p == RecomputePolicy::PreferRecompute;
}

/// Node metadata. Keys, their meaning and their writers:
///
/// | key (text form) | field        | meaning                                    | written by |
/// |-----------------|--------------|--------------------------------------------|------------|
/// | phase           | phase        | forward / loss / backward / optimizer      | tracer (backward: ops run by the autograd engine; loss: inside a "loss" module scope) |
/// | fqn             | module_fqn   | innermost module FQN active when recorded; backward nodes copy it from their forward node | tracer |
/// | seq             | seq_nr       | autograd sequence number linking a forward op to its backward | tracer |
/// | recompute       | recompute    | activation-checkpoint policy               | AC policy tagging passes, apply_ac |
/// | ac_region       | ac_region_id | activation-checkpoint region (layer index) | AC region annotation |
/// | custom.*        | custom       | free-form string map; backward nodes inherit the forward node's entries they do not already have | model annotations, passes |
/// | wants           | wanted_placements | per operand slot, the placement the node wants that input in (upstream's ILP input_specs); empty: none recorded, else one list of mesh-rank placements per slot | placement solvers, text graphs; read by eliminate-alias-round-trips |
///
/// Reserved custom keys (documented here as they are introduced):
/// - "recomputed_from": original node name, on duplicates made by rematerialization.
/// - "chunk_region", "chunk_role", "chunk_id", "chunk_orig": chunking passes
///   (passes/chunk): region root FQN, role (split_boundary / body / materialization),
///   chunk id (0 or 1) and the original node's output name.
/// - "schedule_rank", "schedule_rs_before": the order a scheduling pass found, recorded
///   on each compute node (an op with a FLOP formula, exec::has_flop_formula) before it
///   reorders: the node's rank among the compute nodes, and the output name of the
///   nearest _c10d_functional::reduce_scatter_tensor before it ("" when none). Written by
///   prefetch-fsdp-all-gathers (passes/schedule), read by cap-compute-batch-size.
/// - "chunk_early_accumulation": "1" on adds the chunk pass inserted early for
///   parameter-gradient partials.
/// - "partition_class": "forward", "backward" or "unclaimed", written by classify-nodes
///   (passes/partition/classify.h).
/// - "ap_must_save": "1" on a forward node whose outputs the first partition saved for
///   the backward (partition-min-cut tag-saves=true, tag-ap-must-save); read by
///   partition-save-all, merged by cse.
/// - "ap_save_outputs": the saved output indices of such a node with several outputs
///   ("0,2"); absent: every output.
/// Partitioners (passes/partition/split.h) also write "recomputed_from" on the forward
/// nodes a backward part recomputes.
struct NodeMeta {
  Phase phase = Phase::Forward;
  std::string module_fqn;
  int64_t seq_nr = -1;
  RecomputePolicy recompute = RecomputePolicy::Unset;
  std::optional<int64_t> ac_region_id;
  std::map<std::string, std::string> custom;
  /// Wanted placement of each operand slot (slot i: operand(i)); empty when none recorded.
  std::vector<std::vector<Placement>> wanted_placements;

  bool operator==(const NodeMeta& o) const {
    return phase == o.phase && module_fqn == o.module_fqn && seq_nr == o.seq_nr &&
           recompute == o.recompute && ac_region_id == o.ac_region_id && custom == o.custom &&
           wanted_placements == o.wanted_placements;
  }
};

/// Short dtype names used by the text format ("f32", "bf16", "i64", ...).
const char* dtype_short_name(c10::ScalarType dtype);
std::optional<c10::ScalarType> dtype_from_short_name(std::string_view name);
/// "[2, 3]": sizes or strides as the text format and messages write them.
std::string format_int_list(const std::vector<int64_t>& values);
/// Element size in bytes.
int64_t dtype_size(c10::ScalarType dtype);

}  // namespace passcheck::ir
