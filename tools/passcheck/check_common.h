// What the single-rank and the distributed `passcheck check` share: the eager oracle's
// checkpointing chosen from --eager-ac and the pipeline, and applying the pipeline.
#pragma once

#include "framework/check/pipeline.h"
#include "oracles/eager_checkpoint.h"
#include "oracles/training_driver.h"

namespace passcheck::cli {

using oracles::apply_pipeline;
using oracles::eager_checkpoint_for;

}  // namespace passcheck::cli
