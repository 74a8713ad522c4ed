// Features added to generated cases, each a rewrite of the case's graph that keeps every
// result it had bit for bit (added outputs aside), so the case checks the same program
// while reaching preconditions of real pass bugs the program generator alone does not
// make: identity views and no-op clones (what graph_trainer's remove_identity_view_pass
// and inductor's remove_noop_ops act on), outputs that alias an input or another output
// (what the aliasing property checks), and a write through one alias of a temporary read
// through another taken before it. Each is behind a switch (`fuzz --features`), counted
// per campaign (coverage: "feature" lines), and applied only where the graph has a place
// for it.
#pragma once

#include "framework/ir/graph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace passcheck::gen {

/// The features by name, in the order they are applied.
const std::vector<std::string>& feature_names();

/// Parses a `--features` list: "all", "none", or names of feature_names() separated by
/// commas; std::invalid_argument names an unknown one.
std::vector<std::string> parse_features(const std::string& text);

/// Applies each of `features` once to `graph` where it finds a place (drawn from `seed`);
/// returns one line per feature applied ("identity-view of %mm", ...).
std::vector<std::string> apply_features(ir::Graph& graph, uint64_t seed, const std::vector<std::string>& features);

}  // namespace passcheck::gen
