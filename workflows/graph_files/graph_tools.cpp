// Graph files as first-class objects (see graph_tools.h).
#include "workflows/graph_files/graph_tools.h"
#include "framework/check/verifier.h"
#include "framework/io/files.h"

#include "framework/check/schema_check.h"
#include "framework/exec/executor.h"
#include "framework/exec/module_executor.h"
#include "framework/exec/inputs.h"
#include "framework/ir/text.h"

#include <ATen/ATen.h>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace passcheck::graph_files {

std::unique_ptr<ir::Graph> load_graph_file(const std::string& path) {
  std::unique_ptr<ir::Graph> graph = ir::parse_graph(io::read_file(path, "graph file"), path);
  // Operators, arities and declared output kinds first (file:line:col), then the
  // verifier with the argument checks, before anything runs: LibTorch unpacks arguments
  // with internal asserts.
  check::check_against_schemas(*graph, path);
  std::vector<check::VerifierIssue> issues = check::verify_graph(*graph);
  if (!issues.empty()) {
    std::string message = issues.front().message;
    if (message.rfind(path + ":", 0) != 0) message = path + ": " + message;
    if (issues.size() > 1) message += " (+" + std::to_string(issues.size() - 1) + " more)";
    throw std::invalid_argument(message);
  }
  return graph;
}

ir::Module load_module_file(const std::string& path) {
  ir::Module module = ir::parse_module(io::read_file(path, "module file"), path);
  for (const ir::ModulePart& part : module.parts) check::check_against_schemas(*part.graph, path);
  std::vector<check::VerifierIssue> issues = check::verify_module(module);
  if (!issues.empty()) {
    std::string message = path + ": " + issues.front().message;
    if (issues.size() > 1) message += " (+" + std::to_string(issues.size() - 1) + " more)";
    throw std::invalid_argument(message);
  }
  return module;
}

namespace {

// Every device a graph names, in its types and in its arguments.
std::vector<c10::Device> devices_in(const ir::Graph& graph) {
  std::vector<c10::Device> found;
  auto note = [&](const c10::Device& d) {
    for (const c10::Device& f : found)
      if (f == d) return;
    found.push_back(d);
  };
  auto note_meta = [&](const ir::Value* v) {
    if (v->meta()) note(v->meta()->device);
  };
  std::function<void(const ir::Arg&)> note_arg = [&](const ir::Arg& a) {
    if (a.kind == ir::Arg::Kind::Device) note(a.device);
    if (a.kind == ir::Arg::Kind::List)
      for (const ir::Arg& e : a.list()) note_arg(e);
  };
  for (const ir::Value* in : graph.inputs()) note_meta(in);
  for (const ir::Node* n : graph.nodes()) {
    for (const ir::Arg& a : n->args()) note_arg(a);
    for (const ir::Value* out : n->outputs()) note_meta(out);
  }
  return found;
}

std::string describe_input(const ir::Value& v) { return ir::print_type(v); }

std::vector<c10::IValue> fresh_copies(const std::vector<c10::IValue>& values) {
  std::vector<c10::IValue> out;
  out.reserve(values.size());
  for (const c10::IValue& v : values) out.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
  return out;
}

std::vector<c10::IValue> run_seeded(const ir::Graph& g, std::vector<c10::IValue>& inputs, uint64_t rng_seed,
                                    int64_t max_bytes) {
  // Both runs start from the same generator state (CPU and, when present, CUDA).
  at::manual_seed(rng_seed);
  exec::ExecutorOptions options;
  options.check_metadata = true;
  options.max_bytes = max_bytes;
  return exec::Executor(g, options).run(inputs);
}

std::string ivalue_text(const c10::IValue& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

EquivRow compare_values(const std::string& label, const c10::IValue& a, const c10::IValue& b) {
  EquivRow row;
  row.label = label;
  if (a.isTensor() && b.isTensor()) {
    row.comparison = check::compare_bitwise(label, a.toTensor(), b.toTensor());
    return row;
  }
  row.tensor = false;
  row.a_text = a.isTensor() ? "a tensor" : ivalue_text(a);
  row.b_text = b.isTensor() ? "a tensor" : ivalue_text(b);
  if (a.isTensor() != b.isTensor()) row.b_text += " (kinds differ)";
  return row;
}

size_t differ_inputs(const std::vector<EquivRow>& rows) {
  size_t n = 0;
  for (const EquivRow& r : rows) n += r.is_input && !r.equal();
  return n;
}

std::string format_index(const std::vector<int64_t>& index) {
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + "]";
}

}  // namespace

size_t retarget_graph(ir::Graph& graph, const std::string& device_text, bool require_available) {
  std::optional<c10::Device> parsed;
  try {
    parsed = c10::Device(device_text);
  } catch (const c10::Error&) {
    throw std::invalid_argument("--device '" + device_text + "': not a device (cpu, cuda, cuda:N or meta)");
  }
  const c10::Device to = *parsed;
  if (require_available && to.is_cuda() && !at::hasCUDA())
    throw std::invalid_argument("--device " + device_text + ": no CUDA device is available");
  size_t changed = 0;
  for (const c10::Device& from : devices_in(graph))
    if (from != to) changed += ir::retarget_device(graph, from, to);
  return changed;
}

namespace {

std::vector<std::string> input_differences(const std::vector<ir::Value*>& a, const std::vector<ir::Value*>& b) {
  std::map<std::string, const ir::Value*> in_b;
  for (const ir::Value* v : b) in_b[v->name()] = v;
  std::set<std::string> in_a;
  std::vector<std::string> problems;
  for (const ir::Value* v : a) {
    in_a.insert(v->name());
    auto it = in_b.find(v->name());
    if (it == in_b.end()) {
      problems.push_back("only in A: %" + v->name() + " : " + describe_input(*v));
      continue;
    }
    const std::string ta = describe_input(*v), tb = describe_input(*it->second);
    if (ta != tb) problems.push_back("%" + v->name() + ": " + ta + " in A vs " + tb + " in B");
  }
  for (const ir::Value* v : b)
    if (!in_a.count(v->name())) problems.push_back("only in B: %" + v->name() + " : " + describe_input(*v));
  return problems;
}

// The module's inputs as values: each one's declaration in the first part taking it.
std::vector<ir::Value*> module_inputs(const ir::Module& m) {
  std::map<std::string, ir::Value*> found;
  for (const ir::ModulePart& part : m.parts)
    for (size_t s = 0; s < part.input_sources.size(); ++s)
      if (!part.input_sources[s]) found.emplace(part.graph->inputs()[s]->name(), part.graph->inputs()[s]);
  std::vector<ir::Value*> out;
  for (const std::string& name : m.input_names) {
    auto it = found.find(name);
    if (it == found.end())
      throw std::invalid_argument("module input %" + name + " is taken by no part, so its type is unknown");
    out.push_back(it->second);
  }
  return out;
}

// What compare_runs needs of the second subject: its inputs, how to run it and how to
// name its outputs.
struct SecondSubject {
  std::vector<ir::Value*> inputs;
  std::function<std::vector<c10::IValue>(std::vector<c10::IValue>&)> run;
  std::function<std::string(size_t)> output_name;
};

void refuse_uncomputable(const ir::Graph& g, const std::string& which) {
  if (!g.symbols().empty())
    throw std::invalid_argument("graph " + which +
                                " is symbolic (it declares symbols); concretize it first "
                                "(passcheck opt FILE --pipeline concretize)");
  for (const c10::Device& d : devices_in(g))
    if (d.is_meta())
      throw std::invalid_argument("graph " + which + " is on the meta device, which computes no values; give --device cpu");
}

EquivReport compare_runs(const ir::Graph& a, const SecondSubject& b, const EquivOptions& options) {
  std::vector<std::string> problems = input_differences(a.inputs(), b.inputs);
  if (!problems.empty()) {
    std::string message = "the graphs take different inputs:";
    for (const std::string& p : problems) message += "\n  " + p;
    throw InputMismatch(message);
  }

  exec::InputOptions input_options;
  input_options.seed = options.seed;
  input_options.int_high = options.int_high;
  input_options.max_bytes = options.max_bytes;
  const std::vector<c10::IValue> generated = options.inputs_file.empty()
                                                 ? exec::make_inputs(a, input_options)
                                                 : exec::load_inputs(options.inputs_file, a.inputs());
  std::map<std::string, c10::IValue> by_name;
  for (size_t i = 0; i < a.inputs().size(); ++i) by_name[a.inputs()[i]->name()] = generated[i];
  std::vector<c10::IValue> inputs_b_order;
  for (const ir::Value* v : b.inputs) inputs_b_order.push_back(by_name.at(v->name()));

  std::vector<c10::IValue> inputs_a = fresh_copies(generated), inputs_b = fresh_copies(inputs_b_order);
  std::vector<c10::IValue> out_a = run_seeded(a, inputs_a, options.rng_seed, options.max_bytes);
  at::manual_seed(options.rng_seed);
  std::vector<c10::IValue> out_b = b.run(inputs_b);

  EquivReport report;
  if (out_a.size() != out_b.size())
    report.structural_problems.push_back("output count differs: " + std::to_string(out_a.size()) + " in A vs " +
                                         std::to_string(out_b.size()) + " in B");
  for (size_t i = 0; i < std::min(out_a.size(), out_b.size()); ++i)
    report.rows.push_back(compare_values("output " + std::to_string(i) + " (%" + a.outputs()[i]->name() + " / " +
                                             b.output_name(i) + ")",
                                         out_a[i], out_b[i]));
  // What the runs left in their inputs: an in-place update dropped or doubled by a pass
  // shows here even when no output reads the buffer.
  std::map<std::string, size_t> index_b;
  for (size_t i = 0; i < b.inputs.size(); ++i) index_b[b.inputs[i]->name()] = i;
  for (size_t i = 0; i < a.inputs().size(); ++i) {
    if (!inputs_a[i].isTensor()) continue;
    const std::string& name = a.inputs()[i]->name();
    report.rows.push_back(compare_values("input %" + name + " after the run", inputs_a[i], inputs_b[index_b.at(name)]));
    report.rows.back().is_input = true;
  }
  return report;
}

}  // namespace

std::vector<std::string> input_differences(const ir::Graph& a, const ir::Graph& b) {
  return input_differences(a.inputs(), b.inputs());
}

bool EquivReport::equal() const {
  if (!structural_problems.empty()) return false;
  for (const EquivRow& r : rows)
    if (!r.equal()) return false;
  return true;
}

std::string EquivReport::format() const {
  std::ostringstream os;
  size_t differ = 0, inputs = 0;
  for (const std::string& p : structural_problems) os << "  " << p << "\n";
  for (const EquivRow& r : rows) {
    inputs += r.is_input;
    if (r.is_input && r.equal()) continue;
    os << "  " << r.label << ": ";
    if (r.equal()) {
      os << "equal";
      if (r.tensor) os << " (" << r.comparison.dtype << check::format_sizes(r.comparison.sizes) << ")";
      os << "\n";
      continue;
    }
    ++differ;
    if (!r.tensor) {
      os << "DIFFER: " << r.a_text << " vs " << r.b_text << "\n";
      continue;
    }
    const check::TensorComparison& c = r.comparison;
    if (!c.values_differ()) {
      os << "DIFFER: " << c.problem << "\n";
      continue;
    }
    os << "DIFFER: " << c.mismatches << " of " << c.numel << " elements, first at index "
       << format_index(c.first_mismatch_index) << ": A " << ir::format_double(c.expected_value) << " vs B "
       << ir::format_double(c.actual_value) << " (" << c.first_ulp << " ULP; max " << c.max_ulp << " ULP)\n";
  }
  if (inputs) os << "  inputs after the run: " << inputs - differ_inputs(rows) << " of " << inputs << " equal\n";
  if (equal())
    os << "verdict: EQUIVALENT (" << rows.size() << " values compared bit for bit)\n";
  else
    os << "verdict: DIFFERENT (" << differ << " of " << rows.size() << " values differ"
       << (structural_problems.empty() ? "" : ", outputs do not correspond") << ")\n";
  return os.str();
}

EquivReport compare_graphs(const ir::Graph& a, const ir::Graph& b, const EquivOptions& options) {
  refuse_uncomputable(a, "A");
  refuse_uncomputable(b, "B");
  SecondSubject second;
  second.inputs = b.inputs();
  second.run = [&](std::vector<c10::IValue>& inputs) {
    exec::ExecutorOptions run_options;
    run_options.check_metadata = true;
    run_options.max_bytes = options.max_bytes;
    return exec::Executor(b, run_options).run(inputs);
  };
  second.output_name = [&](size_t i) { return "%" + b.outputs()[i]->name(); };
  return compare_runs(a, second, options);
}

EquivReport compare_graph_with_module(const ir::Graph& a, const ir::Module& b, const EquivOptions& options) {
  refuse_uncomputable(a, "A");
  for (const ir::ModulePart& part : b.parts) refuse_uncomputable(*part.graph, "B (part '" + part.name + "')");
  SecondSubject second;
  second.inputs = module_inputs(b);
  second.run = [&](std::vector<c10::IValue>& inputs) {
    exec::ExecutorOptions run_options;
    run_options.check_metadata = true;
    run_options.max_bytes = options.max_bytes;
    return exec::ModuleExecutor(b, run_options).run(inputs);
  };
  second.output_name = [&](size_t i) {
    const ir::PartOutput& o = b.outputs.at(i);
    return b.parts[o.part].name + ".%" + b.parts[o.part].graph->outputs()[o.output]->name();
  };
  return compare_runs(a, second, options);
}

}  // namespace passcheck::graph_files
