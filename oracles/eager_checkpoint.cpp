// Eager activation checkpointing (see eager_checkpoint.h). Pieces:
// - an interceptor (trace::ModuleInterceptorGuard) that turns each region call into a
//   CheckpointFunction (torch::autograd::Function) whose inputs are the region's inputs
//   and its parameters, so gradients taken with torch::autograd::grad reach both;
// - a dispatcher mode on TESTING_ONLY_GenericWrapper, on while a region's forward or its
//   recomputation runs. It splits operators exactly as the tracer does
//   (trace/dispatch_rules.h), asks the AcPolicy about each primitive during the forward
//   and stores the outputs of saved ones; during the recomputation it checks that the same
//   operators come back in the same order and hands the stored outputs back;
// - a replay hook on DispatchKey::Fake, below autograd: the mode sits above autograd,
//   so a stored output handed back there would have no grad_fn. For a saved operator the
//   mode instead lets the call go through autograd (which records the backward node and
//   saves the inputs as usual) and the hook, reached where the kernel would run, returns
//   the stored output. Fake is a key no LibTorch component registers a fallback for (it
//   belonged to the out-of-tree torchdistx), so the hook is registered on first use.
#include "oracles/eager_checkpoint.h"

#include "framework/check/pipeline.h"

#include "framework/trace/dispatch_rules.h"
#include "framework/trace/module_scope.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/library.h>
#include <torch/nn/module.h>

#ifdef PASSCHECK_WITH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

#include <mutex>
#include <stdexcept>
#include <unordered_set>

namespace passcheck::oracles {

namespace {

constexpr auto kModeKey = c10::DispatchKey::TESTING_ONLY_GenericWrapper;
constexpr auto kReplayKey = c10::DispatchKey::Fake;

std::string qualified_name(const c10::FunctionSchema& schema) {
  return schema.overload_name().empty() ? schema.name() : schema.name() + "." + schema.overload_name();
}

// Operators drawing from a generator. The schema tag is authoritative; the names cover
// registrations that lack it.
// scaled_dot_product_attention's kernels carry the tag for their dropout; with a
// dropout_p of 0 they draw nothing (as exec::is_random decides on graph nodes).
bool is_random_op(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const c10::FunctionSchema& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  for (size_t i = 0; i < nargs; ++i) {
    if (schema.arguments()[i].name() != "dropout_p" || stack.size() < nargs) continue;
    const c10::IValue& p = stack[stack.size() - nargs + i];
    if (p.isDouble()) return p.toDouble() != 0.0;
    if (p.isInt()) return p.toInt() != 0;
  }
  if (op.hasTag(at::Tag::nondeterministic_seeded)) return true;
  static const std::unordered_set<std::string> names{"bernoulli",       "normal",
                                                     "uniform",         "rand",
                                                     "randn",           "randint",
                                                     "randperm",        "random",
                                                     "exponential",     "geometric",
                                                     "cauchy",          "log_normal",
                                                     "multinomial",     "poisson",
                                                     "native_dropout",  "rrelu_with_noise",
                                                     "_standard_gamma", "_sample_dirichlet",
                                                     "binomial",        "rand_like",
                                                     "randn_like",      "randint_like"};
  std::string base = check::op_base_name(op.schema().name());
  if (!base.empty() && base.back() == '_') base.pop_back();  // in-place forms
  return names.count(base) > 0;
}

// How an operator's results relate to its arguments, for storing and handing back.
enum class ResultKind {
  Fresh,       // no result aliases an argument: stored as detached aliases
  InPlace,     // every result is a written argument (add_, bernoulli_): stored as copies
  NotStorable  // views, or writes that the results do not carry: always re-run
};

ResultKind result_kind(const c10::FunctionSchema& schema) {
  bool any_alias = false, all_written = true;
  for (const c10::Argument& r : schema.returns()) {
    const c10::AliasInfo* a = r.alias_info();
    if (!a) {
      all_written = false;
      continue;
    }
    any_alias = true;
    if (!a->isWrite()) return ResultKind::NotStorable;
  }
  size_t written_args = 0;
  for (const c10::Argument& arg : schema.arguments())
    if (arg.alias_info() && arg.alias_info()->isWrite()) ++written_args;
  if (!any_alias) return written_args == 0 ? ResultKind::Fresh : ResultKind::NotStorable;
  if (!all_written || schema.returns().size() != written_args) return ResultKind::NotStorable;
  return ResultKind::InPlace;
}

// Index of the argument a written result aliases.
size_t written_argument_of(const c10::FunctionSchema& schema, size_t result) {
  const c10::AliasInfo* r = schema.returns()[result].alias_info();
  for (size_t j = 0; j < schema.arguments().size(); ++j) {
    const c10::AliasInfo* a = schema.arguments()[j].alias_info();
    if (a && a->isWrite() && a->beforeSets() == r->beforeSets()) return j;
  }
  throw std::logic_error("eager checkpoint: no argument of " + qualified_name(schema) + " matches result " +
                         std::to_string(result));
}

struct RecordedOp {
  std::string name;  // qualified operator name
  std::string fqn;   // module FQN when it ran
  bool saved = false;
  std::vector<c10::IValue> outputs;  // stored results (saved ops only)
  std::vector<int64_t> versions;     // version counters of stored aliases, to detect later writes
};

// One checkpointed call of a region: what its forward recorded and what the backward
// needs to recompute it. Owned by the autograd node (through a capsule in saved_data).
struct RegionRun : torch::CustomClassHolder {
  std::string fqn;
  trace::ModuleForward forward;
  check::AcPolicy* policy = nullptr;  // the guard's; used only while the forward runs
  std::shared_ptr<RegionStats> stats;
  std::shared_ptr<std::mutex> stats_mutex;
  std::vector<RecordedOp> records;
  size_t cursor = 0;
  bool replaying = false;
  bool recomputed = false;
  std::vector<at::Tensor> params;
  bool preserve_rng_state = true;
  at::Tensor cpu_rng_state;
#ifdef PASSCHECK_WITH_CUDA
  c10::optional<c10::DeviceIndex> cuda_device;
  at::Tensor cuda_rng_state;
#endif

  void capture(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack);
  void replay(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack);
  std::runtime_error error(const std::string& what) const {
    return std::runtime_error("eager checkpoint of region '" + fqn + "': " + what);
  }
};

thread_local RegionRun* tls_active = nullptr;

// The region whose forward or recomputation runs on this thread, with the mode on.
class ActiveRegion {
 public:
  ActiveRegion(RegionRun* run, bool replaying) : previous_(tls_active), include_(kModeKey) {
    run->replaying = replaying;
    tls_active = run;
  }
  ~ActiveRegion() { tls_active = previous_; }

 private:
  RegionRun* previous_;
  c10::impl::IncludeDispatchKeyGuard include_;
};

// Outputs the replay hook hands back for one operator call.
struct PendingReplay {
  c10::OperatorName op;
  std::vector<c10::IValue>* outputs;
  bool consumed = false;
};
thread_local PendingReplay* tls_pending = nullptr;

// Replaces the operator's arguments on the stack by the stored results; a written
// argument receives the stored values, as the in-place kernel would have written them.
void hand_back(const c10::OperatorHandle& op, torch::jit::Stack* stack, std::vector<c10::IValue>& outputs) {
  const c10::FunctionSchema& schema = op.schema();
  size_t nargs = schema.arguments().size();
  std::vector<c10::IValue> args(stack->end() - static_cast<std::ptrdiff_t>(nargs), stack->end());
  stack->resize(stack->size() - nargs);
  for (size_t i = 0; i < schema.returns().size(); ++i) {
    const c10::AliasInfo* alias = schema.returns()[i].alias_info();
    if (alias && alias->isWrite()) {
      c10::IValue& target = args.at(written_argument_of(schema, i));
      target.toTensor().copy_(outputs.at(i).toTensor());
      stack->push_back(target);
    } else {
      stack->push_back(std::move(outputs.at(i)));
    }
  }
  outputs.clear();
}

void replay_hook(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  PendingReplay* pending = tls_pending;
  if (pending == nullptr || pending->consumed || !(op.operator_name() == pending->op)) {
    op.redispatchBoxed(ks.remove(kReplayKey), stack);
    return;
  }
  pending->consumed = true;
  hand_back(op, stack, *pending->outputs);
}

void ensure_replay_hook() {
  static std::once_flag once;
  std::call_once(once, [] {
    c10::Dispatcher& d = c10::Dispatcher::singleton();
    if (d.hasBackendFallbackForDispatchKey(kReplayKey))
      throw std::runtime_error(
          "eager checkpoint: another library registered a fallback for DispatchKey::Fake, which the selective "
          "checkpoint replay needs");
    // Leaked on purpose: the hook stays registered for the process's lifetime.
    new c10::RegistrationHandleRAII(d.registerFallback(
        kReplayKey, c10::KernelFunction::makeFromBoxedFunction<&replay_hook>(), "passcheck eager checkpoint replay"));
  });
}

void mode_fallback(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  RegionRun* run = tls_active;
  if (run == nullptr) {
    // The key leaked into a context without a region (e.g. a thread that inherited the
    // dispatch key state): be transparent.
    c10::impl::ExcludeDispatchKeyGuard exclude(kModeKey);
    op.redispatchBoxed(ks.remove(kModeKey), stack);
    return;
  }
  if (trace::runs_composite_implicit_kernel(op, ks)) {
    // Keep the mode on: the decomposition's primitives come back through this fallback.
    op.redispatchBoxed(ks.remove(kModeKey), stack);
    return;
  }
  if (run->replaying)
    run->replay(op, ks, stack);
  else
    run->capture(op, ks, stack);
}

int64_t storage_bytes(const std::vector<c10::IValue>& values) {
  std::unordered_set<const c10::StorageImpl*> seen;
  int64_t bytes = 0;
  auto add = [&](const at::Tensor& t) {
    if (!t.defined() || !t.has_storage()) return;
    if (seen.insert(t.storage().unsafeGetStorageImpl()).second) bytes += static_cast<int64_t>(t.storage().nbytes());
  };
  for (const auto& v : values) {
    if (v.isTensor())
      add(v.toTensor());
    else if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorVector()) add(t);
  }
  return bytes;
}

void RegionRun::capture(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  RecordedOp rec;
  rec.name = qualified_name(schema);
  rec.fqn = trace::current_module_fqn();
  std::string base = check::op_base_name(schema.name());
  ir::RecomputePolicy decision = policy->decide(base, rec.fqn, check::layer_of(rec.fqn), is_random_op(op, *stack));
  ResultKind kind = result_kind(schema);
  rec.saved = (decision == ir::RecomputePolicy::MustSave || decision == ir::RecomputePolicy::PreferSave) &&
              kind != ResultKind::NotStorable;

  c10::impl::ExcludeDispatchKeyGuard exclude(kModeKey);  // also keeps detach/clone below out of the mode
  op.redispatchBoxed(ks.remove(kModeKey), stack);
  if (rec.saved) {
    size_t nret = schema.returns().size();
    for (size_t i = stack->size() - nret; i < stack->size(); ++i) {
      const c10::IValue& v = (*stack)[i];
      // In-place results are buffers that later operators often keep writing (dropout's
      // mask is scaled in place): store a copy. Fresh results are stored as detached
      // aliases, and their version counters reveal any later write.
      auto store = [&](const at::Tensor& t) -> at::Tensor {
        if (!t.defined()) return t;
        at::Tensor s = kind == ResultKind::InPlace ? t.detach().clone() : t.detach();
        rec.versions.push_back(static_cast<int64_t>(s._version()));
        return s;
      };
      if (v.isTensor()) {
        rec.outputs.emplace_back(store(v.toTensor()));
      } else if (v.isTensorList()) {
        c10::List<at::Tensor> list;
        for (const at::Tensor& t : v.toTensorVector()) list.push_back(store(t));
        rec.outputs.emplace_back(list);
      } else {
        rec.outputs.push_back(v);
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(*stats_mutex);
    ++stats->forward_ops;
    if (rec.saved) {
      ++stats->saved_ops;
      ++stats->saved_by_op[base];
      stats->saved_bytes += storage_bytes(rec.outputs);
    }
  }
  records.push_back(std::move(rec));
}

void RegionRun::replay(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  std::string name = qualified_name(schema);
  const std::string& op_fqn = trace::current_module_fqn();
  if (cursor >= records.size())
    throw error("the recomputation ran more operators than the forward (" + std::to_string(records.size()) +
                "); the first extra one is " + name + " in '" + op_fqn + "'");
  RecordedOp& rec = records[cursor];
  if (rec.name != name || rec.fqn != op_fqn)
    throw error("the recomputation diverged from the forward at operator #" + std::to_string(cursor) +
                ": the forward ran " + rec.name + " in '" + rec.fqn + "', the recomputation " + name + " in '" +
                op_fqn + "'");
  ++cursor;
  if (!rec.saved) {
    {
      c10::impl::ExcludeDispatchKeyGuard exclude(kModeKey);
      op.redispatchBoxed(ks.remove(kModeKey), stack);
    }
    std::lock_guard<std::mutex> lock(*stats_mutex);
    ++stats->rerun_ops;
    return;
  }

  size_t vi = 0;
  auto check_version = [&](const at::Tensor& t) {
    if (!t.defined()) return;
    if (static_cast<int64_t>(t._version()) != rec.versions.at(vi++))
      throw error("the stored output of " + rec.name + " (in '" + rec.fqn +
                  "') was modified in place after the forward stored it, so it cannot stand for the operator's "
                  "result; recompute this operator instead");
  };
  for (const auto& v : rec.outputs) {
    if (v.isTensor())
      check_version(v.toTensor());
    else if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorVector()) check_version(t);
  }

  // Through autograd when the result needs a grad_fn; the hook below autograd then hands
  // the stored result back where the kernel would have computed it.
  bool needs_autograd = false;
  if (at::GradMode::is_enabled()) {
    size_t nargs = schema.arguments().size();
    for (size_t i = stack->size() - nargs; i < stack->size(); ++i) {
      const c10::IValue& a = (*stack)[i];
      if (a.isTensor())
        needs_autograd |= a.toTensor().defined() && a.toTensor().requires_grad();
      else if (a.isTensorList())
        for (const at::Tensor& t : a.toTensorVector()) needs_autograd |= t.defined() && t.requires_grad();
      else if (a.isList())
        for (const c10::IValue& e : a.toListRef())
          needs_autograd |= e.isTensor() && e.toTensor().defined() && e.toTensor().requires_grad();
    }
  }
  c10::impl::ExcludeDispatchKeyGuard exclude(kModeKey);
  if (needs_autograd) {
    PendingReplay pending{op.operator_name(), &rec.outputs};
    struct Scope {
      PendingReplay* previous;
      explicit Scope(PendingReplay* p) : previous(tls_pending) { tls_pending = p; }
      ~Scope() { tls_pending = previous; }
    } scope(&pending);
    op.redispatchBoxed(ks.remove(kModeKey).add(kReplayKey), stack);
    if (!pending.consumed)
      throw error("the stored output of " + name +
                  " could not be handed back: the call did not reach the replay "
                  "hook below autograd");
  } else {
    hand_back(op, stack, rec.outputs);
  }
  std::lock_guard<std::mutex> lock(*stats_mutex);
  ++stats->replayed_ops;
}

// Swaps the default generators to the state a region saw at its forward, and back.
class RngStateSwap {
 public:
  explicit RngStateSwap(RegionRun& run) : run_(run) {
    if (!run.preserve_rng_state) return;
    at::Generator cpu = at::detail::getDefaultCPUGenerator();
    {
      std::lock_guard<std::mutex> lock(cpu.mutex());
      cpu_current_ = cpu.get_state();
      cpu.set_state(run.cpu_rng_state);
    }
#ifdef PASSCHECK_WITH_CUDA
    if (run.cuda_device) {
      at::Generator cuda = at::cuda::detail::getDefaultCUDAGenerator(*run.cuda_device);
      std::lock_guard<std::mutex> lock(cuda.mutex());
      cuda_current_ = cuda.get_state();
      cuda.set_state(run.cuda_rng_state);
    }
#endif
  }
  ~RngStateSwap() {
    if (!run_.preserve_rng_state) return;
    at::Generator cpu = at::detail::getDefaultCPUGenerator();
    {
      std::lock_guard<std::mutex> lock(cpu.mutex());
      cpu.set_state(cpu_current_);
    }
#ifdef PASSCHECK_WITH_CUDA
    if (run_.cuda_device) {
      at::Generator cuda = at::cuda::detail::getDefaultCUDAGenerator(*run_.cuda_device);
      std::lock_guard<std::mutex> lock(cuda.mutex());
      cuda.set_state(cuda_current_);
    }
#endif
  }

 private:
  RegionRun& run_;
  at::Tensor cpu_current_;
#ifdef PASSCHECK_WITH_CUDA
  at::Tensor cuda_current_;
#endif
};

void save_rng_state(RegionRun& run, const std::vector<at::Tensor>& inputs) {
  if (!run.preserve_rng_state) return;
  at::Generator cpu = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    run.cpu_rng_state = cpu.get_state();
  }
#ifdef PASSCHECK_WITH_CUDA
  for (const at::Tensor& t : inputs)
    if (t.defined() && t.is_cuda()) {
      run.cuda_device = t.device().index();
      at::Generator cuda = at::cuda::detail::getDefaultCUDAGenerator(*run.cuda_device);
      std::lock_guard<std::mutex> lock(cuda.mutex());
      run.cuda_rng_state = cuda.get_state();
      break;
    }
#else
  (void)inputs;
#endif
}

// A region reading a tensor that requires grad but is neither one of its inputs nor one
// of its declared parameters would lose that gradient silently (the recomputed graph
// reaches it, the checkpoint function has no edge to it). Walk the recomputed graph and
// refuse that.
void check_region_leaves(const RegionRun& run, const std::vector<at::Tensor>& outputs,
                         const std::unordered_set<const c10::TensorImpl*>& allowed) {
  std::vector<torch::autograd::Node*> todo;
  std::unordered_set<torch::autograd::Node*> seen;
  for (const at::Tensor& o : outputs)
    if (o.defined() && o.grad_fn() && seen.insert(o.grad_fn().get()).second) todo.push_back(o.grad_fn().get());
  while (!todo.empty()) {
    torch::autograd::Node* node = todo.back();
    todo.pop_back();
    for (const torch::autograd::Edge& e : node->next_edges()) {
      if (!e.is_valid() || !seen.insert(e.function.get()).second) continue;
      if (auto* acc = dynamic_cast<torch::autograd::AccumulateGrad*>(e.function.get())) {
        if (!allowed.count(acc->variable.unsafeGetTensorImpl()))
          throw run.error("the region reads a tensor that requires grad (" +
                          std::string(c10::toString(acc->variable.scalar_type())) + c10::str(acc->variable.sizes()) +
                          ") but is neither one of its inputs nor one of its parameters (region_parameters); its "
                          "gradient would be lost");
        continue;
      }
      todo.push_back(e.function.get());
    }
  }
}

struct CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                c10::intrusive_ptr<RegionRun> run, at::TensorList inputs,
                                                at::TensorList params) {
    std::vector<at::Tensor> in = inputs.vec();
    run->params = params.vec();
    ctx->save_for_backward(in);
    save_rng_state(*run, in);
    std::vector<at::Tensor> outputs;
    {
      ActiveRegion active(run.get(), /*replaying=*/false);
      outputs = run->forward(in);  // grad mode is off here: no activations are kept
    }
    run->policy = nullptr;
    ctx->saved_data["run"] = c10::IValue::make_capsule(std::move(run));
    return outputs;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto run = c10::static_intrusive_pointer_cast<RegionRun>(ctx->saved_data.at("run").toCapsule());
    if (run->recomputed)
      throw run->error(
          "backward ran through the checkpointed region a second time; its stored outputs were "
          "consumed by the first (retain_graph is not supported)");
    run->recomputed = true;
    std::vector<at::Tensor> saved = ctx->get_saved_variables();
    std::vector<at::Tensor> detached;
    std::vector<at::Tensor> targets;
    std::unordered_set<const c10::TensorImpl*> allowed;
    for (const at::Tensor& t : saved) {
      at::Tensor d = t.defined() ? t.detach() : t;
      if (t.defined() && t.requires_grad()) {
        d.requires_grad_(true);
        targets.push_back(d);
        allowed.insert(d.unsafeGetTensorImpl());
      }
      detached.push_back(d);
    }
    for (const at::Tensor& p : run->params) {
      targets.push_back(p);
      allowed.insert(p.unsafeGetTensorImpl());
    }

    std::vector<at::Tensor> outputs;
    {
      RngStateSwap rng(*run);
      at::AutoGradMode grad_on(true);  // the engine runs backward functions with grad mode off
      ActiveRegion active(run.get(), /*replaying=*/true);
      outputs = run->forward(detached);
    }
    if (run->cursor != run->records.size())
      throw run->error("the recomputation ran " + std::to_string(run->cursor) + " operators, the forward " +
                       std::to_string(run->records.size()) + "; the first missing one is " +
                       run->records[run->cursor].name);
    run->records.clear();
    run->records.shrink_to_fit();
    {
      std::lock_guard<std::mutex> lock(*run->stats_mutex);
      run->stats->recomputed = true;
    }

    std::vector<at::Tensor> roots, root_grads;
    for (size_t i = 0; i < outputs.size() && i < grad_outputs.size(); ++i)
      if (outputs[i].defined() && outputs[i].requires_grad() && grad_outputs[i].defined()) {
        roots.push_back(outputs[i]);
        root_grads.push_back(grad_outputs[i]);
      }
    check_region_leaves(*run, roots, allowed);
    std::vector<at::Tensor> grads;
    if (!roots.empty() && !targets.empty())
      grads = torch::autograd::grad(roots, targets, root_grads, /*retain_graph=*/false, /*create_graph=*/false,
                                    /*allow_unused=*/true);

    // One entry per forward input: the run (not a tensor), each input, each parameter.
    torch::autograd::variable_list result;
    result.emplace_back();
    size_t g = 0;
    for (const at::Tensor& t : saved)
      result.push_back(t.defined() && t.requires_grad() && !grads.empty() ? grads[g++] : at::Tensor());
    for (size_t i = 0; i < run->params.size(); ++i) result.push_back(grads.empty() ? at::Tensor() : grads[g++]);
    return result;
  }
};

}  // namespace

bool is_layer_region(const std::string& fqn) {
  std::optional<int64_t> layer = check::layer_of(fqn);
  return layer && fqn == "layers." + std::to_string(*layer);
}

std::function<std::vector<at::Tensor>(const std::string&)> module_parameters(std::shared_ptr<torch::nn::Module> root) {
  return [root](const std::string& fqn) -> std::vector<at::Tensor> {
    for (const auto& item : root->named_modules("", /*include_self=*/true))
      if (item.key() == fqn) return item.value()->parameters(/*recurse=*/true);
    throw std::invalid_argument("eager checkpoint: the model has no submodule '" + fqn +
                                "', so the parameters of that region cannot be found");
  };
}

std::string describe(const EagerCheckpointConfig& config) {
  std::string out = std::string("policy ") + check::to_string(config.policy);
  if (!config.selectors.empty()) out += ", " + std::to_string(config.selectors.size()) + " selectors";
  if (!config.preserve_rng_state) out += ", generator state NOT restored";
  return out;
}

namespace {
// Total of one RegionStats counter over every region.
int64_t sum_over(const std::vector<RegionStats>& regions, int64_t RegionStats::*field) {
  int64_t n = 0;
  for (const auto& r : regions) n += r.*field;
  return n;
}
}  // namespace

int64_t EagerCheckpointStats::saved_ops() const { return sum_over(regions, &RegionStats::saved_ops); }
int64_t EagerCheckpointStats::saved_bytes() const { return sum_over(regions, &RegionStats::saved_bytes); }
int64_t EagerCheckpointStats::replayed_ops() const { return sum_over(regions, &RegionStats::replayed_ops); }
int64_t EagerCheckpointStats::rerun_ops() const { return sum_over(regions, &RegionStats::rerun_ops); }

struct EagerCheckpointGuard::State {
  EagerCheckpointConfig config;
  check::AcPolicy policy;
  std::shared_ptr<std::mutex> stats_mutex = std::make_shared<std::mutex>();
  std::vector<std::shared_ptr<RegionStats>> regions;

  explicit State(EagerCheckpointConfig c) : config(std::move(c)), policy(config.policy, config.selectors) {}
};

namespace {

std::vector<at::Tensor> checkpoint_call(const std::shared_ptr<EagerCheckpointGuard::State>& state,
                                        const std::string& fqn, const std::vector<at::Tensor>& inputs,
                                        const trace::ModuleForward& forward) {
  // Nested regions run plainly inside an outer one; without autograd there is nothing to save.
  if (tls_active != nullptr || !at::GradMode::is_enabled() || !state->config.is_region(fqn)) return forward(inputs);
  std::vector<at::Tensor> params;
  std::unordered_set<const c10::TensorImpl*> seen;
  for (const at::Tensor& p : state->config.region_parameters(fqn))
    if (p.defined() && p.requires_grad() && seen.insert(p.unsafeGetTensorImpl()).second) params.push_back(p);
  bool any_grad = !params.empty();
  for (const at::Tensor& t : inputs) any_grad |= t.defined() && t.requires_grad();
  if (!any_grad) return forward(inputs);

  ensure_replay_hook();
  auto run = c10::make_intrusive<RegionRun>();
  run->fqn = fqn;
  run->forward = forward;
  run->policy = &state->policy;
  run->stats = std::make_shared<RegionStats>();
  run->stats->fqn = fqn;
  run->stats_mutex = state->stats_mutex;
  run->preserve_rng_state = state->config.preserve_rng_state;
  {
    std::lock_guard<std::mutex> lock(*state->stats_mutex);
    state->regions.push_back(run->stats);
  }
  return CheckpointFunction::apply(std::move(run), at::TensorList(inputs), at::TensorList(params));
}

}  // namespace

EagerCheckpointGuard::EagerCheckpointGuard(EagerCheckpointConfig config)
    : state_(std::make_shared<State>(std::move(config))) {
  if (!state_->config.is_region) throw std::invalid_argument("eager checkpoint: is_region is empty");
  if (!state_->config.region_parameters)
    throw std::invalid_argument(
        "eager checkpoint: region_parameters is empty (use module_parameters(root) for a module tree)");
  // The interceptor holds the state, not the guard: recomputation may run after the guard is gone.
  std::shared_ptr<State> state = state_;
  interceptor_ = std::make_unique<trace::ModuleInterceptorGuard>(
      [state](const std::string& fqn, const std::vector<at::Tensor>& inputs, const trace::ModuleForward& forward) {
        return checkpoint_call(state, fqn, inputs, forward);
      });
}

EagerCheckpointGuard::~EagerCheckpointGuard() = default;

EagerCheckpointStats EagerCheckpointGuard::stats() const {
  EagerCheckpointStats out;
  std::lock_guard<std::mutex> lock(*state_->stats_mutex);
  for (const auto& r : state_->regions) out.regions.push_back(*r);
  return out;
}

// The eager oracle's checkpointing: "none", a policy name, or "auto" (mirror the AC
// passes of the pipeline: sac-tag's policy and selectors, or apply-ac's mode).
std::optional<EagerCheckpointConfig> eager_checkpoint_for(const std::string& choice,
                                                          const std::optional<check::Pipeline>& pipeline,
                                                          const check::PassRegistry& registry) {
  if (choice == "none") return std::nullopt;
  EagerCheckpointConfig config;
  if (choice != "auto") {
    config.policy = check::parse_ac_policy(choice);
    return config;
  }
  if (!pipeline) return std::nullopt;
  for (const check::PassInvocation& pass : pipeline->passes()) {
    check::PassOptions options(registry.get(pass.name).info, pass.options);
    if (pass.name == "sac-tag") {
      config.policy = check::parse_ac_policy(options.get("policy"));
      for (const auto& selector : options.get_list("selectors")) config.selectors.push_back(check::OpSelector::parse(selector));
      return config;
    }
    if (pass.name == "apply-ac") {
      const std::string& option = options.get("option");
      if (options.get("mode") == "selective" && option == "op") {
        config.policy = check::AcPolicyKind::Op;
        return config;
      }
      config.policy = check::AcPolicyKind::Full;
      if (options.get("mode") == "selective") {
        int64_t every = options.get_int("option");
        if (every > 1)
          config.is_region = [every](const std::string& fqn) {
            return is_layer_region(fqn) && *check::layer_of(fqn) % every == 0;
          };
      }
      return config;
    }
  }
  return std::nullopt;
}

}  // namespace passcheck::oracles

TORCH_LIBRARY_IMPL(_, TESTING_ONLY_GenericWrapper, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&passcheck::oracles::mode_fallback>());
}
