// passcheck bench --passes: the command-line side of the pass-scaling measurements
// (workflows/bench/pass_scaling.h): option checks, progress on stderr, the markdown table
// on stdout and the JSON report.
#include "tools/passcheck/pass_scaling_bench.h"

#include "tools/passcheck/commands.h"
#include "workflows/bench/pass_scaling.h"
#include "workflows/gate/processes.h"
#include "framework/io/files.h"
#include "framework/version.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include <unistd.h>

namespace passcheck::cli {

namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

std::vector<int64_t> parse_sizes(const std::string& text) {
  std::vector<int64_t> sizes;
  for (const std::string& item : split_commas(text)) {
    size_t used = 0;
    int64_t n = 0;
    try {
      n = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || n < 100 || n > 100000000)
      throw std::invalid_argument("--sizes: expected node counts from 100 to 10^8, got '" + item + "'");
    sizes.push_back(n);
  }
  if (sizes.empty()) throw std::invalid_argument("--sizes: give at least one size");
  return sizes;
}

// The same measurement by the baseline binary, read back from its JSON report.
bench::ScalingReport measure_baseline(const PassScalingArgs& args) {
  const std::string json =
      (std::filesystem::temp_directory_path() / ("passcheck-baseline-" + std::to_string(getpid()) + ".json")).string();
  std::vector<std::string> argv = {args.baseline, "bench", "--passes", "--sizes", args.sizes,
                                   "--max-seconds", std::to_string(args.max_seconds),
                                   "--joint-layers", std::to_string(args.joint_layers), "--json", json};
  if (!args.families.empty()) argv.insert(argv.end(), {"--families", args.families});
  for (const std::string& p : args.pass_names) argv.insert(argv.end(), {"--pass", p});
  std::cerr << "baseline: " << args.baseline << "\n";
  const gate::CapturedOutput run = gate::run_captured(argv);
  if (run.exit_code != 0)
    throw std::invalid_argument("--baseline " + args.baseline + " exited with " + std::to_string(run.exit_code) + ": " +
                                run.output.substr(run.output.size() > 2000 ? run.output.size() - 2000 : 0));
  std::string text = io::read_file(json, "--baseline report");
  std::remove(json.c_str());
  return bench::from_json(text);
}

}  // namespace

int run_pass_scaling_bench(const PassScalingArgs& args, const std::string& json) {
  return guarded("bench", [&] {
    if (!json.empty()) io::check_writable(json, "--json report");
    bench::ScalingOptions options;
    options.sizes = parse_sizes(args.sizes);
    options.passes = args.pass_names;
    if (!args.families.empty()) options.families = split_commas(args.families);
    options.max_seconds = args.max_seconds;
    options.joint_layers = args.joint_layers;
    options.progress = &std::cerr;
    std::optional<bench::ScalingReport> before;
    if (!args.baseline.empty()) before = measure_baseline(args);
    bench::ScalingReport report = bench::measure_pass_scaling(options, check::PassRegistry::global());
    std::cout << "passcheck bench --passes  (passcheck " << PASSCHECK_VERSION << "; CPU seconds per run, best of up to 5 "
              << "runs under 0.5 s; exponent: least-squares slope of log time against log nodes)\n";
    bench::print_markdown(report, std::cout);
    if (before) {
      std::cout << "\n## Before (" << args.baseline << ") and after (this binary), measured one after the other\n";
      bench::print_side_by_side(*before, report, std::cout);
    }
    if (!json.empty()) {
      io::write_file(json, bench::to_json(report), "--json report");
      std::cerr << "wrote " << json << "\n";
    }
    return 0;
  });
}

}  // namespace passcheck::cli
