// passcheck trace / run / check / models.
#include "framework/cli/commands.h"

#include "framework/check/compare.h"
#include "framework/compat/torch_compat.h"
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/ir/text.h"
#include "framework/trace/tracer.h"
#include "oracles/models/subject.h"
#include "oracles/training_driver.h"

#include <ATen/ATen.h>

#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

namespace passcheck::cli {

namespace {

// Runs a command body, turning every error into a message and exit code 2.
int guarded(const char* command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const c10::Error& e) {
    std::cerr << "passcheck " << command << ": error: " << compat::error_message(e) << "\n";
  } catch (const std::exception& e) {
    std::cerr << "passcheck " << command << ": error: " << e.what() << "\n";
  }
  return 2;
}

c10::Device parse_device(const std::string& text) {
  c10::Device device(text);
  if (device.is_cuda() && !at::hasCUDA()) throw std::invalid_argument("--device " + text + ": no CUDA device is available");
  return device;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot open graph file '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string summarize(const c10::IValue& v) {
  std::ostringstream os;
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) return "undefined tensor";
    os << check::dtype_name(t) << t.sizes();
    if (!t.device().is_meta() && t.numel() > 0) {
      at::Tensor d = t.detach().to(at::kCPU).to(at::kDouble);
      os << "  sum=" << d.sum().item<double>() << "  min=" << d.min().item<double>() << "  max=" << d.max().item<double>();
    }
  } else {
    os << v;
  }
  return os.str();
}

}  // namespace

int run_trace(const TraceArgs& args) {
  return guarded("trace", [&] {
    models::SubjectOptions options;
    options.seed = args.seed;
    options.batch_size = args.batch_size;
    options.seq_len = args.seq_len;
    if (args.meta) options.device = c10::Device(c10::DeviceType::Meta);
    auto subject = models::make_subject(args.model, options);
    trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), /*on_meta=*/false);
    std::string text = "# passcheck trace --model " + args.model + (args.meta ? " --meta" : "") + "\n" +
                       "# " + std::to_string(program.graph().num_nodes()) + " nodes, " +
                       std::to_string(program.num_state_inputs()) + " state inputs\n" + program.graph().print();
    if (args.out.empty()) {
      std::cout << text;
    } else {
      std::ofstream out(args.out);
      if (!out) throw std::invalid_argument("cannot write '" + args.out + "'");
      out << text;
      std::cerr << "wrote " << program.graph().num_nodes() << " nodes to " << args.out << "\n";
    }
    return 0;
  });
}

int run_graph_file(const RunArgs& args) {
  return guarded("run", [&] {
    std::unique_ptr<ir::Graph> graph = ir::parse_graph(read_file(args.file), args.file);
    exec::ExecutorOptions exec_options;
    exec_options.track_live_bytes = true;
    exec_options.check_metadata = args.check_metadata;
    exec::Executor executor(*graph, exec_options);
    exec::InputOptions input_options;
    input_options.seed = args.seed;
    input_options.int_high = args.int_high;
    std::vector<c10::IValue> outputs = executor.run(exec::make_inputs(*graph, input_options));
    const auto& stats = executor.last_stats();
    std::cout << args.file << ": ran " << stats.nodes_run << " nodes; peak live bytes " << stats.peak_live_bytes
              << " (inputs " << stats.input_bytes << ")\n";
    for (size_t i = 0; i < outputs.size(); ++i)
      std::cout << "  output " << i << " %" << graph->outputs()[i]->name() << ": " << summarize(outputs[i]) << "\n";
    return 0;
  });
}

int run_check(const CheckArgs& args) {
  return guarded("check", [&] {
    oracles::DriverOptions options;
    options.model = args.model;
    options.steps = args.steps;
    options.optimizer = oracles::parse_optimizer(args.optimizer);
    options.learning_rate = args.learning_rate;
    options.trace_on_meta = args.meta;
    options.subject.seed = args.seed;
    options.subject.batch_size = args.batch_size;
    options.subject.seq_len = args.seq_len;
    options.subject.device = parse_device(args.device);
    oracles::DriverReport report = oracles::run_traced_vs_eager(options);
    std::cout << "passcheck check: traced vs eager, " << args.steps << " steps, optimizer " << args.optimizer
              << ", device " << args.device << (args.meta ? ", traced on meta" : "") << "\n";
    std::cout << report.format();
    if (args.verbose)
      for (const auto& step : report.steps) {
        std::cout << "\nstep " << step.step << ":\n" << check::format_comparison_table(step.comparisons);
      }
    return report.equal() ? 0 : 1;
  });
}

int run_models() {
  for (const auto& name : models::available_subjects()) std::cout << name << "\n";
  return 0;
}

}  // namespace passcheck::cli
