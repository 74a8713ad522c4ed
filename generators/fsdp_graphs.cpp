// Generators of FSDP unshard chains and alias round trips (fsdp_graphs.h). Graphs are
// built as text with their types computed alongside (sizes, strides, dtype), so the
// parser and the verifier take them as they would a traced rank graph.
#include "generators/fsdp_graphs.h"

#include "framework/ir/meta.h"

#include <string>
#include <vector>

namespace passcheck::gen {

namespace {

struct TextValue {
  std::string name;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  std::string dtype = "f32";
};

bool is_contiguous(const TextValue& v) { return v.strides == ir::TensorMeta::contiguous_strides(v.sizes); }

std::string type_of(const TextValue& v) {
  std::string out = v.dtype + ir::format_int_list(v.sizes);
  if (!is_contiguous(v)) {
    const std::string strides = ir::format_int_list(v.strides);
    out += "{" + strides.substr(1, strides.size() - 2) + "}";
  }
  return out;
}

// Accumulates node lines and names values uniquely.
class AliasGraphBuilder {
 public:
  TextValue node(const std::string& hint, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                 const std::string& dtype, const std::string& rhs) {
    TextValue v{hint + "_" + std::to_string(counter_++), std::move(sizes), std::move(strides), dtype};
    body_ += "  %" + v.name + " : " + type_of(v) + " = " + rhs + "\n";
    return v;
  }
  TextValue elementwise(const std::string& hint, const TextValue& like, const std::string& rhs,
                        const std::string& dtype = "") {
    return node(hint, like.sizes, like.strides, dtype.empty() ? like.dtype : dtype, rhs);
  }
  void raw(const std::string& line) { body_ += line; }
  const std::string& body() const { return body_; }

 private:
  std::string body_;
  int counter_ = 0;
};

// One single-input op applied to `v` (or two, for the view round trip); returns the last.
TextValue chain_op(AliasGraphBuilder& b, const TextValue& v, int kind) {
  const std::string in = "%" + v.name;
  switch (kind) {
    case 0:
      return b.node("t", {v.sizes[1], v.sizes[0]}, {v.strides[1], v.strides[0]}, v.dtype, "aten::t(" + in + ")");
    case 1:
      return b.node("permute", {v.sizes[1], v.sizes[0]}, {v.strides[1], v.strides[0]}, v.dtype,
                    "aten::permute(" + in + ", [1, 0])");
    case 2:
      if (is_contiguous(v)) {
        TextValue flat = b.node("view", {v.sizes[0] * v.sizes[1]}, {1}, v.dtype,
                                "aten::view(" + in + ", [" + std::to_string(v.sizes[0] * v.sizes[1]) + "])");
        return b.node("view", v.sizes, v.strides, v.dtype,
                      "aten::view(%" + flat.name + ", " + ir::format_int_list(v.sizes) + ")");
      }
      [[fallthrough]];
    case 3:
      if (is_contiguous(v) && v.sizes[0] % 2 == 0)
        return b.node("slice", {v.sizes[0] / 2, v.sizes[1]}, v.strides, v.dtype,
                      "aten::slice.Tensor(" + in + ", 0, 0, " + std::to_string(v.sizes[0] / 2) + ", 1)");
      [[fallthrough]];
    case 4: {
      const bool to_bf16 = v.dtype == "f32";
      return b.elementwise("cast", v,
                           "aten::_to_copy(" + in + ", " + (to_bf16 ? "torch.bfloat16" : "torch.float32") +
                               ", None, None, None, False, None)",
                           to_bf16 ? "bf16" : "f32");
    }
    case 5: return b.elementwise("double", v, "aten::add.Tensor(" + in + ", " + in + ", 1)");
    default: return b.elementwise("scale", v, "aten::mul.Tensor(" + in + ", 2.0)");
  }
}

constexpr int kChainKinds = 7;

std::string fsdp_graph(int dp, int rank, int params, const std::vector<std::vector<int>>& chains,
                       const std::vector<int>& casts, const std::vector<int>& computed, const std::vector<int>& cuts) {
  AliasGraphBuilder b;
  std::string inputs;
  std::vector<std::string> uses;
  auto add_input = [&](const std::string& text) { inputs += (inputs.empty() ? "\n    " : ",\n    ") + text; };
  for (int p = 0; p < params; ++p) {
    const int64_t rows = 4 * dp, cols = 8;
    TextValue shard{"w" + std::to_string(p), {rows / dp, cols}, ir::TensorMeta::contiguous_strides({rows / dp, cols}),
                    "f32"};
    add_input("param %" + shard.name + " : " + type_of(shard) + " placed(S(0))");
    TextValue gathered_from = shard;
    if (computed[p]) {
      // Not a parameter unshard: the gathered value mixes in an argument.
      TextValue bias{"bias" + std::to_string(p), shard.sizes, shard.strides, "f32"};
      add_input("arg %" + bias.name + " : " + type_of(bias));
      gathered_from = b.elementwise("pre", shard, "aten::add.Tensor(%" + shard.name + ", %" + bias.name + ", 1)");
    } else if (casts[p]) {
      gathered_from = b.elementwise("cast", shard,
                                    "aten::_to_copy(%" + shard.name + ", torch.bfloat16, None, None, None, False, None)",
                                    "bf16");
    }
    TextValue ag = b.node("ag", {rows, cols}, ir::TensorMeta::contiguous_strides({rows, cols}), gathered_from.dtype,
                          "_c10d_functional::all_gather_into_tensor(%" + gathered_from.name + ", " + std::to_string(dp) +
                              ", \"dp\")");
    TextValue v = b.elementwise("wait", ag, "_c10d_functional::wait_tensor(%" + ag.name + ")");
    for (size_t k = 0; k < chains[p].size(); ++k) {
      v = chain_op(b, v, chains[p][k]);
      if (static_cast<int>(k) == cuts[p]) {
        // A second reader of this value ends the chain here.
        TextValue side = b.node("side", {}, {}, v.dtype, "aten::sum(%" + v.name + ", None)");
        uses.push_back(side.dtype == "f32" ? side.name : b.node("up", {}, {}, "f32", "aten::_to_copy(%" + side.name + ", torch.float32, None, None, None, False, None)").name);
      }
    }
    TextValue use = b.node("use", {}, {}, v.dtype, "aten::sum(%" + v.name + ", None)");
    if (use.dtype != "f32")
      use = b.node("up", {}, {}, "f32",
                   "aten::_to_copy(%" + use.name + ", torch.float32, None, None, None, False, None)");
    uses.push_back(use.name);
  }
  add_input("arg %loss_bias : f32[]");
  // Every use meets an input in a two-input add: no chain runs into the output.
  std::string total = "loss_bias";
  for (const std::string& u : uses)
    total = b.node("acc", {}, {}, "f32", "aten::add.Tensor(%" + total + ", %" + u + ", 1)").name;
  return "mesh dp=" + std::to_string(dp) + " rank " + std::to_string(rank) + "\ngraph(" + inputs + "):\n" + b.body() +
         "  return (%" + total + ")\n";
}

const std::vector<std::string>& alias_placements() {
  static const std::vector<std::string> all = {"(S(0), S(0))", "(S(0), R)", "(R, R)", "(R, S(1))", "(S(1), R)"};
  return all;
}

std::string placed(const std::string& p) { return " placed" + p; }

}  // namespace

rc::Gen<std::string> arbitrary_fsdp_chain_graph() {
  return rc::gen::exec([] {
    const int dp = *rc::gen::element(2, 4);
    const int rank = *rc::gen::inRange(0, dp);
    const int params = *rc::gen::inRange(1, 4);
    std::vector<std::vector<int>> chains;
    std::vector<int> casts, computed, cuts;
    for (int p = 0; p < params; ++p) {
      chains.push_back(*rc::gen::container<std::vector<int>>(*rc::gen::inRange<size_t>(0, 5), rc::gen::inRange(0, kChainKinds)));
      casts.push_back(*rc::gen::weightedElement<int>({{3, 0}, {1, 1}}));
      computed.push_back(*rc::gen::weightedElement<int>({{5, 0}, {1, 1}}));
      cuts.push_back(*rc::gen::weightedElement<int>({{3, -1}, {1, 0}, {1, 1}, {1, 2}}));
    }
    return fsdp_graph(dp, rank, params, chains, casts, computed, cuts);
  });
}

rc::Gen<std::string> arbitrary_alias_graph() {
  return rc::gen::exec([] {
    const auto& ps = alias_placements();
    const int n = static_cast<int>(ps.size());
    const std::string px = ps[*rc::gen::inRange(0, n)];
    const int aliases = *rc::gen::inRange(1, 4);
    AliasGraphBuilder b;
    TextValue x{"x", {4, 8}, {8, 1}, "f32"};
    std::vector<std::string> alias_names, alias_placement;
    for (int i = 0; i < aliases; ++i) {
      const std::string pa = ps[*rc::gen::inRange(0, n)];
      std::string name = "a" + std::to_string(i);
      b.raw("  %" + name + " : f32[4, 8]" + placed(pa) + " = aten::alias(%x)\n");
      alias_names.push_back(name);
      alias_placement.push_back(pa);
    }
    // What a slot may want: the producer's placement, the alias's own, or any other.
    auto wanted = [&](const std::string& own) {
      int pick = *rc::gen::inRange(0, 3);
      return pick == 0 ? px : pick == 1 ? own : ps[*rc::gen::inRange(0, n)];
    };
    const int consumers = *rc::gen::inRange(aliases, aliases + 3);
    std::vector<std::string> outputs;
    for (int c = 0; c < consumers; ++c) {
      const int i = c < aliases ? c : *rc::gen::inRange(0, aliases);  // every alias has a reader
      const std::string a = alias_names[i], pa = alias_placement[i];
      const int kind = *rc::gen::inRange(0, 4);
      std::string rhs, wants;
      if (kind == 0) {
        rhs = "aten::neg(%" + a + ")";
        wants = wanted(pa);
      } else if (kind == 1) {
        rhs = "aten::add.Tensor(%" + a + ", %" + a + ", 1)";
        wants = wanted(pa) + ", " + wanted(pa);
      } else if (kind == 2) {
        rhs = "aten::add.Tensor(%" + a + ", %x, 1)";
        wants = wanted(pa) + ", " + wanted(px);
      } else {
        const int j = *rc::gen::inRange(0, aliases);
        rhs = "aten::add.Tensor(%" + a + ", %" + alias_names[j] + ", 1)";
        wants = wanted(pa) + ", " + wanted(alias_placement[j]);
      }
      TextValue out{"c" + std::to_string(c), {4, 8}, {8, 1}, "f32"};
      b.raw("  %" + out.name + " : f32[4, 8] = " + rhs + "  #{wants=[" + wants + "]}\n");
      outputs.push_back("%" + out.name);
    }
    std::string ret;
    for (const auto& o : outputs) ret += (ret.empty() ? "" : ", ") + o;
    return "mesh dp=" + std::to_string(*rc::gen::element(2, 32)) + ", tp=" + std::to_string(*rc::gen::element(2, 8)) +
           " rank 0\ngraph(\n    arg %x : f32[4, 8]" + placed(px) + "):\n" + b.body() + "  return (" + ret + ")\n";
  });
}

std::string fsdp_chain_graph_for_seed(uint64_t seed) {
  return arbitrary_fsdp_chain_graph()(rc::Random(seed), rc::kNominalSize).value();
}

std::string alias_graph_for_seed(uint64_t seed) { return arbitrary_alias_graph()(rc::Random(seed), rc::kNominalSize).value(); }

}  // namespace passcheck::gen
