// Structure and properties of per-rank distributed graphs that the FSDP, placement and
// scheduling passes share: what an FSDP unshard looks like (a parameter gathered by
// all_gather + wait), and the promises their suites check on the graph after a pipeline
// (no all-gathered parameter held across the forward/backward boundary; no read
// redirected to a placement its reader does not want). Each violation names the offending value or node.
#pragma once

#include "framework/ir/graph.h"

#include <optional>
#include <string>
#include <vector>

namespace passcheck::check {

/// Distinct values among a node's operands (add(w, w) has one).
size_t distinct_operands(const ir::Node& node);

/// When `all_gather` (a _c10d_functional::all_gather_into_tensor) reads a graph input through
/// nodes that each have exactly one distinct input: those nodes, the input's reader first
/// (empty when it reads the input directly). nullopt otherwise.
std::optional<std::vector<ir::Node*>> fsdp_unshard_chain(const ir::Node& all_gather);

/// The all_gather of an FSDP wait (a _c10d_functional::wait_tensor whose input is an all_gather
/// with an FSDP unshard chain); null when `wait` is not one.
ir::Node* fsdp_all_gather_of(const ir::Node& wait);

/// Violations of "no value derived only from an all-gathered parameter is held from the
/// forward into the backward": a forward value computed from FSDP waits alone (the
/// gathered weight, its transpose, a slice of it) read by a backward node. Such a value
/// is what force-recompute-fsdp-all-gather exists to recompute instead (2.62 GiB of
/// transposed weights on Llama-3 8B, historical bug 5). Meant for a graph after
/// rematerialization; each message names the saved value and its backward reader.
std::vector<std::string> check_gathered_parameters_not_saved(const ir::Graph& graph);

/// Violations of "a pass redirects a read only to a value in the placement the reader
/// wants": for each node of `after` with wanted placements (NodeMeta::wanted_placements),
/// every operand slot that reads another value than the same node (by its first output's
/// name) read in `before` must read one placed as the slot wants. Messages name the
/// consumer, the slot, the wanted placement and what it reads now and read before.
std::vector<std::string> check_redirected_reads_wanted(const ir::Graph& before, const ir::Graph& after);

}  // namespace passcheck::check
