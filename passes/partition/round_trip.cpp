// partition_round_trip(): see round_trip.h. Structural keys: a value's key is its
// producer's operator and arguments with each operand replaced by the operand's key
// (graph inputs by name), hash-consed into short ids so deep graphs stay cheap; two
// values CSE would merge get equal keys, in either partition.
#include "passes/partition/round_trip.h"

#include "framework/check/memory_estimate.h"
#include "framework/ir/text.h"
#include "passes/partition/split.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <unordered_map>

namespace passcheck::passes {

namespace {

class StructuralKeys {
 public:
  /// Key of `v` in `graph`'s terms; ids are shared by every graph this object keys.
  std::string key(const ir::Value* v) {
    auto memo = memo_.find(v);
    if (memo != memo_.end()) return memo->second;
    std::string text;
    if (v->is_graph_input()) {
      text = "%" + v->name();
    } else {
      const ir::Node* n = v->producer();
      text = n->op() + "(";
      std::function<void(const ir::Arg&)> print = [&](const ir::Arg& a) {
        if (a.kind == ir::Arg::Kind::Value) {
          text += key(a.value);
        } else if (a.kind == ir::Arg::Kind::List) {
          text += "[";
          for (const ir::Arg& e : a.list()) {
            print(e);
            text += ",";
          }
          text += "]";
        } else {
          text += ir::print_arg(a);
        }
        text += ";";
      };
      for (const ir::Arg& a : n->args()) print(a);
      text += ")#" + std::to_string(v->output_index());
    }
    auto it = ids_.find(text);
    if (it == ids_.end()) it = ids_.emplace(text, "v" + std::to_string(ids_.size())).first;
    memo_[v] = it->second;
    texts_[it->second] = text;
    return it->second;
  }
  const std::string& text(const std::string& id) const { return texts_.at(id); }

 private:
  std::unordered_map<std::string, std::string> ids_;
  std::unordered_map<std::string, std::string> texts_;
  std::unordered_map<const ir::Value*, std::string> memo_;
};

PartitionSummary summarize(const ir::Module& module, StructuralKeys& keys) {
  PartitionSummary s;
  const size_t fwd = module.find_part("forward").value_or(0);
  const ir::Graph& forward = *module.parts.at(fwd).graph;
  for (const ir::Node* n : forward.nodes()) s.forward_all_gathers += n->op() == "_c10d_functional::all_gather_into_tensor";
  for (size_t i : module.linked_outputs(fwd)) {
    const ir::Value* v = forward.outputs().at(i);
    s.saved.push_back(v->name());
    s.saved_keys.push_back(keys.key(v));
  }
  s.saved_bytes = module.linked_bytes(fwd);
  s.peak_bytes = check::estimate_memory(forward).peak_bytes;
  for (size_t p = 0; p < module.parts.size(); ++p)
    if (p != fwd)
      s.peak_bytes = std::max(s.peak_bytes, s.saved_bytes + check::estimate_memory(*module.parts[p].graph).peak_bytes);
  return s;
}

check::PassResult run_module_pass(const check::PassRegistry& registry, const std::string& name,
                                  const std::map<std::string, std::string>& options, ir::Module& module) {
  const check::RegisteredPass& pass = registry.get(name);
  const check::PassOptions parsed(pass.info, options);
  if (pass.is_module_pass()) return pass.run_module(module, parsed);
  for (ir::ModulePart& part : module.parts) pass.run(*part.graph, parsed);
  return {};
}

}  // namespace

PartitionSummary summarize_partition(const ir::Module& module) {
  StructuralKeys keys;
  return summarize(module, keys);
}

std::string RoundTripResult::report() const {
  std::ostringstream out;
  out << "first partition: " << first_summary.forward_all_gathers << " forward all_gathers, "
      << first_summary.saved.size() << " saved values (" << first_summary.saved_bytes << " bytes), peak "
      << first_summary.peak_bytes << " bytes\n";
  out << "second partition: " << second_summary.forward_all_gathers << " forward all_gathers, "
      << second_summary.saved.size() << " saved values (" << second_summary.saved_bytes << " bytes), peak "
      << second_summary.peak_bytes << " bytes\n";
  for (const std::string& d : differences) out << "  " << d << "\n";
  return out.str();
}

RoundTripResult partition_round_trip(const ir::Graph& joint, const RoundTripOptions& options, double peak_tolerance) {
  const check::PassRegistry& registry = options.registry ? *options.registry : check::PassRegistry::global();
  RoundTripResult result;
  result.first = ir::Module::of_graph(joint.clone());
  std::map<std::string, std::string> first_options = options.first_options;
  first_options.emplace("tag-saves", "true");
  run_module_pass(registry, options.first_partition, first_options, result.first);

  ir::Module reimported = ir::Module::of_graph(join_module(result.first));
  run_module_pass(registry, "dce", {}, reimported);
  run_module_pass(registry, options.cse, {{"merge-collectives", "true"}}, reimported);
  run_module_pass(registry, options.second_partition, options.second_options, reimported);
  result.second = std::move(reimported);

  StructuralKeys keys;
  result.first_summary = summarize(result.first, keys);
  result.second_summary = summarize(result.second, keys);
  const PartitionSummary& a = result.first_summary;
  const PartitionSummary& b = result.second_summary;
  if (a.forward_all_gathers != b.forward_all_gathers)
    result.differences.push_back("forward all_gather count: first " + std::to_string(a.forward_all_gathers) +
                                 ", second " + std::to_string(b.forward_all_gathers));
  auto only_in = [&](const PartitionSummary& x, const PartitionSummary& y, const std::string& label) {
    const std::set<std::string> other(y.saved_keys.begin(), y.saved_keys.end());
    for (size_t i = 0; i < x.saved.size(); ++i)
      if (!other.count(x.saved_keys[i]))
        result.differences.push_back("saved only by the " + label + " partition: %" + x.saved[i] + " = " +
                                     keys.text(x.saved_keys[i]).substr(0, 200));
  };
  only_in(a, b, "first");
  only_in(b, a, "second");
  const double peak_a = static_cast<double>(a.peak_bytes), peak_b = static_cast<double>(b.peak_bytes);
  // One-sided: the second compile may hold less (cse merged a duplicate), never more.
  if (peak_b > peak_a * (1.0 + peak_tolerance))
    result.differences.push_back("peak memory: first " + std::to_string(a.peak_bytes) + " bytes, second " +
                                 std::to_string(b.peak_bytes) + " bytes");
  return result;
}

}  // namespace passcheck::passes
