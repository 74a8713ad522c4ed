// One pass on the traced subjects (see pass_on_models.h).
#include "oracles/pass_on_models.h"

#include "oracles/training_driver.h"

namespace passcheck::oracles {

ModelJoint trace_model_joint(const std::string& model) {
  auto subject = models::make_subject(model, models::suite_options(model));
  trace::TracedProgram program = trace_subject(*subject, subject->batch(0), false);
  return {program.shared_graph(), program.make_graph_inputs(subject->batch(1))};
}

std::string pipeline_with_prerequisites(const std::string& pass, const std::string& model) {
  if (pass == "remat")
    return "ac-regions,sac-tag{policy=eager},remat{rng=" + std::string(model == "dropout_mlp" ? "replay" : "error") + "}";
  if (pass == "sac-tag" || pass == "apply-ac") return "ac-regions," + pass;
  return pass;
}

bool runs_on_traced_subjects(const std::string& pass) { return pass != "chunk"; }

}  // namespace passcheck::oracles
