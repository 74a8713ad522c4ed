// `passcheck bench --passes`: the options of the pass-scaling form of bench
// (workflows/bench/pass_scaling.h does the measuring).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace passcheck::cli {

/// Options of `bench --passes` beyond bench's own (--json is shared).
struct PassScalingArgs {
  bool passes = false;
  std::string sizes = "1000,10000,100000,1000000";
  std::vector<std::string> pass_names;
  /// Comma-separated graph families (empty: all).
  std::string families;
  double max_seconds = 120;
  /// llama3 layers of the graph the default pipeline is also timed on (126: the 405B shape).
  int64_t joint_layers = 126;
  /// Another passcheck binary (the code before a change) measured first with the same
  /// options; the tables then show both side by side.
  std::string baseline;
};

/// Times every pass (or --pass ones), the parser, printer, verifier and the default
/// pipeline at each size; prints markdown tables, writes JSON to `json` when given.
int run_pass_scaling_bench(const PassScalingArgs& args, const std::string& json);

}  // namespace passcheck::cli
