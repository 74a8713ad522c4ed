// Graph::hash without printing: the fields the text form shows (framework/ir/text.cpp),
// fed into a 64-bit hash in the same order and with the same canonical choices (strides
// only when the printer shows them, a constant symbolic integer as a plain integer, every
// NaN of one sign alike), so graphs whose text is equal hash equally. Symbolic
// expressions enter through their structural hash (sym::Expr::hash), stable within a
// process, which is where the hash is compared. The pipeline gate
// hashes the graph after every pass; printing it cost about 0.7 us a node.
#include "framework/ir/graph.h"
#include "framework/ir/text.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <string_view>
#include <unordered_map>

namespace passcheck::ir {

namespace {

// Tags keep one field from reading as another (a list's end, a meta key's presence).
enum Tag : uint64_t {
  kTagInput = 1,
  kTagNode,
  kTagNoOutputs,
  kTagOutput,
  kTagArg,
  kTagMeta,
  kTagPhase,
  kTagFqn,
  kTagSeq,
  kTagRecompute,
  kTagRegion,
  kTagCustom,
  kTagWants,
  kTagReturn,
  kTagPlacements,
  kTagStrides,
  kTagDevice,
  kTagText,
  kTagSubgraph,
  kTagNaN,
  kTagSymbolic,
  kTagExpr,
};

// Fields go round-robin into four independent splitmix64 chains, combined at the end.
// One chain made every field wait for the previous field's two multiplies (the hash of a
// small graph cost as much as printing it); four let the processor run four fields at
// once. A field still moves every bit of its chain, and the chains are combined in
// order, so reordered or shifted fields hash apart as before.
class Hasher {
 public:
  [[gnu::always_inline]] void add(uint64_t x) {
    uint64_t& state = lanes_[count_++ & 3];
    state = mix(state ^ (x + 0x9e3779b97f4a7c15ull + (state << 6) + (state >> 2)));
  }
  [[gnu::always_inline]] void add(std::string_view s) {
    add(static_cast<uint64_t>(s.size()));
    add(static_cast<uint64_t>(std::hash<std::string_view>{}(s)));
  }
  uint64_t value() const {
    uint64_t h = mix(count_);
    for (uint64_t lane : lanes_) h = mix(h ^ (lane + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)));
    return h;
  }

 private:
  // splitmix64's finalizer: every input bit reaches every output bit.
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t lanes_[4] = {0x6a09e667f3bcc909ull, 0xbb67ae8584caa73bull, 0x3c6ef372fe94f82bull, 0xa54ff53a5f1d36f1ull};
  uint64_t count_ = 0;
};

void hash_placement(Hasher& h, const Placement& p) {
  h.add(static_cast<uint64_t>(p.kind));
  if (p.kind == Placement::Kind::Shard) h.add(static_cast<uint64_t>(p.dim));
  if (p.kind == Placement::Kind::Partial) h.add(std::string_view(p.reduce_op));
}

void hash_placements(Hasher& h, const Value& v) {
  if (v.placements().empty()) return;
  h.add(kTagPlacements);
  h.add(static_cast<uint64_t>(v.placements().size()));
  for (const Placement& p : v.placements()) hash_placement(h, p);
}

void hash_device(Hasher& h, c10::Device d) {
  h.add(static_cast<uint64_t>(d.type()));
  h.add(static_cast<uint64_t>(static_cast<int64_t>(d.index())));
}

void hash_ints(Hasher& h, const std::vector<int64_t>& v) {
  h.add(static_cast<uint64_t>(v.size()));
  for (int64_t x : v) h.add(static_cast<uint64_t>(x));
}

// The type as print_type writes it.
void hash_type(Hasher& h, const Value& v) {
  h.add(static_cast<uint64_t>(v.type()));
  if (v.type() != ValueType::Tensor) return;
  h.add(static_cast<uint64_t>(v.meta().has_value()));
  if (!v.meta()) return;
  const TensorMeta& m = *v.meta();
  if (m.is_symbolic()) {
    // Sizes, then every stride: the printer leaves out strides that are the row-major
    // ones of the sizes, and the parser puts exactly those back, so the full list is
    // what the text says. Canonical expressions: equal text, equal structure, equal hash.
    h.add(kTagSymbolic);
    h.add(static_cast<uint64_t>(m.dtype));
    auto add = [&](const sym::Expr& e) {
      if (std::optional<int64_t> c = e.as_constant()) {
        h.add(static_cast<uint64_t>(*c));
      } else {
        h.add(kTagExpr);
        h.add(static_cast<uint64_t>(e.hash()));
      }
    };
    h.add(static_cast<uint64_t>(m.sizes.size()));
    for (size_t d = 0; d < m.sizes.size(); ++d) add(m.size_expr(d));
    for (const sym::Expr& e : m.stride_exprs()) add(e);
    if (m.device.type() != c10::DeviceType::CPU) {
      h.add(kTagDevice);
      hash_device(h, m.device);
    }
    return;
  }
  h.add(static_cast<uint64_t>(m.dtype));
  hash_ints(h, m.sizes);
  if (!m.strides.empty() && !m.is_contiguous()) {
    h.add(kTagStrides);
    hash_ints(h, m.strides);
  }
  if (m.device.type() != c10::DeviceType::CPU) {
    h.add(kTagDevice);
    hash_device(h, m.device);
  }
}

// What a hash covers: node metadata or not; values by name, or (positions set) by their
// position in the graph (inputs, then every node's outputs in order), so a renamed value
// hashes as before.
struct Scope {
  bool meta = true;
  std::unordered_map<const Value*, uint64_t>* positions = nullptr;
};

void hash_value_ref(Hasher& h, const Value* v, const Scope& scope) {
  if (!scope.positions) {
    h.add(std::string_view(v->name()));
    return;
  }
  auto it = scope.positions->find(v);
  h.add(it == scope.positions->end() ? ~uint64_t{0} : it->second);
}

// A value defined here: its name, or its new position.
void hash_value_def(Hasher& h, const Value* v, const Scope& scope) {
  if (!scope.positions) {
    h.add(std::string_view(v->name()));
    return;
  }
  const uint64_t position = scope.positions->size();
  scope.positions->emplace(v, position);
  h.add(position);
}

void hash_arg(Hasher& h, const Arg& a, const Scope& scope) {
  // A constant symbolic integer prints, and parses back, as a plain integer.
  if (a.kind == Arg::Kind::Sym) {
    if (std::optional<int64_t> c = a.expr().as_constant()) {
      h.add(static_cast<uint64_t>(Arg::Kind::Int));
      h.add(static_cast<uint64_t>(*c));
      return;
    }
  }
  h.add(static_cast<uint64_t>(a.kind));
  switch (a.kind) {
    case Arg::Kind::None: return;
    case Arg::Kind::Bool: h.add(static_cast<uint64_t>(a.b)); return;
    case Arg::Kind::Int:
    case Arg::Kind::Dtype:
    case Arg::Kind::Layout:
    case Arg::Kind::MemoryFormat: h.add(static_cast<uint64_t>(a.i)); return;
    case Arg::Kind::Float:
      // format_double writes every NaN of one sign as the same word.
      if (std::isnan(a.f)) {
        h.add(kTagNaN);
        h.add(static_cast<uint64_t>(std::signbit(a.f)));
      } else {
        h.add(std::bit_cast<uint64_t>(a.f));
      }
      return;
    case Arg::Kind::String: h.add(std::string_view(a.str())); return;
    case Arg::Kind::Device: hash_device(h, a.device); return;
    case Arg::Kind::Value: hash_value_ref(h, a.value, scope); return;
    case Arg::Kind::Sym: h.add(std::string_view(a.expr().to_string())); return;
    case Arg::Kind::List:
      h.add(static_cast<uint64_t>(a.list().size()));
      for (const Arg& e : a.list()) hash_arg(h, e, scope);
      return;
  }
}

void hash_meta(Hasher& h, const NodeMeta& m) {
  h.add(kTagMeta);
  if (m.phase != Phase::Forward) {
    h.add(kTagPhase);
    h.add(static_cast<uint64_t>(m.phase));
  }
  if (!m.module_fqn.empty()) {
    h.add(kTagFqn);
    h.add(std::string_view(m.module_fqn));
  }
  if (m.seq_nr >= 0) {
    h.add(kTagSeq);
    h.add(static_cast<uint64_t>(m.seq_nr));
  }
  if (m.recompute != RecomputePolicy::Unset) {
    h.add(kTagRecompute);
    h.add(static_cast<uint64_t>(m.recompute));
  }
  if (m.ac_region_id) {
    h.add(kTagRegion);
    h.add(static_cast<uint64_t>(*m.ac_region_id));
  }
  if (!m.custom.empty()) {
    h.add(kTagCustom);
    h.add(static_cast<uint64_t>(m.custom.size()));
    for (const auto& [k, v] : m.custom) {
      h.add(std::string_view(k));
      h.add(std::string_view(v));
    }
  }
  if (!m.wanted_placements.empty()) {
    h.add(kTagWants);
    h.add(static_cast<uint64_t>(m.wanted_placements.size()));
    for (const std::vector<Placement>& slot : m.wanted_placements) {
      h.add(static_cast<uint64_t>(slot.size()));
      for (const Placement& p : slot) hash_placement(h, p);
    }
  }
}

void hash_node(Hasher& h, const Node& n, const Scope& scope) {
  h.add(kTagNode);
  if (n.num_outputs() == 0) h.add(kTagNoOutputs);
  for (const Value* out : n.outputs()) {
    h.add(kTagOutput);
    hash_value_def(h, out, scope);
    hash_type(h, *out);
    hash_placements(h, *out);
  }
  h.add(std::string_view(n.op()));
  h.add(static_cast<uint64_t>(n.num_args()));
  for (const Arg& a : n.args()) {
    h.add(kTagArg);
    hash_arg(h, a, scope);
  }
  if (scope.meta) hash_meta(h, n.meta());
}

void hash_body(Hasher& h, const Graph& g, const Scope& scope) {
  for (const Value* in : g.inputs()) {
    h.add(kTagInput);
    h.add(static_cast<uint64_t>(in->role()));
    hash_value_def(h, in, scope);
    hash_type(h, *in);
    hash_placements(h, *in);
  }
  for (const Node* n : g.nodes()) hash_node(h, *n, scope);
  h.add(kTagReturn);
  h.add(static_cast<uint64_t>(g.outputs().size()));
  for (const Value* out : g.outputs()) hash_value_ref(h, out, scope);
}

}  // namespace

uint64_t Graph::hash() const { return hash_of(/*with_meta=*/true, /*with_names=*/true); }

uint64_t Graph::computation_hash() const { return hash_of(/*with_meta=*/false, /*with_names=*/false); }

uint64_t Graph::unnamed_hash() const { return hash_of(/*with_meta=*/true, /*with_names=*/false); }

uint64_t Graph::hash_of(bool with_meta, bool with_names) const {
  Hasher h;
  std::unordered_map<const Value*, uint64_t> positions;
  Scope scope;
  scope.meta = with_meta;
  // Symbols, claims and the mesh are a few lines: their printed form, as print_graph
  // writes them.
  h.add(static_cast<uint64_t>(symbols_.size()));
  for (const sym::Symbol& s : symbols_) h.add(std::string_view(s.to_string()));
  h.add(static_cast<uint64_t>(claims_.size()));
  for (const sym::Claim& c : claims_) {
    h.add(kTagText);
    h.add(std::string_view(c.kind));
    h.add(std::string_view(c.pass));
    h.add(std::string_view(c.subject));
    h.add(std::string_view(c.description));
    h.add(std::string_view(c.quantifier_text()));
    h.add(std::string_view(c.condition.to_string()));
  }
  if (mesh_) {
    h.add(kTagText);
    for (const auto& [name, size] : mesh_->dims) {
      h.add(std::string_view(name));
      h.add(static_cast<uint64_t>(size));
    }
    h.add(static_cast<uint64_t>(mesh_->rank));
  }
  if (root() == this)
    for (const auto& [name, body] : subgraphs_) {
      h.add(kTagSubgraph);
      h.add(std::string_view(name));
      scope.positions = with_names ? nullptr : &positions;
      positions.clear();
      hash_body(h, *body, scope);
    }
  scope.positions = with_names ? nullptr : &positions;
  positions.clear();
  hash_body(h, *this, scope);
  return h.value();
}

}  // namespace passcheck::ir
