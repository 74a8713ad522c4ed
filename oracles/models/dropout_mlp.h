// The dropout_mlp debug subject (see dropout_mlp.cpp).
#pragma once

#include "oracles/models/subject.h"

namespace passcheck::models {

std::unique_ptr<TrainingSubject> make_dropout_mlp_subject(const SubjectOptions& options);

}  // namespace passcheck::models
