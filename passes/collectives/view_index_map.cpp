// The index map of a view chain and its identity claim (view_index_map.h). The map is
// built backwards: start from index variables over the last output's shape, and let
// each node turn coordinates of its output into coordinates of its input.
#include "passes/collectives/view_index_map.h"

#include <algorithm>
#include <iterator>
#include <set>

namespace passcheck::passes::collectives {

namespace {

using sym::Expr;

// A constant table, not a static std::set: passes hold no writable statics.
constexpr const char* kModeledOps[] = {"aten::permute", "aten::transpose.int", "aten::t",
                                       "aten::view",    "aten::reshape",       "aten::_unsafe_view",
                                       "aten::expand",  "aten::unsqueeze",     "aten::squeeze",
                                       "aten::squeeze.dim", "aten::squeeze.dims"};

std::optional<int64_t> int_at(const ir::Node& n, size_t i) {
  if (i >= n.num_args() || n.arg(i).kind != ir::Arg::Kind::Int) return std::nullopt;
  return n.arg(i).i;
}

std::optional<std::vector<int64_t>> ints_at(const ir::Node& n, size_t i) {
  if (i >= n.num_args()) return std::nullopt;
  const ir::Arg& a = n.arg(i);
  if (a.kind == ir::Arg::Kind::Int) return std::vector<int64_t>{a.i};
  if (a.kind != ir::Arg::Kind::List) return std::nullopt;
  std::vector<int64_t> out;
  for (const ir::Arg& item : a.list()) {
    if (item.kind != ir::Arg::Kind::Int) return std::nullopt;
    out.push_back(item.i);
  }
  return out;
}

std::optional<int64_t> wrap(int64_t dim, size_t rank) {
  const int64_t r = static_cast<int64_t>(std::max<size_t>(rank, 1));
  const int64_t d = dim < 0 ? dim + r : dim;
  if (d < 0 || d >= r) return std::nullopt;
  return d;
}

// Row-major linear index of `coords` over `sizes`.
Expr linearize(const std::vector<Expr>& coords, const std::vector<Expr>& sizes) {
  Expr linear = Expr::constant(0);
  for (size_t k = 0; k < coords.size(); ++k) linear = linear * sizes[k] + coords[k];
  return linear;
}

// A linear index the map built from coordinates, remembered so that delinearizing it
// over the same sizes gives those coordinates back. That is exact for coordinates in
// bounds, which every coordinate of an in-bounds index is; without it a view to [N*M]
// and back leaves floordiv(i0*M + i1, M) == i0 for Z3, which nonlinear arithmetic over
// a symbolic M can leave unknown.
struct Linearization {
  Expr linear;
  std::vector<Expr> coords;
  std::vector<Expr> sizes;
};

// Coordinates of row-major linear index `linear` over `sizes`.
std::vector<Expr> delinearize(const Expr& linear, const std::vector<Expr>& sizes,
                              const std::vector<Linearization>& known) {
  for (const Linearization& l : known)
    if (l.linear == linear && l.sizes == sizes) return l.coords;
  std::vector<Expr> coords(sizes.size());
  Expr inner = Expr::constant(1);
  for (size_t k = sizes.size(); k-- > 0;) {
    const Expr quotient = sym::floordiv(linear, inner);
    // The leading coordinate needs no mod: the index is in bounds.
    coords[k] = k == 0 ? quotient : sym::mod(quotient, sizes[k]);
    inner = inner * sizes[k];
  }
  return coords;
}

// The input coordinates `node` reads for output coordinates `out`; nullopt with
// `why_not` set when the node cannot be modeled.
std::optional<std::vector<Expr>> step_back(const ir::Node& node, const std::vector<Expr>& out,
                                           std::vector<Linearization>& known, std::string& why_not) {
  const ir::Value* in = node.num_args() > 0 && node.arg(0).is_value() ? node.arg(0).value : nullptr;
  if (in == nullptr || !in->meta() || !node.output()->meta()) {
    why_not = node.op() + " has no tensor metadata to model";
    return std::nullopt;
  }
  const std::vector<Expr> in_sizes = in->meta()->size_exprs();
  const std::vector<Expr> out_sizes = node.output()->meta()->size_exprs();
  const std::string& op = node.op();
  const auto bad_args = [&]() -> std::optional<std::vector<Expr>> {
    why_not = op + " has arguments the index map cannot read";
    return std::nullopt;
  };
  if (op == "aten::view" || op == "aten::reshape" || op == "aten::_unsafe_view") {
    const Expr linear = linearize(out, out_sizes);
    known.push_back({linear, out, out_sizes});
    return delinearize(linear, in_sizes, known);
  }
  if (op == "aten::permute") {
    auto dims = ints_at(node, 1);
    if (!dims || dims->size() != out.size() || in_sizes.size() != out.size()) return bad_args();
    std::vector<Expr> coords(out.size());
    std::vector<bool> seen(out.size(), false);
    for (size_t k = 0; k < dims->size(); ++k) {
      auto d = wrap((*dims)[k], out.size());
      if (!d || seen[*d]) return bad_args();
      seen[*d] = true;
      coords[*d] = out[k];
    }
    return coords;
  }
  if (op == "aten::transpose.int" || op == "aten::t") {
    std::vector<Expr> coords = out;
    if (op == "aten::t") {
      if (out.size() == 2) std::swap(coords[0], coords[1]);
      return coords;
    }
    auto a = int_at(node, 1), b = int_at(node, 2);
    if (!a || !b) return bad_args();
    auto wa = wrap(*a, out.size()), wb = wrap(*b, out.size());
    if (!wa || !wb) return bad_args();
    if (!out.empty()) std::swap(coords[*wa], coords[*wb]);
    return coords;
  }
  if (op == "aten::expand") {
    if (in_sizes.size() > out.size()) return bad_args();
    // New leading dims are dropped; a dim of size 1 broadcast to more reads index 0.
    const size_t lead = out.size() - in_sizes.size();
    std::vector<Expr> coords;
    for (size_t k = 0; k < in_sizes.size(); ++k) {
      const bool broadcast = in_sizes[k].as_constant() == std::optional<int64_t>(1);
      coords.push_back(broadcast ? Expr::constant(0) : out[lead + k]);
    }
    return coords;
  }
  if (op == "aten::unsqueeze") {
    auto d = int_at(node, 1);
    if (!d || out.size() != in_sizes.size() + 1) return bad_args();
    auto wd = wrap(*d, out.size());
    if (!wd) return bad_args();
    std::vector<Expr> coords = out;
    coords.erase(coords.begin() + *wd);
    return coords;
  }
  if (op == "aten::squeeze" || op == "aten::squeeze.dim" || op == "aten::squeeze.dims") {
    // The input dims squeezed away (size 1) get coordinate 0 back.
    std::set<int64_t> squeezed;
    if (op == "aten::squeeze") {
      for (size_t k = 0; k < in_sizes.size(); ++k) squeezed.insert(static_cast<int64_t>(k));
    } else {
      auto dims = ints_at(node, 1);
      if (!dims) return bad_args();
      for (int64_t d : *dims) {
        auto wd = wrap(d, in_sizes.size());
        if (!wd) return bad_args();
        squeezed.insert(*wd);
      }
    }
    std::vector<Expr> coords;
    size_t next = 0;
    for (size_t k = 0; k < in_sizes.size(); ++k) {
      const auto size = in_sizes[k].as_constant();
      if (squeezed.count(static_cast<int64_t>(k)) && !size) {
        why_not = op + " squeezes a dimension of symbolic size " + in_sizes[k].to_string();
        return std::nullopt;
      }
      if (squeezed.count(static_cast<int64_t>(k)) && *size == 1) {
        coords.push_back(Expr::constant(0));
      } else {
        if (next >= out.size()) return bad_args();
        coords.push_back(out[next++]);
      }
    }
    if (next != out.size()) return bad_args();
    return coords;
  }
  why_not = op + " is not a view the index map models";
  return std::nullopt;
}

}  // namespace

bool is_modeled_view(const ir::Node& node) {
  return node.num_outputs() == 1 &&
         std::any_of(std::begin(kModeledOps), std::end(kModeledOps), [&](const char* op) { return node.op() == op; });
}

bool is_real_reorder(const ir::Node& node) {
  const ir::Value* in = node.num_args() > 0 && node.arg(0).is_value() ? node.arg(0).value : nullptr;
  const size_t rank = in && in->meta() ? in->meta()->sizes.size() : 0;
  if (node.op() == "aten::t") return rank == 2;
  if (node.op() == "aten::transpose.int") {
    auto a = int_at(node, 1), b = int_at(node, 2);
    if (!a || !b || rank == 0) return false;
    auto wa = wrap(*a, rank), wb = wrap(*b, rank);
    return wa && wb && *wa != *wb;
  }
  if (node.op() == "aten::permute") {
    auto dims = ints_at(node, 1);
    if (!dims) return false;
    for (size_t k = 0; k < dims->size(); ++k) {
      auto d = wrap((*dims)[k], dims->size());
      if (!d || *d != static_cast<int64_t>(k)) return true;
    }
  }
  return false;
}

std::optional<ViewIndexMap> compose_view_chain(const ir::Value& source, const std::vector<const ir::Node*>& chain,
                                               std::string& why_not) {
  const ir::Value& end = chain.empty() ? source : *chain.back()->output();
  if (!end.meta() || !source.meta()) {
    why_not = "no tensor metadata on the ends of the chain";
    return std::nullopt;
  }
  ViewIndexMap map;
  std::vector<Expr> coords;
  const std::vector<Expr> end_sizes = end.meta()->size_exprs();
  for (size_t k = 0; k < end_sizes.size(); ++k) {
    // Index names are local to the claim but must not shadow a symbol of the graph.
    std::string name = "i" + std::to_string(k);
    while (source.graph() && source.graph()->find_symbol(name)) name = "i" + name;
    map.indices.push_back({name, end_sizes[k]});
    coords.push_back(Expr::symbol(map.indices.back().name));
  }
  std::vector<Linearization> known;
  for (size_t k = chain.size(); k-- > 0;) {
    const ir::Node& node = *chain[k];
    const ir::Value* expected_input = k == 0 ? &source : chain[k - 1]->output();
    if (!is_modeled_view(node) || node.num_args() == 0 || !node.arg(0).is_value() || node.arg(0).value != expected_input) {
      why_not = node.op() + " is not a view of the previous value in the chain";
      return std::nullopt;
    }
    auto back = step_back(node, coords, known, why_not);
    if (!back) return std::nullopt;
    coords = std::move(*back);
  }
  map.source_coordinates = std::move(coords);
  return map;
}

sym::Claim view_identity_claim(const ir::Value& source, const ir::Value& end, const ViewIndexMap& map,
                               const std::string& pass, const std::string& subject) {
  sym::Claim claim;
  claim.kind = "view_identity";
  claim.pass = pass;
  claim.subject = subject;
  claim.indices = map.indices;
  const std::vector<Expr> source_sizes = source.meta()->size_exprs();
  const std::vector<Expr> end_sizes = end.meta()->size_exprs();
  std::vector<Expr> terms;
  if (source_sizes.size() != end_sizes.size() || map.source_coordinates.size() != end_sizes.size()) {
    claim.description = "the view chain from %" + source.name() + " to %" + end.name() + " changes the rank";
    terms.push_back(Expr::boolean(false));
  } else {
    claim.description = "the view chain from %" + source.name() + " to %" + end.name() +
                        " reads every element of its source at its own index";
    for (size_t k = 0; k < end_sizes.size(); ++k) {
      terms.push_back(sym::eq(end_sizes[k], source_sizes[k]));
      terms.push_back(sym::eq(map.source_coordinates[k], Expr::symbol(map.indices[k].name)));
    }
  }
  claim.condition = sym::logical_and(terms);
  return claim;
}

}  // namespace passcheck::passes::collectives
