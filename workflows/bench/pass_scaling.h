// Pass scaling (`passcheck bench --passes`): every registered pass, the parser, the
// printer, the verifier and the default pipeline timed on graphs of growing size from
// several families (synthetic cleanup situations, the llama3 joint graph, its FSDP
// per-rank graph, its graph traced with a symbolic batch), with the least-squares
// exponent of log(time) against log(nodes). A pass whose exponent is well above 1 does
// something per node that grows with the graph: docs/performance.md lists the ones fixed.
#pragma once

#include "framework/check/pass.h"
#include "framework/ir/graph.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace passcheck::bench {

/// Least-squares slope of log(seconds) against log(sizes): the exponent k of
/// seconds ~ c * sizes^k. Needs two or more points with positive sizes and times;
/// throws std::invalid_argument otherwise.
double fit_exponent(const std::vector<double>& sizes, const std::vector<double>& seconds);

/// The graph families: "synthetic", "llama3", "llama3-fsdp", "llama3-symbolic".
const std::vector<std::string>& family_names();

/// A graph of `family` with about `nodes` nodes (within one layer or one motif). The
/// synthetic family is cleanup situations (generators/cleanup_situations.h: views,
/// transposes, detaches, duplicates, dead values, ...) drawn until the size is reached;
/// the others trace llama3 on meta with as many layers as give `nodes`.
std::unique_ptr<ir::Graph> family_graph(const std::string& family, int64_t nodes, uint64_t seed = 1);

/// The llama3 joint graph at `layers` layers traced on meta (the 405B shape is 126).
std::unique_ptr<ir::Graph> llama3_joint(int64_t layers);

/// What to measure.
struct ScalingOptions {
  std::vector<int64_t> sizes = {1000, 10000, 100000, 1000000};
  /// What to time: pass names and the subjects parse, print, verify, pipeline:default and
  /// pipeline:default-ungated (empty: those five and every registered pass).
  std::vector<std::string> passes;
  std::vector<std::string> families = family_names();
  /// A measurement predicted (from the sizes before it) to exceed this is skipped.
  double max_seconds = 120;
  /// llama3 layers of the graph the default pipeline is also timed on (0: none).
  int64_t joint_layers = 126;
  /// Progress lines (one per measurement) go here when set.
  std::ostream* progress = nullptr;
};

/// One subject timed on one family: the parser, a pass or the pipeline.
struct ScalingRow {
  /// "parse", "print", "verify", "pipeline:default" (gated: verifier and changed-claim
  /// hash after each pass), "pipeline:default-ungated" (the same passes, no gate) or a
  /// pass name
  std::string subject;
  std::vector<double> seconds;       ///< per size; < 0: not measured (skipped or refused)
  std::vector<int64_t> work;         ///< per size: rules fired (passes), -1 when unknown
  std::vector<bool> changed;         ///< per size: the pass changed the graph
  std::string note;                  ///< why a size was skipped or the pass refused
  double exponent = 0;               ///< NaN when fewer than two sizes were measured
  /// The exponent between the two largest sizes measured: small graphs sit in the CPU
  /// caches, so the fit over every size overstates growth that is linear past them.
  double tail_exponent = 0;
};

struct FamilyResult {
  std::string family;
  std::vector<int64_t> nodes;  ///< actual node count at each requested size
  std::vector<ScalingRow> rows;
};

struct ScalingReport {
  std::vector<FamilyResult> families;
  /// The default pipeline on llama3 at ScalingOptions::joint_layers (0 when not measured).
  int64_t joint_layers = 0;
  int64_t joint_nodes = 0;
  double joint_pipeline_seconds = -1;
};

/// Runs the measurements. Throws std::invalid_argument for an unknown pass or family or a
/// size below 100.
ScalingReport measure_pass_scaling(const ScalingOptions& options, const check::PassRegistry& registry);

/// A markdown table per family: subject x size (seconds) and the fitted exponent.
void print_markdown(const ScalingReport& report, std::ostream& out);
/// The report as JSON text.
std::string to_json(const ScalingReport& report);
/// A report read back from to_json's text (a baseline binary's); throws
/// std::invalid_argument naming what is missing.
ScalingReport from_json(const std::string& text);

/// Before and after side by side, per family: subject x size, each cell "before -> after
/// (speedup)", then the gate's cost per node and pass (pipeline:default against
/// pipeline:default-ungated) at each size.
void print_side_by_side(const ScalingReport& before, const ScalingReport& after, std::ostream& out);

}  // namespace passcheck::bench
