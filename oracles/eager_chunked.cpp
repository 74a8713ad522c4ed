// Eager chunking of module calls (see eager_chunked.h).
#include "oracles/eager_chunked.h"

#include "framework/check/ac_policy.h"
#include "framework/trace/module_scope.h"

#include <ATen/ATen.h>

#include <mutex>
#include <sstream>
#include <stdexcept>

namespace passcheck::oracles {

namespace {

std::string sizes_text(const at::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

}  // namespace

bool fqn_matches_pattern(const std::string& fqn, const std::string& pattern) {
  // The module itself, not a submodule below a matching root.
  return check::fqn_pattern_root(fqn, pattern) == fqn;
}

std::string describe(const EagerChunkConfig& config) {
  std::string patterns;
  for (const auto& p : config.module_patterns) patterns += (patterns.empty() ? "" : ", ") + p;
  return (patterns.empty() ? "no modules" : patterns) + " on dim " + std::to_string(config.dim);
}

struct EagerChunkGuard::State {
  EagerChunkConfig config;
  // Module calls run on the guard's thread; the lock only keeps stats() safe to call
  // from elsewhere.
  mutable std::mutex mutex;
  std::vector<std::string> chunked_calls;

  bool matches(const std::string& fqn) const {
    for (const auto& p : config.module_patterns)
      if (fqn_matches_pattern(fqn, p)) return true;
    return false;
  }
};

namespace {

std::vector<at::Tensor> chunked_call(EagerChunkGuard::State& state, const std::string& fqn,
                                     const std::vector<at::Tensor>& inputs, const trace::ModuleForward& forward) {
  if (!state.matches(fqn)) return forward(inputs);
  const int64_t dim = state.config.dim;
  auto fail = [&](const std::string& what) {
    return std::invalid_argument("eager chunking of '" + fqn + "' on dim " + std::to_string(dim) + ": " + what);
  };
  if (inputs.empty() || !inputs[0].defined()) throw fail("the module call has no first input tensor to split");
  const at::Tensor& first = inputs[0];
  if (dim < 0 || dim >= first.dim())
    throw fail("input 0 of sizes " + sizes_text(first) + " has no dim " + std::to_string(dim));
  const int64_t extent = first.size(dim);
  if (extent < 2 || extent % 2 != 0)
    throw fail("input 0 has size " + std::to_string(extent) + " at dim " + std::to_string(dim) +
               "; it must be even and at least 2 to split into two halves");
  const int64_t half = extent / 2;

  // Inputs that carry the split extent are split with the first one; the others
  // (weights, tables of another length) are shared by both chunks.
  std::vector<at::Tensor> chunk_inputs[2];
  for (const at::Tensor& t : inputs) {
    if (t.defined() && t.dim() > dim && t.size(dim) == extent) {
      std::vector<at::Tensor> halves = at::split(t, half, dim);
      chunk_inputs[0].push_back(halves[0]);
      chunk_inputs[1].push_back(halves[1]);
    } else {
      chunk_inputs[0].push_back(t);
      chunk_inputs[1].push_back(t);
    }
  }
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.chunked_calls.push_back(fqn);
  }
  // Chunk 0 completes before chunk 1 starts: buffer updates happen in chunk order.
  std::vector<at::Tensor> outputs[2];
  for (int c = 0; c < 2; ++c) outputs[c] = forward(chunk_inputs[c]);
  if (outputs[0].size() != outputs[1].size())
    throw fail("the two chunks returned " + std::to_string(outputs[0].size()) + " and " +
               std::to_string(outputs[1].size()) + " outputs");

  std::vector<at::Tensor> result;
  for (size_t i = 0; i < outputs[0].size(); ++i) {
    const at::Tensor& a = outputs[0][i];
    const at::Tensor& b = outputs[1][i];
    for (const at::Tensor* t : {&a, &b})
      if (!t->defined() || t->dim() <= dim || t->size(dim) != half)
        throw fail("output " + std::to_string(i) + " of a chunk has sizes " +
                   (t->defined() ? sizes_text(*t) : std::string("(undefined)")) + ", not the chunk extent " +
                   std::to_string(half) + " at dim " + std::to_string(dim) +
                   ": only outputs that carry the split dimension can be concatenated");
    result.push_back(at::cat({a, b}, dim));
  }
  return result;
}

}  // namespace

EagerChunkGuard::EagerChunkGuard(EagerChunkConfig config) : state_(std::make_shared<State>()) {
  if (config.module_patterns.empty()) throw std::invalid_argument("eager chunking: no module pattern given");
  if (config.dim < 0)
    throw std::invalid_argument("eager chunking: dim must be non-negative, got " + std::to_string(config.dim));
  state_->config = std::move(config);
  std::shared_ptr<State> state = state_;
  interceptor_ = std::make_unique<trace::ModuleInterceptorGuard>(
      [state](const std::string& fqn, const std::vector<at::Tensor>& inputs, const trace::ModuleForward& forward) {
        return chunked_call(*state, fqn, inputs, forward);
      });
}

EagerChunkGuard::~EagerChunkGuard() = default;

EagerChunkStats EagerChunkGuard::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return EagerChunkStats{state_->chunked_calls};
}

}  // namespace passcheck::oracles
