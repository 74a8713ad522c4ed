// Named model configurations: the debug sizes every suite trains ("debug") and the
// production shapes of torchtitan's configurations (llama3 8b/70b/405b, deepseek_v3
// 16b, qwen3 32b), mapped onto the models' own option structs (llama3.h,
// deepseek_v3.h, zoo.h). The production shapes are for tracing on the meta device
// (SubjectOptions::device Meta): tens to hundreds of billions of parameters that are
// never allocated; only their shapes flow through the tracer and the passes.
#pragma once

#include "oracles/models/subject.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace passcheck::models {

/// One named configuration of a model.
struct ModelConfigInfo {
  std::string model;        ///< "llama3"
  std::string name;         ///< "405b"
  std::string description;  ///< the shape in words: layers, dim, heads, ffn, vocab
  int64_t batch_size = 0;   ///< local batch it trains at
  int64_t seq_len = 0;      ///< sequence length it trains at
};

/// The name of the debug configuration (the sizes the suites use; the default).
inline constexpr const char* kDebugConfig = "debug";

/// Every production configuration, model by model.
std::vector<ModelConfigInfo> production_configs();

/// The configurations `model` accepts: "debug" first, then its production ones.
std::vector<std::string> config_names(const std::string& model);

/// Throws std::invalid_argument naming the model's known configurations when `config`
/// is not one of them ("" and "debug" are always accepted).
void check_config(const std::string& model, const std::string& config);

/// Builds `model` at production configuration options.config (make_subject calls it
/// for any config other than "" and "debug"); batch, sequence and layer overrides of
/// `options` still apply. Throws std::invalid_argument for an unknown configuration.
std::unique_ptr<TrainingSubject> make_configured_subject(const std::string& model, const SubjectOptions& options);

/// Number of parameter elements of `model` built with `options` (its configuration,
/// layers, ...), counted from a copy built on the meta device (no memory); a tied
/// parameter counts once.
int64_t parameter_count(const std::string& model, SubjectOptions options);

/// The most parameter elements a configured (non-debug) model may have to be built on a
/// real device (1 GiB of float32): larger ones are traced on meta.
inline constexpr int64_t kMaxRealParameters = int64_t{1} << 28;

/// Throws std::invalid_argument when options.config is a production configuration whose
/// parameters (at options' layers) exceed kMaxRealParameters and options.device is not
/// meta: building it for real would allocate them all.
void check_buildable_on_device(const std::string& model, const SubjectOptions& options);

}  // namespace passcheck::models
