// Pass scaling measurements (pass_scaling.h): graph families sized by node count, each
// pass timed on a fresh copy after the passes it needs (untimed), and the exponent fit.
#include "workflows/bench/pass_scaling.h"
#include "workflows/bench/timing.h"

#include "framework/check/pipeline.h"
#include "framework/check/verifier.h"
#include "framework/dist/mesh.h"
#include "framework/ir/module.h"
#include "framework/ir/text.h"
#include "generators/cleanup_situations.h"
#include "oracles/distributed_driver.h"
#include "oracles/models/subject.h"
#include "oracles/symbolic_trace.h"
#include "oracles/training_driver.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <map>
#include <stdexcept>

namespace passcheck::bench {

namespace {

// Timings are CPU time of the process, not wall time: on a machine shared with other
// jobs, wall time charges a run for the time it waited for a core, and a single run of a
// large graph waits more than the best of five of a small one, which bends the exponent.
struct CpuClock {
  using time_point = double;
  static double now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
};
double cpu_seconds_since(double start) { return CpuClock::now() - start; }

// The passes a pass needs before it has work to do, run untimed (the same order as
// oracles::pipeline_with_prerequisites, plus the partitioner tag-ap-must-save reads and
// the chunking concretize undoes), and the options it is timed with.
struct PassSetup {
  std::string before;
  std::map<std::string, std::string> options;
};

PassSetup setup_for(const std::string& pass) {
  if (pass == "remat") return {"ac-regions,sac-tag{policy=eager}", {{"rng", "replay"}}};
  if (pass == "sac-tag" || pass == "apply-ac") return {"ac-regions", {}};
  if (pass == "tag-ap-must-save") return {"partition-min-cut", {}};
  if (pass == "concretize") return {"chunk", {}};
  return {};
}

std::shared_ptr<ir::Graph> trace_llama3(const std::string& family, int64_t layers) {
  models::SubjectOptions options;
  options.n_layers = layers;
  if (family == "llama3") {
    options.device = c10::Device(c10::DeviceType::Meta);
    auto subject = models::make_subject("llama3", options);
    return oracles::trace_subject(*subject, subject->batch(0), /*on_meta=*/false).shared_graph();
  }
  if (family == "llama3-fsdp") {
    options.parallel.plan = "fsdp";
    return oracles::trace_rank_graph("llama3", options, dist::DeviceMesh::parse("dp=2"), 0);
  }
  if (family == "llama3-symbolic") {
    oracles::SymbolicTraceOptions symbolic;
    symbolic.model = "llama3";
    symbolic.subject = options;
    symbolic.dim = oracles::SymbolicDim::Batch;
    symbolic.trace_on_meta = true;
    return oracles::trace_symbolic(symbolic).graph;
  }
  throw std::invalid_argument("unknown graph family '" + family + "'");
}

std::unique_ptr<ir::Graph> synthetic_graph(int64_t nodes, uint64_t seed) {
  // Motif sizes vary; a sample of the same seed stream gives the mean.
  constexpr int kSample = 64;
  const double per_motif =
      static_cast<double>(gen::generate_cleanup_situation(seed, kSample).graph->num_nodes()) / kSample;
  const int motifs = std::max(1, static_cast<int>(std::lround(static_cast<double>(nodes) / per_motif)));
  return ir::parse_graph(gen::cleanup_situation_text(seed, motifs), "synthetic-" + std::to_string(nodes));
}

// A copy of `graph` as a one-part module after `before` (gate off: only the timed pass
// matters here, and the pipeline tests check the prerequisites).
ir::Module prepared(const ir::Graph& graph, const std::string& before, const check::PassRegistry& registry) {
  ir::Module module = ir::Module::of_graph(graph.clone());
  if (!before.empty()) {
    check::PipelineOptions quiet;
    quiet.verify_each = false;
    quiet.check_changed_claim = false;
    quiet.prove_new_claims = false;
    check::Pipeline::parse(before, registry).run(module, quiet);
  }
  return module;
}

struct Timed {
  double seconds = 0;
  int64_t work = -1;
  bool changed = false;
};

// Best of a few runs for graphs that run fast (noise matters there), one run otherwise.
template <class Once>
Timed best_of(Once&& once) {
  Timed best;
  best.seconds = std::numeric_limits<double>::infinity();
  double total = 0;
  for (int i = 0; i < 5 && (i == 0 || total < 0.5); ++i) {
    Timed t = once();
    total += t.seconds;
    if (t.seconds < best.seconds) best = t;
  }
  return best;
}

Timed time_pass(const ir::Graph& graph, const std::string& pass, const check::PassRegistry& registry) {
  const check::RegisteredPass& registered = registry.get(pass);
  const PassSetup setup = setup_for(pass);
  const check::PassOptions options(registered.info, setup.options);
  return best_of([&] {
    ir::Module module = prepared(graph, setup.before, registry);
    Timed t;
    t.work = 0;
    auto count = [&](const check::PassResult& r) {
      t.changed |= r.changed;
      for (const auto& [rule, n] : r.rules_fired) t.work += n;
    };
    if (registered.is_module_pass()) {
      const double t0 = CpuClock::now();
      check::PassResult r = registered.run_module(module, options);
      t.seconds = cpu_seconds_since(t0);
      count(r);
    } else {
      for (ir::ModulePart& part : module.parts) {
        const double t0 = CpuClock::now();
        check::PassResult r = registered.run(*part.graph, options);
        t.seconds += cpu_seconds_since(t0);
        count(r);
      }
    }
    return t;
  });
}

Timed time_subject(const ir::Graph& graph, const std::string& subject, const check::PassRegistry& registry) {
  if (subject == "parse") {
    const std::string text = graph.print();
    return best_of([&] {
      const double t0 = CpuClock::now();
      std::unique_ptr<ir::Graph> parsed = ir::parse_graph(text);
      return Timed{cpu_seconds_since(t0), -1, false};
    });
  }
  if (subject == "print")
    return best_of([&] {
      const double t0 = CpuClock::now();
      std::string text = graph.print();
      return Timed{cpu_seconds_since(t0), -1, false};
    });
  if (subject == "verify")
    return best_of([&] {
      const double t0 = CpuClock::now();
      std::vector<check::VerifierIssue> issues = check::verify_graph(graph);
      return Timed{cpu_seconds_since(t0), static_cast<int64_t>(issues.size()), false};
    });
  if (subject == "pipeline:default" || subject == "pipeline:default-ungated") {
    const check::Pipeline pipeline = check::Pipeline::parse("default", registry);
    check::PipelineOptions options;
    if (subject == "pipeline:default-ungated") {
      options.verify_each = false;
      options.check_changed_claim = false;
      options.prove_new_claims = false;
    }
    return best_of([&] {
      std::unique_ptr<ir::Graph> copy = graph.clone();
      const double t0 = CpuClock::now();
      std::vector<check::PassRecord> records = pipeline.run(*copy, options);
      Timed t{cpu_seconds_since(t0), 0, false};
      for (const check::PassRecord& r : records) t.changed |= r.changed;
      return t;
    });
  }
  return time_pass(graph, subject, registry);
}

std::string one_line(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  return message.size() > 160 ? message.substr(0, 157) + "..." : message;
}

}  // namespace

double fit_exponent(const std::vector<double>& sizes, const std::vector<double>& seconds) {
  if (sizes.size() != seconds.size() || sizes.size() < 2)
    throw std::invalid_argument("fit_exponent: needs two or more (size, time) points of equal count");
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = static_cast<double>(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!(sizes[i] > 0) || !(seconds[i] > 0)) throw std::invalid_argument("fit_exponent: sizes and times must be > 0");
    const double x = std::log(sizes[i]), y = std::log(seconds[i]);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double denominator = n * sxx - sx * sx;
  if (denominator <= 0) throw std::invalid_argument("fit_exponent: needs two or more distinct sizes");
  return (n * sxy - sx * sy) / denominator;
}

const std::vector<std::string>& family_names() {
  static const std::vector<std::string> names = {"synthetic", "llama3", "llama3-fsdp", "llama3-symbolic"};
  return names;
}

std::unique_ptr<ir::Graph> llama3_joint(int64_t layers) { return trace_llama3("llama3", layers)->clone(); }

std::unique_ptr<ir::Graph> family_graph(const std::string& family, int64_t nodes, uint64_t seed) {
  if (std::find(family_names().begin(), family_names().end(), family) == family_names().end())
    throw std::invalid_argument("unknown graph family '" + family + "' (families: synthetic, llama3, llama3-fsdp, "
                                "llama3-symbolic)");
  if (family == "synthetic") return synthetic_graph(nodes, seed);
  // Nodes grow by a fixed count per layer: two small traces give the line.
  const auto one = static_cast<int64_t>(trace_llama3(family, 1)->num_nodes());
  const auto two = static_cast<int64_t>(trace_llama3(family, 2)->num_nodes());
  const int64_t per_layer = std::max<int64_t>(1, two - one), fixed = one - per_layer;
  const int64_t layers = std::max<int64_t>(1, (nodes - fixed + per_layer / 2) / per_layer);
  return trace_llama3(family, layers)->clone();
}

ScalingReport measure_pass_scaling(const ScalingOptions& options, const check::PassRegistry& registry) {
  for (int64_t size : options.sizes)
    if (size < 100) throw std::invalid_argument("--sizes: each size must be at least 100 nodes, got " + std::to_string(size));
  for (const std::string& family : options.families)
    if (std::find(family_names().begin(), family_names().end(), family) == family_names().end())
      throw std::invalid_argument("unknown graph family '" + family + "' (families: synthetic, llama3, llama3-fsdp, "
                                  "llama3-symbolic)");
  const std::vector<std::string> whole_graph = {"parse", "print", "verify", "pipeline:default", "pipeline:default-ungated"};
  std::vector<std::string> subjects;
  if (options.passes.empty()) {
    subjects = whole_graph;
    for (const check::RegisteredPass* p : registry.list()) subjects.push_back(p->info.name);
  } else {
    for (const std::string& p : options.passes) {
      if (std::find(subjects.begin(), subjects.end(), p) != subjects.end()) continue;
      if (std::find(whole_graph.begin(), whole_graph.end(), p) != whole_graph.end()) subjects.push_back(p);
      else if (registry.contains(p)) subjects.push_back(p);
      else
        throw std::invalid_argument("--pass: unknown subject '" + p +
                                    "' (parse, print, verify, pipeline:default, pipeline:default-ungated, or a pass: "
                                    "passcheck passes lists them)");
    }
  }
  std::vector<int64_t> sizes = options.sizes;
  std::sort(sizes.begin(), sizes.end());

  ScalingReport report;
  for (const std::string& family : options.families) {
    FamilyResult result;
    result.family = family;
    for (const std::string& s : subjects) {
      ScalingRow row;
      row.subject = s;
      row.seconds.assign(sizes.size(), -1);
      row.work.assign(sizes.size(), -1);
      row.changed.assign(sizes.size(), false);
      result.rows.push_back(std::move(row));
    }
    for (size_t k = 0; k < sizes.size(); ++k) {
      auto t0 = Clock::now();
      std::unique_ptr<ir::Graph> graph = family_graph(family, sizes[k]);
      result.nodes.push_back(static_cast<int64_t>(graph->num_nodes()));
      if (options.progress)
        *options.progress << family << ": " << graph->num_nodes() << " nodes (built in " << seconds_since(t0) << " s)\n";
      for (ScalingRow& row : result.rows) {
        if (!row.note.empty()) continue;  // refused or skipped at a smaller size
        // Predict from the sizes measured so far (at least linear growth).
        if (k > 0 && row.seconds[k - 1] > 0) {
          double exponent = 1;
          std::vector<double> xs, ys;
          for (size_t i = 0; i < k; ++i)
            if (row.seconds[i] > 0) {
              xs.push_back(static_cast<double>(result.nodes[i]));
              ys.push_back(row.seconds[i]);
            }
          if (xs.size() >= 2) exponent = std::max(1.0, fit_exponent(xs, ys));
          const double predicted =
              row.seconds[k - 1] * std::pow(static_cast<double>(result.nodes[k]) / static_cast<double>(result.nodes[k - 1]), exponent);
          if (predicted > options.max_seconds) {
            char note[128];
            std::snprintf(note, sizeof note, "skipped from %lld nodes: predicted %.0f s", static_cast<long long>(result.nodes[k]),
                          predicted);
            row.note = note;
            continue;
          }
        }
        try {
          Timed t = time_subject(*graph, row.subject, registry);
          row.seconds[k] = std::max(t.seconds, 1e-7);
          row.work[k] = t.work;
          row.changed[k] = t.changed;
        } catch (const std::exception& e) {
          row.note = "refused: " + one_line(e.what());
        }
        if (options.progress && row.seconds[k] > 0)
          *options.progress << "  " << row.subject << ": " << row.seconds[k] << " s\n";
      }
    }
    for (ScalingRow& row : result.rows) {
      std::vector<double> xs, ys;
      for (size_t i = 0; i < result.nodes.size(); ++i)
        if (row.seconds[i] > 0) {
          xs.push_back(static_cast<double>(result.nodes[i]));
          ys.push_back(row.seconds[i]);
        }
      row.exponent = xs.size() >= 2 ? fit_exponent(xs, ys) : std::nan("");
      row.tail_exponent = xs.size() >= 2 ? fit_exponent({xs[xs.size() - 2], xs.back()}, {ys[ys.size() - 2], ys.back()})
                                         : std::nan("");
    }
    report.families.push_back(std::move(result));
  }

  if (options.joint_layers > 0) {
    std::unique_ptr<ir::Graph> joint = llama3_joint(options.joint_layers);
    report.joint_layers = options.joint_layers;
    report.joint_nodes = static_cast<int64_t>(joint->num_nodes());
    report.joint_pipeline_seconds = time_subject(*joint, "pipeline:default", registry).seconds;
  }
  return report;
}

namespace {

std::string format_seconds(double s) {
  char buf[32];
  if (s < 0) return "-";
  if (s < 1e-3) std::snprintf(buf, sizeof buf, "%.0f us", s * 1e6);
  else if (s < 1) std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

}  // namespace

namespace {

const ScalingRow* find_row(const FamilyResult& f, const std::string& subject) {
  for (const ScalingRow& row : f.rows)
    if (row.subject == subject) return &row;
  return nullptr;
}

double at(const ScalingRow* row, size_t i) { return row && i < row->seconds.size() ? row->seconds[i] : -1; }

// The default pipeline has five passes; the gate runs after each.
constexpr double kDefaultPipelinePasses = 5;

std::string gate_cost(const FamilyResult& f, size_t i) {
  const double gated = at(find_row(f, "pipeline:default"), i), ungated = at(find_row(f, "pipeline:default-ungated"), i);
  if (gated <= 0 || ungated <= 0 || i >= f.nodes.size()) return "-";
  char text[48];
  std::snprintf(text, sizeof text, "%.2f us", (gated - ungated) / (static_cast<double>(f.nodes[i]) * kDefaultPipelinePasses) * 1e6);
  return text;
}

}  // namespace

void print_markdown(const ScalingReport& report, std::ostream& out) {
  for (const FamilyResult& f : report.families) {
    out << "\n### " << f.family << "\n\n| subject |";
    for (int64_t n : f.nodes) out << " " << n << " nodes |";
    out << " exponent | last two | work |\n|---|";
    for (size_t i = 0; i < f.nodes.size(); ++i) out << "---:|";
    out << "---:|---:|---|\n";
    for (const ScalingRow& row : f.rows) {
      out << "| " << row.subject << " |";
      for (double s : row.seconds) out << " " << format_seconds(s) << " |";
      for (double e : {row.exponent, row.tail_exponent}) {
        char text[16] = "-";
        if (!std::isnan(e)) std::snprintf(text, sizeof text, "%.2f", e);
        out << " " << text << " |";
      }
      out << " ";
      // Work at the largest size measured: rules fired, or whether it changed the graph.
      std::string work;
      for (size_t i = row.seconds.size(); i-- > 0;)
        if (row.seconds[i] > 0) {
          if (row.work[i] > 0) work = std::to_string(row.work[i]) + " rules fired";
          else if (row.changed[i]) work = "changed";
          else work = row.work[i] == 0 ? "scan only" : "";
          break;
        }
      if (!row.note.empty()) work += (work.empty() ? "" : "; ") + row.note;
      out << work << " |\n";
    }
    if (find_row(f, "pipeline:default") && find_row(f, "pipeline:default-ungated")) {
      out << "| gate per node and pass |";
      for (size_t i = 0; i < f.nodes.size(); ++i) out << " " << gate_cost(f, i) << " |";
      out << " | | (pipeline:default - ungated) / (nodes x 5 passes) |\n";
    }
  }
  if (report.joint_layers > 0)
    out << "\ndefault pipeline on the llama3 joint graph at " << report.joint_layers << " layers (" << report.joint_nodes
        << " nodes): " << format_seconds(report.joint_pipeline_seconds) << "\n";
}

std::string to_json(const ScalingReport& report) {
  nlohmann::json families = nlohmann::json::array();
  for (const FamilyResult& f : report.families) {
    nlohmann::json rows = nlohmann::json::array();
    for (const ScalingRow& row : f.rows) {
      nlohmann::json seconds = nlohmann::json::array();
      for (double s : row.seconds) seconds.push_back(s < 0 ? nlohmann::json(nullptr) : nlohmann::json(s));
      rows.push_back({{"subject", row.subject},
                      {"seconds", seconds},
                      {"rules_fired", row.work},
                      {"changed", row.changed},
                      {"exponent", std::isnan(row.exponent) ? nlohmann::json(nullptr) : nlohmann::json(row.exponent)},
                      {"tail_exponent",
                       std::isnan(row.tail_exponent) ? nlohmann::json(nullptr) : nlohmann::json(row.tail_exponent)},
                      {"note", row.note}});
    }
    families.push_back({{"family", f.family}, {"nodes", f.nodes}, {"rows", rows}});
  }
  nlohmann::json j = {{"families", families}};
  if (report.joint_layers > 0)
    j["default_pipeline_joint"] = {{"layers", report.joint_layers},
                                   {"nodes", report.joint_nodes},
                                   {"seconds", report.joint_pipeline_seconds}};
  return j.dump(2) + "\n";
}

ScalingReport from_json(const std::string& text) {
  ScalingReport report;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("families") || !j["families"].is_array())
    throw std::invalid_argument("not a bench --passes JSON report (no \"families\" list)");
  try {
    for (const nlohmann::json& f : j["families"]) {
      FamilyResult family;
      family.family = f.at("family").get<std::string>();
      family.nodes = f.at("nodes").get<std::vector<int64_t>>();
      for (const nlohmann::json& r : f.at("rows")) {
        ScalingRow row;
        row.subject = r.at("subject").get<std::string>();
        for (const nlohmann::json& s : r.at("seconds")) row.seconds.push_back(s.is_null() ? -1.0 : s.get<double>());
        row.note = r.value("note", "");
        family.rows.push_back(std::move(row));
      }
      report.families.push_back(std::move(family));
    }
    if (j.contains("default_pipeline_joint")) {
      const nlohmann::json& d = j["default_pipeline_joint"];
      report.joint_layers = d.at("layers").get<int64_t>();
      report.joint_nodes = d.at("nodes").get<int64_t>();
      report.joint_pipeline_seconds = d.at("seconds").get<double>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("bench --passes JSON report: ") + e.what());
  }
  return report;
}

void print_side_by_side(const ScalingReport& before, const ScalingReport& after, std::ostream& out) {
  for (const FamilyResult& a : after.families) {
    const FamilyResult* b = nullptr;
    for (const FamilyResult& f : before.families)
      if (f.family == a.family) b = &f;
    out << "\n### " << a.family << ": before -> after (speedup)\n\n| subject |";
    for (size_t i = 0; i < a.nodes.size(); ++i) {
      out << " " << a.nodes[i] << " nodes";
      if (b && (i >= b->nodes.size() || b->nodes[i] != a.nodes[i]))
        out << " (before: " << (i < b->nodes.size() ? std::to_string(b->nodes[i]) : "-") << ")";
      out << " |";
    }
    out << "\n|---|";
    for (size_t i = 0; i < a.nodes.size(); ++i) out << "---:|";
    out << "\n";
    for (const ScalingRow& row : a.rows) {
      const ScalingRow* old = b ? find_row(*b, row.subject) : nullptr;
      out << "| " << row.subject << " |";
      for (size_t i = 0; i < row.seconds.size(); ++i) {
        const double t0 = at(old, i), t1 = row.seconds[i];
        out << " " << format_seconds(t0) << " -> " << format_seconds(t1);
        if (t0 > 0 && t1 > 0) {
          char ratio[24];
          std::snprintf(ratio, sizeof ratio, " (%.1fx)", t0 / t1);
          out << ratio;
        }
        out << " |";
      }
      out << "\n";
    }
    out << "| gate per node and pass |";
    for (size_t i = 0; i < a.nodes.size(); ++i) out << " " << (b ? gate_cost(*b, i) : "-") << " -> " << gate_cost(a, i) << " |";
    out << "\n";
  }
  if (after.joint_layers > 0)
    out << "\ndefault pipeline on the llama3 joint graph at " << after.joint_layers << " layers (" << after.joint_nodes
        << " nodes): " << format_seconds(before.joint_pipeline_seconds) << " -> "
        << format_seconds(after.joint_pipeline_seconds) << "\n";
}

}  // namespace passcheck::bench
