// ModuleExecutor (module_executor.h): one graph Executor per part, run in order, with
// the values that cross from one part to a later one held in between and released once
// no later part and no result needs them.
#include "framework/exec/module_executor.h"

#include <ATen/core/Tensor.h>

#include <map>
#include <set>
#include <unordered_map>

namespace passcheck::exec {

ModuleExecutor::ModuleExecutor(const ir::Module& module, ExecutorOptions options)
    : module_(module), options_(options) {
  for (const ir::ModulePart& part : module.parts) {
    ExecutorOptions part_options = options;
    // A capture's working memory is what the pool must hold: measure it.
    if (part.capture) part_options.track_live_bytes = true;
    try {
      executors_.push_back(std::make_unique<Executor>(*part.graph, part_options));
      if (!part.capture) {
        wrappers_.push_back(nullptr);
        continue;
      }
      if (!pool_) pool_ = std::make_shared<CapturePool>(part.capture->backend);
      wrappers_.push_back(std::make_unique<CapturedGraph>(part.name, *executors_.back(), *part.graph, *part.capture, pool_));
    } catch (const ExecError& e) {
      throw ExecError("part '" + part.name + "': " + e.what());
    }
  }
}

ModuleExecutor::~ModuleExecutor() {
  // Wrappers go before the pool they are enrolled in and the executors they run.
  if (pool_ && !pool_->torn_down()) pool_->teardown();
  wrappers_.clear();
}

std::optional<std::string> ModuleExecutor::teardown() {
  if (!pool_) return std::nullopt;
  return pool_->teardown();
}

int64_t ModuleRunStats::copies() const {
  int64_t n = 0;
  for (const CapturedPart& c : captured) n += c.call.copies;
  return n;
}

int64_t ModuleRunStats::copy_bytes() const {
  int64_t n = 0;
  for (const CapturedPart& c : captured) n += c.call.copy_bytes;
  return n;
}

std::vector<c10::IValue> ModuleExecutor::run(std::vector<c10::IValue> inputs) {
  const ir::Module& m = module_;
  if (inputs.size() != m.input_names.size())
    throw ExecError("the module takes " + std::to_string(m.input_names.size()) + " inputs but was given " +
                    std::to_string(inputs.size()));
  std::unordered_map<std::string, size_t> input_index;
  for (size_t i = 0; i < m.input_names.size(); ++i) input_index[m.input_names[i]] = i;

  // The last part that reads each part output; a module result lives to the end.
  std::map<std::pair<size_t, size_t>, size_t> last_reader;
  for (size_t p = 0; p < m.parts.size(); ++p)
    for (const auto& src : m.parts[p].input_sources)
      if (src) last_reader[{src->part, src->output}] = p;
  for (const ir::PartOutput& r : m.outputs) last_reader[{r.part, r.output}] = m.parts.size();

  std::map<std::pair<size_t, size_t>, c10::IValue> held;
  stats_ = ModuleRunStats{};
  for (size_t p = 0; p < m.parts.size(); ++p) {
    const ir::ModulePart& part = m.parts[p];
    std::vector<c10::IValue> part_inputs;
    std::set<const c10::StorageImpl*> passed;
    for (size_t s = 0; s < part.input_sources.size(); ++s) {
      const auto& src = part.input_sources[s];
      c10::IValue value;
      if (src) {
        value = held.at({src->part, src->output});
      } else {
        const std::string& name = part.graph->inputs()[s]->name();
        auto it = input_index.find(name);
        if (it == input_index.end())
          throw ExecError("part '" + part.name + "' input %" + name + " is not a module input");
        value = inputs[it->second];
      }
      if (value.isTensor() && value.toTensor().defined()) passed.insert(value.toTensor().storage().unsafeGetStorageImpl());
      part_inputs.push_back(std::move(value));
    }
    // What stays alive beside this part without being its input: the module's inputs and
    // earlier outputs that later parts or the results still need.
    LiveBytesTracker beside;
    auto count_beside = [&](const c10::IValue& v) {
      if (v.isTensor() && v.toTensor().defined() && !passed.count(v.toTensor().storage().unsafeGetStorageImpl()))
        beside.acquire(v.toTensor());
    };
    for (const c10::IValue& v : inputs) count_beside(v);
    for (const auto& [key, v] : held)
      if (last_reader[key] > p) count_beside(v);
    // Earlier outputs read last by this part are released once it has them.
    for (auto it = held.begin(); it != held.end();)
      it = last_reader[it->first] <= p ? held.erase(it) : std::next(it);

    std::vector<c10::IValue> outs;
    try {
      if (wrappers_[p]) {
        outs = (*wrappers_[p])(std::move(part_inputs));
        stats_.captured.push_back(ModuleRunStats::CapturedPart{part.name, wrappers_[p]->last_call()});
      } else {
        outs = executors_[p]->run(std::move(part_inputs));
      }
    } catch (const ReplayHazard&) {
      throw;  // names its part already
    } catch (const ExecError& e) {
      throw ExecError("part '" + part.name + "': " + e.what());
    }
    const ExecutionStats& st = executors_[p]->last_stats();
    stats_.parts.push_back(st);
    stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, st.peak_live_bytes + beside.current());
    for (size_t o = 0; o < outs.size(); ++o) {
      auto it = last_reader.find({p, o});
      if (it != last_reader.end() && it->second > p) held[{p, o}] = std::move(outs[o]);
    }
    stats_.linked_bytes += m.linked_bytes(p);
  }
  if (pool_) {
    stats_.pool_bytes = pool_->pool_bytes();
    stats_.unshared_pool_bytes = pool_->unshared_pool_bytes();
    stats_.kept_input_bytes = pool_->kept_input_bytes();
  }
  std::vector<c10::IValue> results;
  for (const ir::PartOutput& r : m.outputs) results.push_back(held.at({r.part, r.output}));
  return results;
}

}  // namespace passcheck::exec
