// Random training-step programs (see program.h). Generation builds the plain-data spec
// with gen::exec over shrinking choices, so RapidCheck's shrinking reaches every field;
// construction walks the spec once, creating the module tree with parameters sized by
// the tracked activation width; the forward walks it again with the same widths.
#include "generators/program.h"

#include "framework/trace/module_scope.h"
#include "generators/choice.h"
#include "oracles/models/layers.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace passcheck::gen {

namespace {
struct KindName {
  OpKind kind;
  const char* name;
};
// In OpKind order: the generator's choice shrinks towards the front of this table.
constexpr KindName kKinds[] = {
    {OpKind::Relu, "relu"}, {OpKind::Gelu, "gelu"}, {OpKind::Silu, "silu"}, {OpKind::Tanh, "tanh"},
    {OpKind::Sigmoid, "sigmoid"}, {OpKind::ExpTanh, "exp_tanh"}, {OpKind::Sin, "sin"}, {OpKind::Cos, "cos"},
    {OpKind::Neg, "neg"}, {OpKind::Abs, "abs"}, {OpKind::SqrtAbs, "sqrt_abs"}, {OpKind::RsqrtAbs, "rsqrt_abs"},
    {OpKind::Log1pAbs, "log1p_abs"}, {OpKind::Linear, "linear"}, {OpKind::Matmul, "matmul"}, {OpKind::Bmm, "bmm"},
    {OpKind::AddParam, "add"}, {OpKind::SubParam, "sub"}, {OpKind::MulParam, "mul"}, {OpKind::DivAbs, "div_abs"},
    {OpKind::Maximum, "maximum"}, {OpKind::Minimum, "minimum"}, {OpKind::PowTanh, "pow_tanh"},
    {OpKind::Where, "where"}, {OpKind::Clamp, "clamp"}, {OpKind::SumDim, "sum_dim"}, {OpKind::MeanDim, "mean_dim"},
    {OpKind::AmaxDim, "amax_dim"}, {OpKind::VarDim, "var_dim"}, {OpKind::Softmax, "softmax"},
    {OpKind::LogSoftmax, "log_softmax"}, {OpKind::LayerNorm, "layer_norm"}, {OpKind::RmsNorm, "rms_norm"},
    {OpKind::ViewTranspose, "view_transpose"}, {OpKind::Permute, "permute"}, {OpKind::Flatten, "flatten"},
    {OpKind::SliceCat, "slice_cat"}, {OpKind::SelectUnsqueeze, "select_unsqueeze"}, {OpKind::SplitCat, "split_cat"},
    {OpKind::ChunkCat, "chunk_cat"}, {OpKind::Stack, "stack"}, {OpKind::Expand, "expand"},
    {OpKind::MaxDim, "max_dim"}, {OpKind::Topk, "topk"}, {OpKind::VarMean, "var_mean"},
    {OpKind::BufferUpdate, "buffer_update"}, {OpKind::Dropout, "dropout"}, {OpKind::Bernoulli, "bernoulli"},
    {OpKind::RandMask, "rand_mask"}, {OpKind::Route, "route"}, {OpKind::CountUpdate, "count_update"},
    {OpKind::ForceSaved, "force_saved"}, {OpKind::PadRow, "pad_row"}, {OpKind::DoubleDropout, "double_dropout"},
    {OpKind::UpdateThenScale, "update_then_scale"}, {OpKind::PadTwoRows, "pad_two_rows"},
    {OpKind::SavedForBackward, "saved_for_backward"},
    {OpKind::RandomSavedForBackward, "random_saved_for_backward"},
    {OpKind::ScaledMaskInPlace, "scaled_mask_in_place"},
    {OpKind::ScaleInPlaceShared, "scale_in_place_shared"},
};

// Drawn only with ProgramGenOptions::decision_coverage.
bool is_coverage_kind(OpKind k) {
  return k == OpKind::ForceSaved || k == OpKind::PadRow || k == OpKind::DoubleDropout || k == OpKind::UpdateThenScale ||
         k == OpKind::PadTwoRows ||
         k == OpKind::SavedForBackward || k == OpKind::RandomSavedForBackward || k == OpKind::ScaledMaskInPlace ||
         k == OpKind::ScaleInPlaceShared;
}


bool has_weight(OpKind k) {
  switch (k) {
    case OpKind::Linear: case OpKind::Matmul: case OpKind::Bmm: case OpKind::AddParam: case OpKind::SubParam:
    case OpKind::MulParam: case OpKind::DivAbs: case OpKind::Maximum: case OpKind::Minimum: case OpKind::LayerNorm:
    case OpKind::RmsNorm: case OpKind::SavedForBackward: case OpKind::RandomSavedForBackward:
      return true;
    default:
      return false;
  }
}
}  // namespace

const char* to_string(OpKind kind) {
  for (const auto& k : kKinds)
    if (k.kind == kind) return k.name;
  return "?";
}

bool changes_width(OpKind k) { return k == OpKind::Linear || k == OpKind::Matmul || k == OpKind::Bmm; }
bool is_moe(OpKind k) { return k == OpKind::Route || k == OpKind::CountUpdate; }

std::optional<OpKind> op_kind_named(const std::string& name) {
  for (const auto& k : kKinds)
    if (name == k.name) return k.kind;
  return std::nullopt;
}

bool is_random(OpKind k) {
  return k == OpKind::Dropout || k == OpKind::Bernoulli || k == OpKind::RandMask || k == OpKind::DoubleDropout ||
         k == OpKind::RandomSavedForBackward || k == OpKind::ScaledMaskInPlace;
}

const char* to_string(LayerEnd end) {
  switch (end) {
    case LayerEnd::Tanh: return "tanh";
    case LayerEnd::LayerNorm: return "layer_norm";
    case LayerEnd::RmsNorm: return "rms_norm";
  }
  return "?";
}

const char* to_string(LossKind kind) {
  switch (kind) {
    case LossKind::Sum: return "sum";
    case LossKind::Mean: return "mean";
    case LossKind::CrossEntropy: return "cross_entropy";
  }
  return "?";
}

int64_t ProgramSpec::width_after(int n) const {
  int64_t d = in_dim;
  for (int l = 0; l <= n && l < static_cast<int>(layers.size()); ++l)
    for (const OpSpec& op : layers[l].ops)
      if (changes_width(op.kind)) d = op.out;
  return d;
}

int64_t ProgramSpec::int_high() const {
  int64_t high = 0;
  if (tokens) high = vocab;
  if (loss == LossKind::CrossEntropy) high = high ? std::min(high, classes) : classes;
  return high ? high : 2;
}

std::string ProgramSpec::describe() const {
  std::ostringstream os;
  if (tokens) os << "input tokens[" << batch << "] vocab " << vocab << " -> embed[" << batch << "," << in_dim << "]";
  else os << "input x[" << batch << "," << in_dim << "] f32";
  os << "; loss " << to_string(loss);
  if (loss == LossKind::CrossEntropy) os << " over lm_head " << width_after(static_cast<int>(layers.size()) - 1) << "->" << classes;
  os << "\n";
  int64_t d = in_dim;
  for (size_t l = 0; l < layers.size(); ++l) {
    const LayerSpec& layer = layers[l];
    os << "layers." << l << (layer.bf16 ? " [bf16]" : " [f32]") << ":";
    for (const OpSpec& op : layer.ops) {
      os << " " << to_string(op.kind);
      if (changes_width(op.kind)) {
        os << "(" << d << "->" << op.out << (op.kind == OpKind::Linear && op.bias ? ",bias" : "") << ")";
        d = op.out;
      }
      if (is_moe(op.kind)) os << "(E=" << op.experts << ",k=" << op.top_k << ")";
    }
    os << " | " << to_string(layer.end) << "\n";
  }
  return os.str();
}

void showValue(const ProgramSpec& spec, std::ostream& os) { os << spec.describe(); }

// ---------------------------------------------------------------------------------
// Generation

namespace {

rc::Gen<int64_t> small_int(int64_t lo, int64_t hi) {
  return rc::gen::map(shrinking_index(static_cast<size_t>(hi - lo + 1)),
                      [lo](size_t i) { return lo + static_cast<int64_t>(i); });
}

// Chunkable mode: the plain vocabulary without random ops and BufferUpdate, plus the
// MoE-like kinds, drawn often enough that most programs route and count.
rc::Gen<OpSpec> chunkable_op_gen(const ProgramGenOptions& o) {
  std::vector<OpKind> kinds;
  for (const auto& k : kKinds) {
    if (is_random(k.kind) || k.kind == OpKind::BufferUpdate || is_moe(k.kind) || is_coverage_kind(k.kind)) continue;
    kinds.push_back(k.kind);
  }
  // Decision coverage: what the chunk passes refuse or handle specially, as a family of
  // its own so the other draws keep their odds.
  // The pads twice as likely: they reach guards of both passes. ScaleInPlaceShared: an
  // in-place update the tracer keeps in place, for the chunk pass's mutation chains.
  const std::vector<OpKind> refusals = {OpKind::PadRow, OpKind::DoubleDropout, OpKind::Dropout,
                                        OpKind::BufferUpdate, OpKind::PadTwoRows, OpKind::ScaleInPlaceShared};
  const bool coverage = o.decision_coverage;
  int64_t max_dim = std::max<int64_t>(2, o.max_dim);
  return rc::gen::exec([kinds, refusals, coverage, max_dim] {
    OpSpec op;
    int family = coverage ? *choose_value<int>({{4, 0}, {1, 1}, {1, 2}, {2, 3}})
                          : *choose_value<int>({{4, 0}, {1, 1}, {1, 2}});
    if (family == 1) op.kind = OpKind::Route;
    else if (family == 2) op.kind = OpKind::CountUpdate;
    else if (family == 3)
      op.kind = *choose_value<OpKind>(
          {{2, refusals[0]}, {1, refusals[1]}, {1, refusals[2]}, {1, refusals[3]}, {2, refusals[4]}, {2, refusals[5]}});
    else op.kind = kinds[*shrinking_index(kinds.size())];
    if (changes_width(op.kind)) op.out = *small_int(2, max_dim);
    if (op.kind == OpKind::Linear) op.bias = *rc::gen::map(shrinking_index(2), [](size_t i) { return i == 1; });
    if (is_moe(op.kind)) {
      op.experts = *small_int(2, 4);
      op.top_k = *small_int(1, std::min<int64_t>(2, op.experts));
    }
    return op;
  });
}

rc::Gen<OpSpec> op_gen(const ProgramGenOptions& o) {
  if (o.chunkable) return chunkable_op_gen(o);
  std::vector<OpKind> kinds;
  for (const auto& k : kKinds) {
    if (is_random(k.kind) && !o.allow_random_ops) continue;
    if (k.kind == OpKind::BufferUpdate && !o.allow_buffer_updates) continue;
    if (is_moe(k.kind) || is_coverage_kind(k.kind)) continue;  // the plain draws stay as they were
    kinds.push_back(k.kind);
  }
  // Decision coverage: the AC guards' corner cases as a family of their own, so they
  // come up often enough.
  std::vector<OpKind> corners = {OpKind::ForceSaved, OpKind::SavedForBackward};
  if (o.allow_random_ops) {
    corners.push_back(OpKind::RandomSavedForBackward);
    corners.push_back(OpKind::Dropout);
    corners.push_back(OpKind::ScaledMaskInPlace);
  }
  if (o.allow_buffer_updates) {
    corners.push_back(OpKind::BufferUpdate);
    corners.push_back(OpKind::UpdateThenScale);
  }
  const bool coverage = o.decision_coverage;
  int64_t max_dim = std::max<int64_t>(2, o.max_dim);
  return rc::gen::exec([kinds, corners, coverage, max_dim] {
    OpSpec op;
    const bool corner = coverage && *choose_value<bool>({{4, false}, {1, true}});
    op.kind = corner ? corners[*shrinking_index(corners.size())] : kinds[*shrinking_index(kinds.size())];
    if (changes_width(op.kind)) op.out = *small_int(2, max_dim);
    if (op.kind == OpKind::Linear) op.bias = *rc::gen::map(shrinking_index(2), [](size_t i) { return i == 1; });
    return op;
  });
}

rc::Gen<LayerSpec> layer_gen(const ProgramGenOptions& o) {
  return rc::gen::exec([o] {
    LayerSpec layer;
    // A free-length container (not a drawn count), so shrinking can drop any op, not
    // only the last ones. A layer without ops still has its end and its weight.
    layer.ops = *up_to<std::vector<OpSpec>>(std::max(0, o.max_ops_per_layer), op_gen(o));
    if (o.allow_bf16) layer.bf16 = *choose_value<bool>({{3, false}, {1, true}});
    layer.end = *choose_value<LayerEnd>({{1, LayerEnd::Tanh}, {1, LayerEnd::LayerNorm}, {1, LayerEnd::RmsNorm}});
    return layer;
  });
}

}  // namespace

rc::Gen<ProgramSpec> arbitrary_program(const ProgramGenOptions& options) {
  ProgramGenOptions o = options;
  o.max_layers = std::max(1, o.max_layers);
  int64_t max_dim = std::max<int64_t>(2, o.max_dim);
  return rc::gen::exec([o, max_dim] {
    ProgramSpec s;
    // Chunkable: an even batch (4 or 6), so the chunk pass can halve it. Not 2: chunks of
    // one row give size-1 dims whose strides TensorIterator picks differently from the
    // chunk pass's symbolic strides (a known false alarm of the executor's metadata check).
    s.batch = o.chunkable ? 2 * *small_int(2, 3) : *small_int(1, 4);
    s.in_dim = *small_int(2, max_dim);
    s.tokens = *choose_value<bool>({{2, false}, {1, true}});
    if (s.tokens) s.vocab = *small_int(2, 8);
    s.layers = *up_to<std::vector<LayerSpec>>(o.max_layers, layer_gen(o));
    // At least one layer: it holds the parameters the loss needs gradients for.
    if (s.layers.empty()) s.layers.push_back(*layer_gen(o));
    s.loss = *choose_value<LossKind>({{1, LossKind::Sum}, {1, LossKind::Mean}, {1, LossKind::CrossEntropy}});
    if (s.loss == LossKind::CrossEntropy) s.classes = *small_int(2, 6);
    // A padded batch has one row more than the labels.
    bool pads = false;
    for (const LayerSpec& layer : s.layers)
      for (const OpSpec& op : layer.ops) pads |= op.kind == OpKind::PadRow || op.kind == OpKind::PadTwoRows;
    if (pads && s.loss == LossKind::CrossEntropy) s.loss = LossKind::Sum;
    return s;
  });
}

ProgramGenOptions ac_coverage_options() {
  ProgramGenOptions o;
  o.decision_coverage = true;
  return o;
}

ProgramGenOptions chunk_coverage_options() {
  ProgramGenOptions o = chunkable_options();
  o.decision_coverage = true;
  return o;
}

ProgramGenOptions chunkable_options() {
  ProgramGenOptions o;
  o.max_layers = 3;
  o.max_ops_per_layer = 5;
  o.max_dim = 6;
  o.allow_random_ops = false;
  o.allow_buffer_updates = false;
  o.chunkable = true;
  return o;
}

ProgramSpec program_for_seed(uint64_t seed, const ProgramGenOptions& options, int size) {
  return arbitrary_program(options)(rc::Random(seed), size).value();
}

// ---------------------------------------------------------------------------------
// Construction

namespace {

/// The state of one operation (layers.N.<op><i>): whichever of weight, bias and
/// running_mean the operation needs.
class OpModule : public torch::nn::Module {
 public:
  at::Tensor weight, bias, running_mean;
  at::Tensor experts, expert_bias, tokens_per_expert;  // Route, CountUpdate
};

class LayerModule : public torch::nn::Module {
 public:
  std::vector<std::shared_ptr<OpModule>> ops;  // null for stateless operations
  std::shared_ptr<OpModule> end;               // norm weight (LayerNorm, RmsNorm ends)
};

class ProgramModule : public torch::nn::Module {
 public:
  std::shared_ptr<OpModule> embed, lm_head;
  torch::nn::ModuleList layers;
  std::vector<std::shared_ptr<LayerModule>> layer_modules;
};

// x * weight, with a value saved for the backward alone (SavedForBackward kinds): the
// backward multiplies by (0 * saved + 1), so the saved value is read but changes nothing.
// The weight makes the backward run wherever the op sits.
struct SaveForBackwardOnly : public torch::autograd::Function<SaveForBackwardOnly> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            bool random) {
    at::Tensor saved = random ? at::bernoulli(at::full_like(x, 0.5)) : at::tanh(x);
    ctx->save_for_backward({x, w, saved});
    // A second draw after the saved one, so erasing the first would shift this one.
    return random ? x * w * (at::rand_like(x) * 0.01 + 1) : x * w;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor k = saved[2] * 0 + 1;
    return {grads[0] * saved[1] * k, (grads[0] * saved[0] * k).sum(0), at::Tensor()};
  }
};

at::Tensor apply_op(const OpSpec& op, const OpModule* m, const at::Tensor& x, int64_t d) {
  const int64_t b = x.size(0);
  switch (op.kind) {
    case OpKind::Relu: return at::relu(x);
    case OpKind::Gelu: return at::gelu(x);
    case OpKind::Silu: return at::silu(x);
    case OpKind::Tanh: return at::tanh(x);
    case OpKind::Sigmoid: return at::sigmoid(x);
    case OpKind::ExpTanh: return at::exp(at::tanh(x));  // bounded by e
    case OpKind::Sin: return at::sin(x);
    case OpKind::Cos: return at::cos(x);
    case OpKind::Neg: return at::neg(x);
    case OpKind::Abs: return at::abs(x);
    case OpKind::SqrtAbs: return at::sqrt(at::abs(x) + 1);
    case OpKind::RsqrtAbs: return at::rsqrt(at::abs(x) + 1);
    case OpKind::Log1pAbs: return at::log1p(at::abs(x));
    case OpKind::Linear: return op.bias ? at::linear(x, m->weight, m->bias) : at::linear(x, m->weight);
    case OpKind::Matmul: return at::matmul(x, m->weight);  // weight [d, out]
    case OpKind::Bmm:
      return at::bmm(x.unsqueeze(1), m->weight.unsqueeze(0).expand({b, d, op.out})).squeeze(1);
    case OpKind::AddParam: return x + m->weight;
    case OpKind::SubParam: return x - m->weight;
    case OpKind::MulParam: return x * m->weight;
    case OpKind::DivAbs: return x / (at::abs(m->weight) + 1);
    case OpKind::Maximum: return at::maximum(x, m->weight);
    case OpKind::Minimum: return at::minimum(x, m->weight);
    case OpKind::PowTanh: return at::pow(at::tanh(x), 2);
    case OpKind::Where: return at::where(x > 0, x, x * 0.5);
    case OpKind::Clamp: return at::clamp(x, -2.0, 2.0);
    case OpKind::SumDim: return x - x.sum({1}, /*keepdim=*/true) / d;
    case OpKind::MeanDim: return x - x.mean({1}, /*keepdim=*/true);
    case OpKind::AmaxDim: return x - at::amax(x, {1}, /*keepdim=*/true);
    case OpKind::VarDim: return x / at::sqrt(at::var(x, {1}, /*unbiased=*/true, /*keepdim=*/true) + 1);
    case OpKind::Softmax: return at::softmax(x, 1);
    case OpKind::LogSoftmax: return at::log_softmax(x, 1);
    case OpKind::LayerNorm: return at::layer_norm(x, {d}, m->weight, m->bias, 1e-5);
    case OpKind::RmsNorm: {
      at::Tensor variance = x.pow(2).mean({-1}, /*keepdim=*/true);
      return x * at::rsqrt(variance + 1e-6) * m->weight;
    }
    case OpKind::ViewTranspose: {
      int64_t a = d % 2 == 0 ? 2 : 1;
      return x.view({b, a, d / a}).transpose(1, 2).reshape({b, d});
    }
    case OpKind::Permute: return x.view({b, d, 1}).permute({2, 0, 1}).reshape({b, d}) * 2;
    case OpKind::Flatten: return at::tanh(x.unflatten(1, {1, d})).flatten(1);
    case OpKind::SliceCat: {
      int64_t h = d / 2;
      return at::cat({x.slice(1, h, d), x.narrow(1, 0, h)}, 1);
    }
    case OpKind::SelectUnsqueeze: return x * at::tanh(x.select(1, 0)).unsqueeze(1);
    case OpKind::SplitCat: {
      auto parts = x.split(1, 1);
      std::reverse(parts.begin(), parts.end());
      return at::cat(parts, 1);
    }
    case OpKind::ChunkCat: {
      auto parts = x.chunk(2, 1);
      return at::cat({parts.back(), parts.front() * 2}, 1).narrow(1, 0, d);
    }
    case OpKind::Stack: return at::stack({x, at::tanh(x)}, 0).sum(0);
    case OpKind::Expand: return x.unsqueeze(1).expand({b, 3, d}).sum(1) / 3;
    case OpKind::MaxDim: return x - std::get<0>(x.max(1, /*keepdim=*/true));
    case OpKind::Topk: return x + std::get<0>(at::topk(x, std::min<int64_t>(2, d), 1)).sum(1, true);
    case OpKind::VarMean: {
      auto [var, mean] = at::var_mean(x, {1}, /*unbiased=*/true, /*keepdim=*/true);
      return (x - mean) / at::sqrt(var + 1);
    }
    case OpKind::BufferUpdate: {
      // Read the buffer before updating it, so the update's order matters; the update
      // itself is recorded as in-place nodes on the buffer input.
      at::Tensor out = x + m->running_mean.to(x.scalar_type());
      m->running_mean.mul_(0.9).add_(x.detach().mean(0).to(m->running_mean.scalar_type()) * 0.1);
      return out;
    }
    case OpKind::Dropout: return at::dropout(x, 0.25, /*train=*/true);
    case OpKind::UpdateThenScale: {
      m->running_mean.mul_(0.9).add_(x.detach().mean(0).to(m->running_mean.scalar_type()) * 0.1);
      return x * at::tanh(m->running_mean).to(x.scalar_type());
    }
    case OpKind::Bernoulli: return x * at::bernoulli(at::full_like(x, 0.5));
    case OpKind::RandMask: return x * (at::rand_like(x) < 0.75);
    case OpKind::ScaleInPlaceShared: {
      at::Tensor y = x * 1.5;
      at::Tensor shared = y.unsqueeze(0);  // keeps the update in place
      y.mul_(2.0);
      return y;
    }
    case OpKind::ScaledMaskInPlace: {
      // Dropout as LibTorch's composite writes it (a Bernoulli mask scaled in place),
      // with a view of the mask alive across the scaling, so the write stays in place.
      at::Tensor mask = at::empty_like(x).bernoulli_(0.75);
      at::Tensor shared = mask.unsqueeze(0);
      mask.div_(0.75);
      return x * mask;
    }
    case OpKind::Route: {
      const int64_t e = op.experts, k = std::min(op.top_k, e);
      at::Tensor scores = at::softmax(at::matmul(x, m->weight), 1);  // [b, E]
      at::Tensor biased = scores.detach() + m->expert_bias.to(scores.scalar_type());
      at::Tensor indices = std::get<1>(at::topk(biased, k, 1));     // [b, k], no data-dependent shape
      at::Tensor gates = scores.gather(1, indices);                  // from the unbiased scores
      at::Tensor combine = at::zeros_like(scores).scatter(1, indices, gates);  // dense [b, E]
      at::Tensor expert_out = at::bmm(x.unsqueeze(0).expand({e, b, d}), m->experts);  // every expert, every row
      return (expert_out * combine.t().unsqueeze(2)).sum(0);
    }
    case OpKind::CountUpdate: {
      const int64_t e = std::min(op.experts, d), k = std::min(op.top_k, e);
      at::NoGradGuard no_grad;
      at::Tensor indices = std::get<1>(at::topk(x.detach().narrow(1, 0, e), k, 1));  // [b, k]
      at::Tensor one_hot = (indices.unsqueeze(2) == at::arange(e, indices.options())).to(at::kFloat);
      // The one in-place update of this buffer in the layer (the chunk pass chains two).
      m->tokens_per_expert.add_(one_hot.sum(at::IntArrayRef{0, 1}));
      return x;
    }
    case OpKind::DoubleDropout: return at::dropout(at::dropout(x, 0.25, /*train=*/true), 0.25, /*train=*/true);
    case OpKind::ForceSaved: {
      trace::AnnotationScope force_save(std::map<std::string, std::string>{{"force_save", "1"}});
      return at::tanh(x);
    }
    case OpKind::PadRow: return at::cat({x, x.narrow(0, 0, 1)}, 0);
    case OpKind::PadTwoRows: return at::cat({x, x.narrow(0, 0, std::min<int64_t>(2, b))}, 0);
    case OpKind::SavedForBackward: return SaveForBackwardOnly::apply(x, m->weight, false);
    case OpKind::RandomSavedForBackward: return SaveForBackwardOnly::apply(x, m->weight, true);
  }
  throw std::logic_error("unknown OpKind");
}

class ProgramSubject : public models::TrainingSubject {
 public:
  ProgramSubject(ProgramSpec spec, models::SubjectOptions o) : TrainingSubject(std::move(o)), spec_(std::move(spec)) {
    if (options_.batch_size > 0) spec_.batch = options_.batch_size;
    at::TensorOptions f32 = at::TensorOptions().device(options_.device).dtype(at::kFloat);
    model_ = std::make_shared<ProgramModule>();
    if (spec_.tokens) {
      model_->embed = model_->register_module("embed", std::make_shared<OpModule>());
      model_->embed->weight = model_->embed->register_parameter("weight", at::empty({spec_.vocab, spec_.in_dim}, f32));
    }
    model_->layers = model_->register_module("layers", torch::nn::ModuleList());
    int64_t d = spec_.in_dim;
    for (const LayerSpec& layer : spec_.layers) {
      auto lm = std::make_shared<LayerModule>();
      at::TensorOptions t = f32.dtype(layer.bf16 ? at::kBFloat16 : at::kFloat);
      for (size_t i = 0; i < layer.ops.size(); ++i) {
        const OpSpec& op = layer.ops[i];
        std::shared_ptr<OpModule> m;
        if (has_weight(op.kind) || op.kind == OpKind::BufferUpdate || op.kind == OpKind::UpdateThenScale ||
            is_moe(op.kind)) {
          m = lm->register_module(std::string(to_string(op.kind)) + std::to_string(i), std::make_shared<OpModule>());
          switch (op.kind) {
            case OpKind::Linear:
              m->weight = m->register_parameter("weight", at::empty({op.out, d}, t));
              if (op.bias) m->bias = m->register_parameter("bias", at::empty({op.out}, t));
              break;
            case OpKind::Matmul: case OpKind::Bmm:
              m->weight = m->register_parameter("weight", at::empty({d, op.out}, t));
              break;
            case OpKind::LayerNorm:
              m->weight = m->register_parameter("weight", at::empty({d}, t));
              m->bias = m->register_parameter("bias", at::empty({d}, t));
              break;
            case OpKind::BufferUpdate: case OpKind::UpdateThenScale:
              m->running_mean = m->register_buffer("running_mean", at::zeros({d}, f32));
              break;
            case OpKind::Route:
              m->weight = m->register_parameter("weight", at::empty({d, op.experts}, t));  // router
              m->experts = m->register_parameter("experts", at::empty({op.experts, d, d}, t));
              // Distinct small biases, so they shift the top-k without dominating it.
              m->expert_bias = m->register_buffer("expert_bias", at::linspace(-0.02, 0.02, op.experts, f32));
              break;
            case OpKind::CountUpdate:
              m->tokens_per_expert =
                  m->register_buffer("tokens_per_expert", at::zeros({std::min(op.experts, d)}, f32));
              break;
            default:
              m->weight = m->register_parameter("weight", at::empty({d}, t));
          }
        }
        lm->ops.push_back(m);
        if (changes_width(op.kind)) d = op.out;
      }
      {
        // Every end has a weight (a gain after tanh), so each layer has a parameter
        // and the loss always needs gradients.
        lm->end = lm->register_module(to_string(layer.end), std::make_shared<OpModule>());
        lm->end->weight = lm->end->register_parameter("weight", at::empty({d}, t));
        if (layer.end == LayerEnd::LayerNorm) lm->end->bias = lm->end->register_parameter("bias", at::empty({d}, t));
      }
      model_->layers->push_back(lm);
      model_->layer_modules.push_back(lm);
    }
    if (spec_.loss == LossKind::CrossEntropy) {
      model_->lm_head = model_->register_module("lm_head", std::make_shared<OpModule>());
      model_->lm_head->weight = model_->lm_head->register_parameter("weight", at::empty({spec_.classes, d}, f32));
    }
    // std 0.5: small enough to stay bounded, large enough that activations are not
    // all near zero (which would make most comparisons vacuous).
    models::init_parameters(*model_, options_.seed, /*std=*/0.5);
  }

  std::string name() const override { return "program"; }
  std::shared_ptr<torch::nn::Module> module() const override { return model_; }

  std::vector<c10::IValue> batch(int64_t step) const override {
    uint64_t s = options_.seed * 1000003 + static_cast<uint64_t>(step);
    std::vector<c10::IValue> args;
    if (spec_.tokens) args.emplace_back(models::seeded_randint(s, spec_.vocab, {spec_.batch}, options_.device));
    else args.emplace_back(models::seeded_normal(s, {spec_.batch, spec_.in_dim}, options_.device));
    if (spec_.loss == LossKind::CrossEntropy)
      args.emplace_back(models::seeded_randint(s + 7919, spec_.classes, {spec_.batch}, options_.device));
    return args;
  }

  c10::IValue train_step(const std::vector<c10::IValue>& args) override {
    at::Tensor x = args.at(0).toTensor();
    if (spec_.tokens) {
      trace::ModuleScope scope("embed");
      x = at::embedding(model_->embed->weight, x);
    }
    for (size_t l = 0; l < spec_.layers.size(); ++l) {
      std::string fqn = "layers." + std::to_string(l);
      // Captures by value: eager checkpointing calls the forward again during backward.
      x = trace::call_module(fqn, x, [this, l, fqn](const at::Tensor& in) { return layer_forward(l, fqn, in); });
    }
    at::Tensor loss;
    if (spec_.loss == LossKind::CrossEntropy) {
      at::Tensor logits;
      {
        trace::ModuleScope scope("lm_head");
        logits = at::linear(x, model_->lm_head->weight);
      }
      trace::ModuleScope scope("loss", ir::Phase::Loss);
      loss = at::cross_entropy_loss(logits, args.at(1).toTensor());
    } else {
      trace::ModuleScope scope("loss", ir::Phase::Loss);
      loss = spec_.loss == LossKind::Sum ? x.sum() : x.mean();
    }
    return models::loss_and_gradients(*model_, loss);
  }

 private:
  at::Tensor layer_forward(size_t l, const std::string& fqn, at::Tensor x) const {
    const LayerSpec& layer = spec_.layers[l];
    const LayerModule& lm = *model_->layer_modules[l];
    int64_t d = spec_.width_after(static_cast<int>(l) - 1);
    if (layer.bf16) {
      trace::ModuleScope scope(fqn + ".to_bf16");
      x = x.to(at::kBFloat16);
    }
    for (size_t i = 0; i < layer.ops.size(); ++i) {
      const OpSpec& op = layer.ops[i];
      trace::ModuleScope scope(fqn + "." + to_string(op.kind) + std::to_string(i));
      x = apply_op(op, lm.ops[i].get(), x, d);
      if (changes_width(op.kind)) d = op.out;
    }
    trace::ModuleScope scope(fqn + "." + to_string(layer.end));
    switch (layer.end) {
      case LayerEnd::Tanh: x = at::tanh(x) * lm.end->weight; break;
      case LayerEnd::LayerNorm: x = at::layer_norm(x, {d}, lm.end->weight, lm.end->bias, 1e-5); break;
      case LayerEnd::RmsNorm: x = x * at::rsqrt(x.pow(2).mean({-1}, true) + 1e-6) * lm.end->weight; break;
    }
    return layer.bf16 ? x.to(at::kFloat) : x;
  }

  ProgramSpec spec_;
  std::shared_ptr<ProgramModule> model_;
};

}  // namespace

std::unique_ptr<models::TrainingSubject> make_program_subject(const ProgramSpec& spec, uint64_t seed,
                                                              c10::Device device) {
  models::SubjectOptions o;
  o.seed = seed;
  o.device = device;
  return std::make_unique<ProgramSubject>(spec, o);
}

std::unique_ptr<models::TrainingSubject> make_program_subject(const ProgramSpec& spec,
                                                              const models::SubjectOptions& options) {
  return std::make_unique<ProgramSubject>(spec, options);
}

}  // namespace passcheck::gen
