// What the single-rank and the distributed `passcheck check` share: the eager oracle's
// checkpointing chosen from --eager-ac and the pipeline.
#pragma once

#include "framework/check/pipeline.h"
#include "oracles/eager_checkpoint.h"
#include "oracles/training_driver.h"

#include <optional>
#include <string>

namespace passcheck::cli {

/// "none", a policy name, or "auto" (mirror the AC passes of the pipeline: sac-tag's
/// policy and selectors, or apply-ac's mode).
std::optional<oracles::EagerCheckpointConfig> eager_checkpoint_for(const std::string& choice,
                                                                   const std::optional<check::Pipeline>& pipeline);

/// oracles::apply_pipeline (training_driver.h), used by both checks.
using oracles::apply_pipeline;

}  // namespace passcheck::cli
