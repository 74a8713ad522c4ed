// passcheck trace / run / check / models.
#include "tools/passcheck/commands.h"

#include "framework/ir/subgraph.h"
#include "tools/passcheck/check_common.h"
#include "tools/passcheck/report_commands.h"
#include "framework/io/files.h"

#include "framework/check/compare.h"
#include "framework/check/memory_estimate.h"
#include "framework/check/pipeline.h"
#include "framework/check/repro.h"
#include "workflows/graph_files/graph_tools.h"
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/ir/text.h"
#include "framework/trace/tracer.h"
#include "oracles/models/configs.h"
#include "oracles/models/subject.h"
#include "oracles/eager_checkpoint.h"
#include "oracles/symbolic_trace.h"
#include "oracles/training_driver.h"
#include "suites/mutants/mutants.h"

#include <ATen/ATen.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <iostream>
#include <sstream>

namespace passcheck::cli {

namespace {

c10::Device parse_device(const std::string& text) {
  c10::Device device(text);
  if (device.is_cuda() && !at::hasCUDA()) throw std::invalid_argument("--device " + text + ": no CUDA device is available");
  return device;
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

std::string clip_message(const std::string& message) {
  // A file's token can be megabytes long (a 100 MB value name): each word is cut to its
  // ends, the message to a screenful, so an error names the problem without echoing it.
  constexpr size_t kLongestWord = 160, kLongestMessage = 8192;
  std::string out;
  size_t i = 0;
  while (i < message.size() && out.size() < kLongestMessage) {
    size_t end = message.find_first_of(" \n\t", i);
    if (end == std::string::npos) end = message.size();
    const size_t length = end - i;
    if (length > kLongestWord)
      out += message.substr(i, 96) + "...[" + std::to_string(length) + " bytes]..." + message.substr(end - 32, 32);
    else
      out.append(message, i, length);
    if (end < message.size()) out += message[end];
    i = end + 1;
  }
  if (i < message.size()) out += "...[" + std::to_string(message.size() - i) + " more bytes]";
  return out;
}

int guarded(const char* command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const check::PassFailure& failure) {
    std::cerr << "passcheck " << command << ": " << clip_message(failure.what()) << "\n";
    return 1;
  } catch (const check::ReproError& e) {
    std::cerr << "passcheck " << command << ": " << (e.line() > 0 ? "malformed repro file: " : "error: ")
              << clip_message(e.what()) << "\n";
  } catch (const c10::Error& e) {
    std::cerr << "passcheck " << command << ": error: " << clip_message(e.what_without_backtrace()) << "\n";
  } catch (const std::exception& e) {
    std::cerr << "passcheck " << command << ": error: " << clip_message(e.what()) << "\n";
  }
  return 2;
}

void apply_model_variant(models::SubjectOptions& options, int64_t n_layers, const std::string& dtype,
                         const std::string& attention, const std::string& config) {
  options.n_layers = n_layers;
  options.config = config;
  if (dtype == "float32") options.dtype = c10::ScalarType::Float;
  else if (dtype == "bfloat16") options.dtype = c10::ScalarType::BFloat16;
  else throw std::invalid_argument("--dtype " + dtype + " is unknown (known: float32, bfloat16)");
  options.attention = attention;
}

int run_trace(const TraceArgs& args) {
  return guarded("trace", [&] {
    models::SubjectOptions options;
    options.seed = args.seed;
    options.batch_size = args.batch_size;
    options.seq_len = args.seq_len;
    apply_model_variant(options, args.n_layers, args.dtype, args.attention, args.config);
    if (args.meta) options.device = c10::Device(c10::DeviceType::Meta);
    std::shared_ptr<ir::Graph> graph;
    models::check_config(args.model, args.config);
    std::string header = "# passcheck trace --model " + args.model +
                         (args.config == models::kDebugConfig ? "" : " --config " + args.config) +
                         (args.meta ? " --meta" : "");
    if (!args.parallel.empty() || !args.mesh.empty() || args.rank >= 0) {
      if (args.parallel.empty()) throw std::invalid_argument("--mesh and --rank need --parallel (fsdp, tp, ep, ...)");
      if (!args.symbolic.empty()) throw std::invalid_argument("--symbolic is not supported with --parallel");
      graph = trace_rank_graph(args);
      header += " --parallel " + args.parallel + " --mesh " + args.mesh + " --rank " +
                std::to_string(args.rank < 0 ? 0 : args.rank) + "\n# traced on meta";
    } else if (args.symbolic.empty()) {
      models::check_buildable_on_device(args.model, options);
      auto subject = models::make_subject(args.model, options);
      graph = oracles::trace_subject(*subject, subject->batch(0), /*on_meta=*/false).shared_graph();
    } else {
      oracles::SymbolicTraceOptions symbolic;
      symbolic.model = args.model;
      symbolic.subject = options;
      symbolic.subject.device = c10::Device(c10::DeviceType::CPU);
      symbolic.dim = oracles::parse_symbolic_dim(args.symbolic);
      symbolic.trace_on_meta = true;
      oracles::SymbolicTrace traced = oracles::trace_symbolic(symbolic);
      graph = traced.graph;
      header += " --symbolic " + args.symbolic + "\n# symbolized from traces at";
      for (int64_t v : traced.traced_at) header += " " + std::to_string(v);
    }
    if (args.dedup) {
      const size_t flat_nodes = graph->num_nodes();
      const ir::OutlineReport report = ir::outline_repeated_layers(*graph);
      header += " --dedup\n# " + std::to_string(flat_nodes) + " flat nodes; " + std::to_string(report.regions) +
                " layer regions call " + std::to_string(report.subgraphs) + " subgraphs; " +
                std::to_string(ir::total_nodes(*graph)) + " nodes in all graphs";
    }
    std::string text = header + "\n# " + std::to_string(graph->num_nodes()) + " nodes\n" + graph->print();
    if (args.out.empty()) {
      std::cout << text;
    } else {
      io::write_file(args.out, text, "graph file");
      std::cerr << "wrote " << graph->num_nodes() << " nodes to " << args.out << "\n";
    }
    return 0;
  });
}

int run_graph_file(const RunArgs& args) {
  return guarded("run", [&] {
    std::unique_ptr<ir::Graph> graph = graph_files::load_graph_file(args.file);
    if (!args.device.empty()) graph_files::retarget_graph(*graph, args.device);
    if (args.threads > 0) at::set_num_threads(args.threads);
    exec::ExecutorOptions exec_options;
    exec_options.track_live_bytes = true;
    exec_options.check_metadata = args.check_metadata;
    exec_options.max_bytes = args.memory_budget;
    exec::Executor executor(*graph, exec_options);
    exec::InputOptions input_options;
    input_options.seed = args.seed;
    input_options.int_high = args.int_high;
    input_options.max_bytes = args.memory_budget;
    std::vector<c10::IValue> inputs;
    if (args.inputs_file.empty()) {
      inputs = exec::make_inputs(*graph, input_options);
    } else {
      inputs = exec::load_inputs(args.inputs_file, graph->inputs());
      at::manual_seed(args.seed);  // random ops draw what Python draws after torch.manual_seed(seed)
    }
    std::vector<c10::IValue> outputs = executor.run(inputs);
    if (!args.save_outputs.empty()) exec::save_values(args.save_outputs, outputs);
    const auto& stats = executor.last_stats();
    std::cout << args.file << ": ran " << stats.nodes_run << " nodes; peak live bytes " << stats.peak_live_bytes
              << " (inputs " << stats.input_bytes << ")\n";
    // The static estimate beside the measurement: what a checkpointing pass promises is
    // read from the bytes held from the forward into the backward.
    const check::MemoryEstimate estimate = check::estimate_memory(*graph);
    std::cout << "  estimated peak bytes " << estimate.peak_bytes << "; held from forward into backward "
              << estimate.live_at_backward_start << " (of which recomputable "
              << estimate.recomputable_live_at_backward_start << ")\n";
    for (size_t i = 0; i < outputs.size(); ++i)
      std::cout << "  output " << i << " %" << graph->outputs()[i]->name() << ": " << summarize(outputs[i]) << "\n";
    return 0;
  });
}

namespace {

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::string stat_or_dash(const std::map<std::string, int64_t>& stats, const std::string& key) {
  auto it = stats.find(key);
  return it == stats.end() ? "-" : std::to_string(it->second);
}

std::string describe_eager_checkpoint(const std::optional<oracles::EagerCheckpointConfig>& config) {
  return config ? oracles::describe(*config) : "none";
}

// One row per pass: what it did to the graph, to the estimated peak and to the bytes
// held from the forward into the backward (the activations a checkpointing pass frees).
std::string format_pass_table(const std::vector<check::PassRecord>& records,
                              const std::vector<check::MemoryEstimate>& estimates, size_t traced_nodes) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-36s %7s %7s %-8s %-11s %-13s %-15s %s\n", "pass", "nodes", "delta", "changed",
                "recomputed", "est. peak", "held fwd->bwd", "verifier");
  out += line;
  std::snprintf(line, sizeof line, "%-36s %7zu %7s %-8s %-11s %-13s %-15s %s\n", "(traced graph)", traced_nodes, "", "",
                "", mib(estimates.at(0).peak_bytes).c_str(), mib(estimates.at(0).live_at_backward_start).c_str(), "ok");
  out += line;
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    std::snprintf(line, sizeof line, "%-36s %7zu %+7lld %-8s %-11s %-13s %-15s %s\n", r.pass.c_str(), r.nodes_after,
                  static_cast<long long>(r.nodes_after) - static_cast<long long>(r.nodes_before),
                  r.changed ? "yes" : "no", stat_or_dash(r.stats, "recomputed_nodes").c_str(),
                  mib(estimates.at(i + 1).peak_bytes).c_str(), mib(estimates.at(i + 1).live_at_backward_start).c_str(),
                  "ok");
    out += line;
  }
  return out;
}

}  // namespace

int run_check(const CheckArgs& args) {
  if (!args.parallel.empty() || !args.mesh.empty()) {
    if (!args.report.empty())
      return guarded("check", []() -> int {
        throw std::invalid_argument("--report is not available with --parallel or --mesh (single-rank check only)");
      });
    return run_distributed_check(args);
  }
  report::Report html("check", current_command_line());
  return guarded("check", [&] { return run_reported(args.report, html, [&] {
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
    apply_model_variant(options.subject, args.n_layers, args.dtype, args.attention, args.config);
    models::check_buildable_on_device(args.model, options.subject);
    check_training_memory(args.model, options.subject,
                          FootprintShape{2, options.optimizer == oracles::OptimizerKind::Adam ? 2 : 1, 1,
                                         args.memory_budget});

    std::optional<check::Pipeline> pipeline;
    if (!args.pipeline.empty()) pipeline = check::Pipeline::parse(args.pipeline);
    if (!args.dump_dir.empty()) {
      if (!pipeline) throw std::invalid_argument("--dump-dir needs --pipeline (it holds the graph before and after each pass)");
      io::ensure_directory(args.dump_dir, "--dump-dir");
    }
    options.eager_checkpoint = eager_checkpoint_for(args.eager_ac, pipeline, check::PassRegistry::global());
    std::vector<check::PassRecord> records;
    std::vector<check::MemoryEstimate> estimates;
    size_t traced_nodes = 0;
    std::string pass_failure;
    PassDiffRecorder diffs;
    const bool reporting = !args.report.empty();
    if (pipeline) {
      options.transform = [&](trace::TracedProgram& program) {
        ir::Graph& graph = program.mutable_graph();
        traced_nodes = graph.num_nodes();
        estimates.push_back(check::estimate_memory(graph));
        check::PipelineOptions popts;
        int dump_index = 0;
        popts.dump = [&](const std::string& when, const std::string& pass, const ir::Graph& g) {
          if (when == "after") estimates.push_back(check::estimate_memory(g));
          if (args.dump_dir.empty()) return;
          char name[64];
          std::snprintf(name, sizeof name, "/%02d-%s-", when == "before" ? dump_index : dump_index++, when.c_str());
          io::write_file(args.dump_dir + name + pass.substr(0, pass.find('{')) + ".graph", g.print(), "pass dump");
        };
        if (reporting) popts.dump = diffs.dump(popts.dump);
        records = apply_pipeline(program, *pipeline, popts);
      };
    } else if (reporting) {
      options.transform = [&](trace::TracedProgram& program) {
        traced_nodes = program.graph().num_nodes();
        estimates.push_back(check::estimate_memory(program.graph()));
      };
    }
    // The report's sections from what the run produced so far (also after a failure).
    auto fill_report = [&](const oracles::DriverReport* driver) {
      if (!reporting) return;
      CheckRun run{pipeline ? pipeline->str() : "", describe_eager_checkpoint(options.eager_checkpoint), traced_nodes,
                   records, estimates, diffs, driver};
      add_check_sections(html, args, run);
    };
    // Each step's row is printed as soon as the step finishes (a long run shows
    // progress); the lines before the table once the first step is done.
    auto print_intro = [&] {
      std::cout << "passcheck check: traced vs eager, " << args.steps << " steps, optimizer " << args.optimizer
                << ", device " << args.device << (args.meta ? ", traced on meta" : "") << "\n";
      if (pipeline) {
        std::cout << "pipeline: " << pipeline->str() << "\n";
        std::cout << "eager oracle checkpointing: " << describe_eager_checkpoint(options.eager_checkpoint) << "\n";
        std::cout << format_pass_table(records, estimates, traced_nodes);
      }
    };
    options.on_step = [&](const oracles::DriverReport& so_far, const oracles::StepReport& step) {
      if (so_far.steps.size() == 1) {
        print_intro();
        std::cout << so_far.format_header();
      }
      std::cout << oracles::DriverReport::format_step(step) << std::flush;
    };
    oracles::DriverReport report;
    try {
      report = oracles::run_traced_vs_eager(options);
    } catch (const check::PassFailure& failure) {
      std::cout << "passcheck check: pipeline " << pipeline->str() << "\n";
      std::cout << "verdict: FAILED after " << failure.pass() << ": "
                << std::string(failure.what()).substr(std::string("failed after ").size() + failure.pass().size() + 2)
                << "\n";
      fill_report(nullptr);
      html.set_verdict(1, failure.what());
      return 1;
    } catch (const std::exception&) {
      fill_report(nullptr);  // what ran before the error stays in the report (exit 2)
      throw;
    }
    fill_report(&report);
    html.set_verdict(report.equal() ? 0 : 1, driver_verdict(report));
    if (report.steps.empty()) {
      print_intro();
      std::cout << report.format_header();
    }
    std::cout << report.format_footer();
    if (args.verbose)
      for (const auto& step : report.steps) {
        std::cout << "\nstep " << step.step << ":\n" << check::format_comparison_table(step.comparisons);
      }
    return report.equal() ? 0 : 1;
  }); });
}

int run_passes(bool mutants, const std::optional<std::string>& pipeline) {
  return guarded("passes", [&] {
    if (pipeline) {
      // Validates a pipeline text without running it: named pipelines expanded, every
      // option checked, the canonical form printed one pass per line.
      const check::PassRegistry& registry = mutants ? mutants::registry_with_mutants() : check::PassRegistry::global();
      for (const check::PassInvocation& pass : check::parse_pipeline(*pipeline, registry))
        std::cout << check::PassOptions(registry.get(pass.name).info, pass.options).str().insert(0, pass.name) << "\n";
      return 0;
    }
    std::cout << check::PassRegistry::global().catalogue();
    if (mutants) std::cout << mutants::mutant_catalogue();
    return 0;
  });
}

int run_models() {
  return guarded("models", [&] {
    // Built on meta: the counts cost no memory, even for qwen3_moe's 316 M parameters.
    models::SubjectOptions meta;
    meta.device = c10::Device(c10::DeviceType::Meta);
    std::cout << "model         kind           parameters\n";
    for (const auto& name : models::available_subjects()) {
      auto subject = models::make_subject(name, meta);
      int64_t count = 0;
      for (const at::Tensor& p : oracles::optimizer_parameters(*subject->module())) count += p.numel();
      const bool small = name == "mlp" || name == "two_matmul" || name == "dropout_mlp";
      char line[128];
      std::snprintf(line, sizeof line, "%-13s %-14s %10lld\n", name.c_str(), small ? "small program" : "debug model",
                    static_cast<long long>(count));
      std::cout << line;
    }
    // The production shapes (--config; trace them with --meta): counted on meta too.
    std::cout << "\nconfiguration     parameters  batch x seq  shape\n";
    for (const models::ModelConfigInfo& c : models::production_configs()) {
      models::SubjectOptions configured = meta;
      configured.config = c.name;
      const std::string name = c.model + ":" + c.name;
      char line[256];
      std::snprintf(line, sizeof line, "%-17s %9.2f B  %5lld x %-5lld %s\n", name.c_str(),
                    static_cast<double>(models::parameter_count(c.model, configured)) / 1e9,
                    static_cast<long long>(c.batch_size), static_cast<long long>(c.seq_len), c.description.c_str());
      std::cout << line;
    }
    return 0;
  });
}

}  // namespace passcheck::cli
