// A fuzzing case: a random training-step program, traced into its joint graph, with
// everything needed to run it again — deterministic from one seed. The fuzzer
// (passcheck fuzz) and the property suites draw cases from here; everything after
// generation works on the graph alone, so a repro file needs only the graph text,
// the input seed and the pipeline.
#pragma once

#include "framework/ir/graph.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace passcheck::gen {

struct ProgramGenOptions {
  int max_layers = 3;
  int max_ops_per_layer = 8;
  int64_t max_dim = 8;
  bool allow_bf16 = true;
  bool allow_random_ops = true;       ///< dropout, bernoulli, rand-like ops
  bool allow_buffer_updates = true;   ///< in-place updates of module buffers
};

struct GeneratedCase {
  std::shared_ptr<ir::Graph> graph;  ///< the traced joint graph (forward, loss, backward)
  uint64_t input_seed = 0;           ///< exec::make_inputs seed for the graph's inputs
  int64_t int_high = 2;              ///< exec::InputOptions::int_high valid for this graph
  std::string description;           ///< the program in one readable line per layer
};

/// The case for `seed`: the same seed always gives the same case.
GeneratedCase generate_case(uint64_t seed, const ProgramGenOptions& options = {});

}  // namespace passcheck::gen
