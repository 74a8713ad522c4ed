// Operator properties passes need, read from the schema and tags the dispatcher holds:
// mutation, aliasing, randomness, collectives. One place, so every pass (DCE, CSE,
// rematerialization, policy tagging) agrees on what is pure.
#pragma once

#include <string>

#include "framework/ir/graph.h"

#include <optional>
#include <vector>

namespace passcheck::exec {

/// The operator writes one of its inputs (in-place or out= form).
bool is_mutating(const ir::Node& node);
/// Some output aliases an input (views, in-place and out= results).
bool aliases_input(const ir::Node& node);
/// Draws from a random generator (tag nondeterministic_seeded, or a known RNG op).
bool is_random(const ir::Node& node);
/// A collective or a wait on one (passcheck:: collective ops, c10d ops).
bool is_collective(const ir::Node& node);
/// Has effects beyond its outputs (RNG-state ops, asserts kept by choice, prints).
bool has_side_effects(const ir::Node& node);
/// Allocates without initialising (empty, new_empty, empty_strided, empty_like).
bool is_uninitialized_allocation(const ir::Node& node);
/// The output shape depends on tensor values (nonzero, masked_select, unique, ...), by
/// operator name ("aten::masked_select"): a graph traced through one holds only for
/// inputs that give the traced shape.
bool has_data_dependent_output_shape(const std::string& op_name);
/// Reads tensor data on the host, by operator name: into a host scalar
/// (`_local_scalar_dense`/`item`, `is_nonzero`, `equal`: whatever uses the value depends
/// on data) or inside the kernel (`passcheck::grouped_mm` and its weight gradient read
/// their offsets). Either way the host waits for the device, which a capturing CUDA
/// stream refuses: such an op runs eagerly.
bool reads_device_data_on_host(const std::string& op_name);
/// The two above, by node (cached per operator, no string built).
bool has_data_dependent_output_shape(const ir::Node& node);
bool reads_device_data_on_host(const ir::Node& node);
/// A compute op: one with a FLOP formula (aten mm, bmm, addmm, baddbmm, convolution and
/// its backward, the attention kernels and their backwards), what schedulers batch.
bool has_flop_formula(const ir::Node& node);
/// Asynchronous asserts: pure for dead-code elimination.
bool is_async_assert(const ir::Node& node);
/// The values the operator writes (in-place and out= arguments); nullopt for an
/// operator the dispatcher does not know (assume it may write anything).
std::optional<std::vector<ir::Value*>> written_values(const ir::Node& node);

}  // namespace passcheck::exec
