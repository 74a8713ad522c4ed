// Random IR graphs for property tests. Generation works on a recipe (GraphRecipe) in
// which a value reference is an Arg of kind Value with a null pointer and an index in
// Arg::i; build_graph resolves index k to the (k mod n)-th value defined so far. The
// modulo keeps every shrunk recipe buildable, and shrinking an index towards 0 points
// the reference at the first graph input, which makes minimal counterexamples short.
#include "generators/random_graph.h"

#include "framework/ir/text.h"
#include "generators/choice.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace passcheck::gen {
namespace {

using ir::Arg;
using ir::TensorMeta;
using ir::ValueType;

struct ValueRecipe {
  ValueType type = ValueType::Tensor;
  std::optional<TensorMeta> meta;
  std::string name_hint;
  ir::InputRole role = ir::InputRole::Argument;  // inputs only
};

struct NodeRecipe {
  std::string op;
  std::vector<Arg> args;  // Value args carry an index in Arg::i, resolved by build_graph
  std::vector<ValueRecipe> outputs;
  ir::NodeMeta meta;
};

struct GraphRecipe {
  std::vector<ValueRecipe> inputs;
  std::vector<NodeRecipe> nodes;
  std::vector<int64_t> outputs;
};

rc::Gen<int64_t> int_gen() {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return choose<int64_t>({
      {3, rc::gen::inRange<int64_t>(0, 9)},
      {1, rc::gen::inRange<int64_t>(-8, 0)},
      {1, choose_value<int64_t>({kMin, kMax, kMin + 1, kMax - 1, -1, int64_t{1} << 40})},
      {1, rc::gen::arbitrary<int64_t>()},
  });
}

rc::Gen<double> double_gen() {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> specials = {
      0.0, 1.0, -0.0, 0.5, -2.5, inf, -inf, nan, std::copysign(nan, -1.0), 1e-300, -1e300,
      std::numeric_limits<double>::denorm_min(), -std::numeric_limits<double>::denorm_min(),
      std::numeric_limits<double>::min() / 3, std::numeric_limits<double>::max(),
      std::numeric_limits<double>::lowest(), 0.1, 1.0 / 3.0, 1e16, 123456789.0};
  return choose<double>({
      {2, choose_value(specials)},
      {1, rc::gen::map(rc::gen::inRange(-4000, 4000), [](int x) { return x / 16.0; })},
      {2, rc::gen::arbitrary<double>()},
  });
}

// Strings that stress quoting and comment handling in the text form.
rc::Gen<std::string> string_gen() {
  return choose<std::string>({
      {2, choose_value<std::string>({"", "a", "say \"hi\"", "back\\slash", "line\nbreak", "\ttab", "trail\\",
                                     "#{x=1}", "# not a comment", "%x", "a, b)", "caf\xc3\xa9", "\r\x01\x7f",
                                     "\\n"})},
      {1, rc::gen::string<std::string>()},
  });
}

rc::Gen<c10::Device> device_gen() {
  return choose_value<c10::Device>({c10::Device(c10::kCPU), c10::Device(c10::kCUDA, 0), c10::Device(c10::kCUDA, 1),
                                    c10::Device(c10::kMeta), c10::Device(c10::kCUDA)});
}

// The last few of each kind have no torch.* name and print as torch.dtype(N) etc.
rc::Gen<Arg> enum_arg_gen() {
  using c10::ScalarType;
  return choose<Arg>({
      {1, rc::gen::map(choose_value<ScalarType>({ScalarType::Float, ScalarType::BFloat16, ScalarType::Half,
                                                 ScalarType::Double, ScalarType::Long, ScalarType::Bool,
                                                 ScalarType::Int, ScalarType::Byte, ScalarType::ComplexFloat,
                                                 ScalarType::ComplexHalf, ScalarType::QInt8}),
                       [](ScalarType t) { return Arg::dtype(t); })},
      {1, rc::gen::map(choose_value<c10::Layout>({c10::Layout::Strided, c10::Layout::Sparse, c10::Layout::SparseCsr,
                                                  c10::Layout::Mkldnn}),
                       [](c10::Layout l) { return Arg::layout(l); })},
      {1, rc::gen::map(choose_value<c10::MemoryFormat>({c10::MemoryFormat::Contiguous, c10::MemoryFormat::Preserve,
                                                        c10::MemoryFormat::ChannelsLast,
                                                        c10::MemoryFormat::ChannelsLast3d}),
                       [](c10::MemoryFormat m) { return Arg::memory_format(m); })},
  });
}

rc::Gen<Arg> value_ref_gen() {
  return rc::gen::map(rc::gen::inRange<int64_t>(0, 64), [](int64_t index) {
    Arg a;
    a.kind = Arg::Kind::Value;
    a.i = index;
    return a;
  });
}

// None comes first so that shrinking simplifies an argument to None.
rc::Gen<Arg> arg_gen(int depth, bool with_values) {
  auto scalar = choose<Arg>({
      {1, rc::gen::just(Arg::none())},
      {1, rc::gen::map(rc::gen::arbitrary<bool>(), [](bool b) { return Arg::boolean(b); })},
      {3, rc::gen::map(int_gen(), [](int64_t i) { return Arg::integer(i); })},
      {2, rc::gen::map(double_gen(), [](double f) { return Arg::real(f); })},
      {1, rc::gen::map(string_gen(), [](std::string s) { return Arg::string(std::move(s)); })},
      {1, rc::gen::map(device_gen(), [](c10::Device d) { return Arg::dev(d); })},
      {1, enum_arg_gen()},
  });
  auto list = depth == 0 ? rc::gen::just(Arg::of_list({}))
                         : rc::gen::map(up_to<std::vector<Arg>>(5, arg_gen(depth - 1, with_values)),
                                        [](std::vector<Arg> items) { return Arg::of_list(std::move(items)); });
  return choose<Arg>({{6, scalar}, {with_values ? 4u : 0u, value_ref_gen()}, {2, list}});
}

rc::Gen<ValueRecipe> value_recipe_gen(bool is_input) {
  return rc::gen::exec([is_input] {
    ValueRecipe v;
    v.type = *choose_value<ValueType>({{8, ValueType::Tensor}, {1, ValueType::Int}, {1, ValueType::Float},
                                       {1, ValueType::Bool}, {is_input ? 0u : 1u, ValueType::None}});
    if (v.type == ValueType::Tensor && *choose_value<bool>({{6, true}, {1, false}}))
      v.meta = *arbitrary_tensor_meta();
    if (is_input) {
      v.role = *choose_value<ir::InputRole>(
          {ir::InputRole::Argument, ir::InputRole::Parameter, ir::InputRole::Buffer});
      v.name_hint = *choose_value<std::string>(
          {"x", "w", "w1", "x_1", "layers.0.weight", "running_mean", "3d", "bad-name", ""});
    } else {
      // Empty hints take the operator's base name, so repeated ops collide and get "_N".
      v.name_hint = *choose_value<std::string>({{6, ""}, {1, "out"}, {1, "grad.w"}, {1, "mm_1"}, {1, "0x"},
                                                {1, "a b"}});
    }
    return v;
  });
}

rc::Gen<NodeRecipe> node_recipe_gen() {
  return rc::gen::exec([] {
    NodeRecipe n;
    n.op = *choose_value<std::string>(
        {"aten::mm", "aten::add.Tensor", "aten::split.Tensor", "aten::gelu", "aten::sum.dim_IntList",
         "aten::_to_copy", "aten::native_layer_norm", "aten::empty.memory_format", "aten::t", "aten::view",
         "_c10d_functional::all_gather_into_tensor", "_c10d_functional::wait_tensor", "prims::convert_element_type"});
    n.args = *up_to<std::vector<Arg>>(24, arg_gen(2, true));
    // Zero-output nodes (collectives, in-place ops) are rare but must survive the text form.
    const auto output_count = *choose_value<std::size_t>({{6, 1}, {2, 2}, {1, 3}, {1, 0}});
    n.outputs = *rc::gen::container<std::vector<ValueRecipe>>(output_count, value_recipe_gen(false));
    n.meta = *arbitrary_node_meta();
    return n;
  });
}

Arg resolve(const Arg& recipe, const std::vector<ir::Value*>& defined) {
  if (recipe.kind == Arg::Kind::Value) return Arg::of(defined[recipe.i % defined.size()]);
  if (recipe.kind != Arg::Kind::List) return recipe;
  std::vector<Arg> items;
  for (const Arg& item : recipe.list()) items.push_back(resolve(item, defined));
  return Arg::of_list(std::move(items));
}

std::shared_ptr<ir::Graph> build_graph(const GraphRecipe& recipe) {
  auto graph = std::make_shared<ir::Graph>();
  std::vector<ir::Value*> defined;
  for (const ValueRecipe& in : recipe.inputs)
    defined.push_back(graph->add_input(in.name_hint, in.type, in.meta, in.role));
  for (const NodeRecipe& n : recipe.nodes) {
    std::vector<Arg> args;
    for (const Arg& a : n.args) args.push_back(resolve(a, defined));
    ir::Node* node = graph->create(n.op, std::move(args));
    node->mutable_meta() = n.meta;
    for (const ValueRecipe& out : n.outputs) defined.push_back(node->add_output(out.type, out.meta, out.name_hint));
  }
  for (int64_t index : recipe.outputs) graph->add_output(defined[index % defined.size()]);
  return graph;
}

}  // namespace

rc::Gen<TensorMeta> arbitrary_tensor_meta() {
  return rc::gen::exec([] {
    TensorMeta m;
    m.dtype = *choose_value<c10::ScalarType>({c10::ScalarType::Float, c10::ScalarType::BFloat16,
                                              c10::ScalarType::Half, c10::ScalarType::Double,
                                              c10::ScalarType::Long, c10::ScalarType::Bool});
    const auto rank = *rc::gen::inRange<std::size_t>(0, 5);
    m.sizes = *rc::gen::container<std::vector<int64_t>>(rank, rc::gen::inRange<int64_t>(0, 8));
    m.strides = TensorMeta::contiguous_strides(m.sizes);
    if (*choose_value<bool>({{3, false}, {1, true}}))
      m.strides = *rc::gen::container<std::vector<int64_t>>(rank, rc::gen::inRange<int64_t>(0, 64));
    m.device = *choose_value<c10::Device>(
        {{6, c10::Device(c10::kCPU)}, {1, c10::Device(c10::kMeta)}, {1, c10::Device(c10::kCUDA, 0)}});
    return m;
  });
}

rc::Gen<ir::NodeMeta> arbitrary_node_meta() {
  return rc::gen::exec([] {
    ir::NodeMeta m;
    m.phase = *choose_value<ir::Phase>({ir::Phase::Forward, ir::Phase::Loss, ir::Phase::Backward,
                                        ir::Phase::Optimizer});
    m.module_fqn = *choose<std::string>({
        {3, choose_value<std::string>({"", "layers.0.attn.q_proj", "model.layers.11.mlp", "loss"})},
        {1, string_gen()},
    });
    m.seq_nr = *choose<int64_t>({{1, rc::gen::just<int64_t>(-1)}, {2, rc::gen::inRange<int64_t>(0, 5000)}});
    m.recompute = *choose_value<ir::RecomputePolicy>(
        {ir::RecomputePolicy::Unset, ir::RecomputePolicy::MustSave, ir::RecomputePolicy::PreferSave,
         ir::RecomputePolicy::MustRecompute, ir::RecomputePolicy::PreferRecompute});
    if (*rc::gen::arbitrary<bool>()) m.ac_region_id = *rc::gen::inRange<int64_t>(-2, 48);
    m.custom = *up_to<std::map<std::string, std::string>>(
        4,
        choose<std::string>(
            {{2, choose_value<std::string>({"recomputed_from", "chunk_id", "chunk.role", "k=v"})}, {1, string_gen()}}),
        string_gen());
    return m;
  });
}

rc::Gen<Arg> arbitrary_constant_arg() { return arg_gen(2, false); }

rc::Gen<std::shared_ptr<ir::Graph>> arbitrary_graph() {
  auto recipe = rc::gen::exec([] {
    GraphRecipe g;
    g.inputs.push_back(*value_recipe_gen(true));
    for (auto& extra : *up_to<std::vector<ValueRecipe>>(3, value_recipe_gen(true))) g.inputs.push_back(extra);
    g.nodes = *up_to<std::vector<NodeRecipe>>(25, node_recipe_gen());
    g.outputs = *up_to<std::vector<int64_t>>(4, rc::gen::inRange<int64_t>(0, 64));
    return g;
  });
  return rc::gen::map(recipe, build_graph);
}

std::shared_ptr<ir::Graph> graph_for_seed(uint64_t seed, int size) {
  return arbitrary_graph()(rc::Random(seed), size).value();
}

}  // namespace passcheck::gen

namespace passcheck::ir {
void showValue(const Graph& graph, std::ostream& os) { os << "\n" << print_graph(graph); }
}  // namespace passcheck::ir
