// Features added to generated cases (see program_features.h).
#include "generators/program_features.h"

#include "framework/exec/op_properties.h"

#include <algorithm>
#include <random>
#include <stdexcept>

namespace passcheck::gen {

namespace {

constexpr const char* kIdentityViews = "identity-views";
constexpr const char* kNoopClones = "noop-clones";
constexpr const char* kAliasedOutputs = "aliased-outputs";
constexpr const char* kWritesThroughViews = "writes-through-views";

bool contiguous_tensor(const ir::Value* v) {
  return v->type() == ir::ValueType::Tensor && v->meta() && !v->meta()->is_symbolic() && v->meta()->numel() > 0 &&
         v->meta()->is_contiguous() && !v->meta()->sizes.empty();
}

bool forward(const ir::Node* n) { return n->meta().phase == ir::Phase::Forward; }

// Forward values a feature may start from: contiguous tensors computed by a node that
// writes nothing and read by some node.
std::vector<ir::Value*> candidates(ir::Graph& g) {
  std::vector<ir::Value*> out;
  for (ir::Node* n : g.node_list()) {
    if (!forward(n) || exec::is_mutating(*n) || exec::is_random(*n)) continue;
    for (ir::Value* v : n->outputs())
      if (contiguous_tensor(v) && std::any_of(v->uses().begin(), v->uses().end(),
                                              [](const ir::Use& u) { return !u.is_graph_output(); }))
        out.push_back(v);
  }
  return out;
}

// The first node reading `v`, when every reader only reads it (none writes it or views
// it, so a copy or a view of it taken right after its producer holds its value for good),
// and its operand slot.
std::pair<ir::Node*, size_t> plain_reader(const ir::Value* v) {
  std::pair<ir::Node*, size_t> first{nullptr, 0};
  for (const ir::Use& u : v->uses()) {
    if (u.is_graph_output()) continue;
    if (exec::is_mutating(*u.user) || exec::aliases_input(*u.user)) return {nullptr, 0};
    if (!first.first) first = {u.user, u.slot};
  }
  return first;
}

ir::Value* add_node(ir::Graph& g, const std::string& op, std::vector<ir::Arg> args, ir::Node* before,
                    const ir::TensorMeta& meta, const std::string& name, const ir::NodeMeta& node_meta) {
  ir::Node* n = g.create(op, std::move(args), before);
  n->mutable_meta() = node_meta;
  return n->add_output(ir::ValueType::Tensor, meta, name);
}

ir::TensorMeta flat(const ir::TensorMeta& m) {
  ir::TensorMeta out = m;
  out.sizes = {m.numel()};
  out.strides = {1};
  return out;
}

template <class T>
T* pick(std::vector<T*>& from, std::mt19937_64& rng) {
  if (from.empty()) return nullptr;
  return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
}

}  // namespace

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = {kIdentityViews, kNoopClones, kAliasedOutputs, kWritesThroughViews};
  return names;
}

std::vector<std::string> parse_features(const std::string& text) {
  if (text == "all") return feature_names();
  std::vector<std::string> out;
  if (text.empty() || text == "none") return out;
  for (size_t begin = 0;;) {
    const size_t comma = text.find(',', begin);
    const std::string name = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    if (std::find(feature_names().begin(), feature_names().end(), name) == feature_names().end()) {
      std::string known;
      for (const std::string& n : feature_names()) known += (known.empty() ? "" : ", ") + n;
      throw std::invalid_argument("--features: unknown feature '" + name + "' (known: " + known + ", all, none)");
    }
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return out;
}

std::vector<std::string> apply_features(ir::Graph& g, uint64_t seed, const std::vector<std::string>& features) {
  std::vector<std::string> applied;
  if (g.mesh() || !g.symbols().empty() || g.has_subgraphs()) return applied;
  std::mt19937_64 rng(seed ^ 0x5fe47a7e5ULL);
  auto wants = [&](const char* name) { return std::find(features.begin(), features.end(), name) != features.end(); };
  for (const std::string& feature : feature_names()) {
    if (!wants(feature.c_str())) continue;
    std::vector<ir::Value*> from = candidates(g);
    if (feature == kIdentityViews || feature == kNoopClones) {
      // One read of a value goes through view(v, its sizes) or clone(v): the same values.
      std::vector<ir::Value*> readable;
      for (ir::Value* v : from)
        if (plain_reader(v).first) readable.push_back(v);
      ir::Value* v = pick(readable, rng);
      if (!v) continue;
      auto [reader, slot] = plain_reader(v);
      const bool view = feature == kIdentityViews;
      std::vector<ir::Arg> args = {ir::Arg::of(v)};
      args.push_back(view ? ir::Arg::int_list(v->meta()->sizes) : ir::Arg::none());
      // Right after the producer: in the producer's phase, before any backward node.
      ir::Value* through = add_node(g, view ? "aten::view" : "aten::clone", std::move(args), v->producer()->next(),
                                    *v->meta(), v->name() + (view ? "_same_view" : "_copy"), v->producer()->meta());
      reader->replace_operand(slot, through);
      applied.push_back(feature + " of %" + v->name());
    } else if (feature == kAliasedOutputs) {
      // A returned alias of an input, and a returned view of a returned value.
      std::vector<ir::Value*> inputs;
      for (ir::Value* in : g.inputs())
        if (contiguous_tensor(in)) inputs.push_back(in);
      ir::Node* first = g.node_list().empty() ? nullptr : g.node_list().front();
      if (ir::Value* in = pick(inputs, rng)) {
        const char* op = std::uniform_int_distribution<int>(0, 1)(rng) ? "aten::alias" : "aten::detach";
        g.add_output(add_node(g, op, {ir::Arg::of(in)}, first, *in->meta(), in->name() + "_returned_alias", {}));
        applied.push_back(feature + ": %" + in->name() + " returned through " + op);
      }
      std::vector<ir::Value*> returned;
      for (ir::Value* out : g.outputs())
        if (contiguous_tensor(out) && out->producer()) returned.push_back(out);
      if (ir::Value* out = pick(returned, rng)) {
        g.add_output(add_node(g, "aten::view", {ir::Arg::of(out), ir::Arg::int_list({out->meta()->numel()})},
                              out->producer()->next(), flat(*out->meta()), out->name() + "_returned_view",
                              out->producer()->meta()));
        applied.push_back(feature + ": a view of output %" + out->name() + " returned too");
      }
    } else if (feature == kWritesThroughViews) {
      // c = clone(v); r = view(c) taken first; mul_ through another view of c; sum(r) returned.
      std::vector<ir::Value*> floating;
      for (ir::Value* v : from)
        if (c10::isFloatingType(v->meta()->dtype)) floating.push_back(v);
      ir::Value* v = pick(floating, rng);
      if (!v) continue;
      ir::Node* after = v->producer()->next();
      const ir::NodeMeta& nm = v->producer()->meta();
      ir::Value* c = add_node(g, "aten::clone", {ir::Arg::of(v), ir::Arg::none()}, after, *v->meta(),
                              v->name() + "_scratch", nm);
      ir::Value* r = add_node(g, "aten::view", {ir::Arg::of(c), ir::Arg::int_list(v->meta()->sizes)}, after,
                              *v->meta(), v->name() + "_read_alias", nm);
      ir::Value* w = add_node(g, "aten::view", {ir::Arg::of(c), ir::Arg::int_list({v->meta()->numel()})}, after,
                              flat(*v->meta()), v->name() + "_write_alias", nm);
      add_node(g, "aten::mul_.Scalar", {ir::Arg::of(w), ir::Arg::real(2.0)}, after, flat(*v->meta()),
               v->name() + "_written", nm);
      ir::TensorMeta scalar = *v->meta();
      scalar.sizes.clear();
      scalar.strides.clear();
      g.add_output(add_node(g, "aten::sum", {ir::Arg::of(r), ir::Arg::none()}, after, scalar,
                            v->name() + "_read_after_write", nm));
      applied.push_back(feature + " on a copy of %" + v->name());
    }
  }
  return applied;
}

}  // namespace passcheck::gen
