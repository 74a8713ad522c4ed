// What the single-rank and the distributed `passcheck check` share: the eager oracle's
// checkpointing chosen from --eager-ac and the pipeline.
#pragma once

#include "framework/check/pipeline.h"
#include "framework/trace/traced_program.h"
#include "oracles/eager_checkpoint.h"

#include <functional>
#include <optional>
#include <vector>
#include <string>

namespace passcheck::cli {

/// "none", a policy name, or "auto" (mirror the AC passes of the pipeline: sac-tag's
/// policy and selectors, or apply-ac's mode).
std::optional<oracles::EagerCheckpointConfig> eager_checkpoint_for(const std::string& choice,
                                                                   const std::optional<check::Pipeline>& pipeline);

/// Runs `pipeline` on the traced program's graph; when it holds a partitioner, on a module
/// made from that graph, which the program then runs instead (TracedProgram::run_as_module).
/// `after_module` (optional) sees the module once the pipeline is done.
std::vector<check::PassRecord> apply_pipeline(trace::TracedProgram& program, const check::Pipeline& pipeline,
                                              const check::PipelineOptions& options = {},
                                              const std::function<void(const ir::Module&)>& after_module = nullptr);

}  // namespace passcheck::cli
