// The table of named model configurations (configs.h). Production shapes follow
// torchtitan's model arguments: llama3's FFN hidden size is its rule
//   hidden = multiple_of * ceil(int(ffn_dim_multiplier * int(2 * 4 * dim / 3)) / multiple_of),
// deepseek_v3 16b is torchtitan's "16B" (MLA without q compression, 64 routed experts
// top-6 on the dropless grouped dispatch, two shared experts as one of twice the hidden
// size), qwen3 32b is Qwen3-32B (GQA 64/8 heads of dim 128, q/k norm, untied output).
#include "oracles/models/configs.h"

#include "oracles/models/deepseek_v3.h"
#include "oracles/models/llama3.h"
#include "oracles/models/zoo.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace passcheck::models {

namespace {

struct Llama3Shape {
  const char* name;
  int64_t dim, n_layers, n_heads, n_kv_heads;
  double ffn_dim_multiplier;
  int64_t multiple_of;
};

constexpr Llama3Shape kLlama3Shapes[] = {
    {"8b", 4096, 32, 32, 8, 1.3, 1024},
    {"70b", 8192, 80, 64, 8, 1.3, 4096},
    {"405b", 16384, 126, 128, 8, 1.2, 4096},
};

// Production runs train one sequence per rank at the length torchtitan trains them.
constexpr int64_t kLlama3Seq = 8192;
constexpr int64_t kOtherSeq = 4096;

int64_t llama3_ffn_hidden(const Llama3Shape& s) {
  int64_t hidden = 2 * (4 * s.dim) / 3;
  hidden = static_cast<int64_t>(s.ffn_dim_multiplier * static_cast<double>(hidden));
  return s.multiple_of * ((hidden + s.multiple_of - 1) / s.multiple_of);
}

Llama3Config llama3_config(const Llama3Shape& s) {
  Llama3Config c;
  c.dim = s.dim;
  c.n_layers = s.n_layers;
  c.n_heads = s.n_heads;
  c.n_kv_heads = s.n_kv_heads;
  c.vocab_size = 128256;
  c.ffn_hidden = llama3_ffn_hidden(s);
  c.norm_eps = 1e-5;
  c.rope_theta = 500000.0;
  c.max_seq_len = kLlama3Seq;
  c.batch_size = 1;
  c.seq_len = kLlama3Seq;
  return c;
}

DeepSeekV3Config deepseek_v3_16b() {
  DeepSeekV3Config c;
  c.dim = 2048;
  c.n_layers = 27;
  c.n_dense_layers = 1;
  c.n_heads = 16;
  c.vocab_size = 102400;
  c.dense_ffn_hidden = 10944;
  c.n_routed_experts = 64;
  c.top_k = 6;
  c.expert_hidden = 1408;
  c.shared_expert_hidden = 2 * 1408;
  c.kv_lora_rank = 512;
  c.qk_nope_head_dim = 128;
  c.qk_rope_head_dim = 64;
  c.v_head_dim = 128;
  c.max_seq_len = kOtherSeq;
  c.batch_size = 1;
  c.seq_len = kOtherSeq;
  c.sparse_dispatch = true;
  return c;
}

ZooConfig qwen3_32b(int64_t n_layers) {
  ZooConfig c;
  c.name = "qwen3";
  c.dim = 5120;
  c.vocab_size = 151936;
  c.norm_eps = 1e-6;
  c.rope = RopeStyle::RotateHalf;
  c.rope_head_dim = 128;
  c.rope_theta = 1e6;
  c.max_seq_len = kOtherSeq;
  c.tied_embeddings = false;
  ZooLayer layer;
  layer.attention.dim = 5120;
  layer.attention.n_heads = 64;
  layer.attention.n_kv_heads = 8;
  layer.attention.head_dim = 128;
  layer.attention.qk_norm_eps = 1e-6;
  layer.attention.rope = RopeStyle::RotateHalf;
  layer.ffn_hidden = 25600;
  c.layers.assign(static_cast<size_t>(n_layers ? n_layers : 64), layer);
  c.batch_size = 1;
  c.seq_len = kOtherSeq;
  return c;
}

std::string describe(int64_t layers, int64_t dim, int64_t heads, int64_t kv_heads, const std::string& ffn,
                     int64_t vocab) {
  return std::to_string(layers) + " layers, dim " + std::to_string(dim) + ", " + std::to_string(heads) + " heads / " +
         std::to_string(kv_heads) + " kv, " + ffn + ", vocab " + std::to_string(vocab);
}

}  // namespace

std::vector<ModelConfigInfo> production_configs() {
  std::vector<ModelConfigInfo> out;
  for (const Llama3Shape& s : kLlama3Shapes)
    out.push_back({"llama3", s.name,
                   describe(s.n_layers, s.dim, s.n_heads, s.n_kv_heads, "SwiGLU " + std::to_string(llama3_ffn_hidden(s)),
                            128256),
                   1, kLlama3Seq});
  out.push_back({"deepseek_v3", "16b",
                 describe(27, 2048, 16, 16, "MLA, 1 dense + 26 MoE layers (64 experts top-6, 2 shared)", 102400), 1,
                 kOtherSeq});
  out.push_back({"qwen3", "32b", describe(64, 5120, 64, 8, "q/k norm, SwiGLU 25600", 151936), 1, kOtherSeq});
  return out;
}

std::vector<std::string> config_names(const std::string& model) {
  std::vector<std::string> names{kDebugConfig};
  for (const ModelConfigInfo& c : production_configs())
    if (c.model == model) names.push_back(c.name);
  return names;
}

void check_config(const std::string& model, const std::string& config) {
  if (config.empty()) return;
  const std::vector<std::string> names = config_names(model);
  if (std::find(names.begin(), names.end(), config) != names.end()) return;
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown configuration '" + config + "' of model '" + model + "' (known: " + known + ")");
}

std::unique_ptr<TrainingSubject> make_configured_subject(const std::string& model, const SubjectOptions& options) {
  check_config(model, options.config);
  if (model == "llama3")
    for (const Llama3Shape& s : kLlama3Shapes)
      if (options.config == s.name) return make_llama3_subject(options, llama3_config(s));
  if (model == "deepseek_v3" && options.config == "16b") return make_deepseek_v3_subject(options, deepseek_v3_16b());
  if (model == "qwen3" && options.config == "32b") return make_zoo_subject(options, qwen3_32b(options.n_layers));
  throw std::invalid_argument("configuration '" + options.config + "' of model '" + model + "' is not buildable");
}

int64_t parameter_count(const std::string& model, SubjectOptions options) {
  options.device = c10::Device(c10::DeviceType::Meta);
  options.parallel = {};
  auto subject = make_subject(model, options);
  // A tied parameter (one storage under two FQNs) counts once.
  std::set<const c10::StorageImpl*> seen;
  int64_t count = 0;
  for (const at::Tensor& p : subject->module()->parameters(/*recurse=*/true))
    if (seen.insert(p.storage().unsafeGetStorageImpl()).second) count += p.numel();
  return count;
}

void check_buildable_on_device(const std::string& model, const SubjectOptions& options) {
  if (options.config.empty() || options.config == kDebugConfig || options.device.is_meta()) return;
  const int64_t count = parameter_count(model, options);
  if (count > kMaxRealParameters)
    throw std::invalid_argument("configuration '" + options.config + "' of model '" + model + "' has " +
                                std::to_string(count) + " parameters, too many to build on " + options.device.str() +
                                " (at most " + std::to_string(kMaxRealParameters) +
                                "): trace it on the meta device (--meta) or with fewer --layers");
}

}  // namespace passcheck::models
