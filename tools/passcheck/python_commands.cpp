// passcheck export-python: writes a graph file as a Python file that rebuilds it as a
// torch.fx GraphModule (python_writer.h), and optionally the inputs `passcheck run`
// would generate and the outputs its executor computes on them, as torch.save archives
// of a list (torch::pickle_save), so Python can run the module on the same inputs and
// compare bit for bit. docs/python-passes.md.
#include "tools/passcheck/commands.h"
#include "workflows/graph_files/graph_tools.h"
#include "workflows/python_bridge/python_writer.h"
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/io/files.h"
#include "framework/ir/text.h"
#include "generators/program_case.h"

#include <CLI/CLI.hpp>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/serialize.h>

#include <iostream>
#include <memory>

namespace passcheck::cli {

namespace {

// A torch.save archive of the values as one Python list.
void save_value_list(const std::string& path, const std::vector<c10::IValue>& values) {
  c10::impl::GenericList list(c10::AnyType::get());
  for (const c10::IValue& v : values) list.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
  std::vector<char> bytes = torch::pickle_save(c10::IValue(list));
  io::write_file_atomically(path, std::string(bytes.begin(), bytes.end()), "torch.save archive");
}

}  // namespace

int run_export_python(const ExportPythonArgs& args) {
  return guarded("export-python", [&] {
    if (args.file.empty() == (args.generated < 0))
      throw std::invalid_argument("give either a graph file or --generated SEED");
    std::shared_ptr<ir::Graph> graph;
    std::string source = args.file;
    exec::InputOptions input_options;
    input_options.seed = args.seed;
    input_options.int_high = args.int_high;
    if (args.generated >= 0) {
      // The case `passcheck fuzz` runs for this case seed, with the inputs it runs it on.
      gen::GeneratedCase c = gen::generate_case(static_cast<uint64_t>(args.generated));
      graph = c.graph;
      input_options.seed = c.input_seed;
      input_options.int_high = c.int_high;
      source = "generate_case(" + std::to_string(args.generated) + ")";
    } else {
      graph = graph_files::load_graph_file(args.file);
    }
    if (!args.graph_out.empty()) io::write_file_atomically(args.graph_out, graph->print(), "graph file");
    std::string text = python_bridge::write_python_graph(*graph, source);
    if (args.out.empty()) std::cout << text;
    else io::write_file_atomically(args.out, text, "Python file");
    if (!args.save_inputs.empty() || !args.save_outputs.empty()) {
      std::vector<c10::IValue> inputs = exec::make_inputs(*graph, input_options);
      if (!args.save_inputs.empty()) save_value_list(args.save_inputs, inputs);  // before in-place ops change them
      if (!args.save_outputs.empty()) {
        exec::Executor executor(*graph, exec::ExecutorOptions{});
        save_value_list(args.save_outputs, executor.run(inputs));
      }
    }
    if (!args.out.empty())
      std::cerr << "wrote " << args.out << " (" << graph->num_nodes() << " nodes, " << graph->inputs().size()
                << " inputs)\n";
    return 0;
  });
}

std::function<std::optional<int>()> add_python_commands(CLI::App& app) {
  struct Commands {
    ExportPythonArgs export_python;
    CLI::App* export_cmd = nullptr;
  };
  auto c = std::make_shared<Commands>();
  ExportPythonArgs& a = c->export_python;
  c->export_cmd = app.add_subcommand("export-python", "Write a graph file as Python that rebuilds it as a torch.fx GraphModule");
  c->export_cmd->add_option("file", a.file, "Graph text file");
  c->export_cmd->add_option("--generated", a.generated, "Instead of a file: the generated fuzz case of this case seed")
      ->check(CLI::NonNegativeNumber);
  c->export_cmd->add_option("--graph-out", a.graph_out, "Also write the graph's passcheck text here");
  c->export_cmd->add_option("-o,--out", a.out, "Python file to write (default: standard output)");
  c->export_cmd->add_option("--save-inputs", a.save_inputs,
                            "Also write the inputs `passcheck run` generates (torch.save archive of a list)");
  c->export_cmd->add_option("--save-outputs", a.save_outputs,
                            "Also write the outputs passcheck's executor computes on those inputs (same format)");
  c->export_cmd->add_option("--seed", a.seed, "Input seed (as `passcheck run --seed`)")->capture_default_str();
  c->export_cmd->add_option("--int-high", a.int_high, "Exclusive upper bound of generated integer inputs")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 40))
      ->capture_default_str();
  return [c]() -> std::optional<int> {
    if (*c->export_cmd) return run_export_python(c->export_python);
    return std::nullopt;
  };
}

}  // namespace passcheck::cli
