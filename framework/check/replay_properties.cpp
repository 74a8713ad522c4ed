// The replay property of modules with captured parts (replay_properties.h).
#include "framework/check/replay_properties.h"

#include "framework/check/compare.h"
#include "framework/exec/captured_graph.h"
#include "framework/exec/executor.h"
#include "framework/exec/module_executor.h"

#include <ATen/ATen.h>

#include <optional>

namespace passcheck::check {

namespace {

constexpr uint64_t kReplaySeed = 20261123;
constexpr int kCalls = 5;
constexpr int kMoveBeforeCall = 4;  // a replay: calls 1 and 2 are warm-up and capture

bool is_state(const ir::Value& input) { return input.role() != ir::InputRole::Argument; }

// The tensor's values rotated by `k` places in a new tensor of the same sizes and strides:
// other values, the same value domain (token ids stay valid ids), a new address.
at::Tensor rotated_copy(const at::Tensor& t, int64_t k) {
  at::Tensor out = at::empty_strided(t.sizes(), t.strides(), t.options());
  if (!out.is_non_overlapping_and_dense() || t.numel() < 2) return t.clone();
  at::Tensor flat = t.contiguous().view(-1);
  out.copy_(flat.roll(k).view(t.sizes()));
  return out;
}

// The in-place update an optimizer step stands for: same storage, other values.
void update_in_place(const at::Tensor& t) {
  if (t.numel() < 2 || !t.is_non_overlapping_and_dense()) return;
  t.copy_(t.contiguous().view(-1).roll(1).view(t.sizes()));
}

struct Path {
  std::vector<c10::IValue> state;  // per graph input: the kept tensor for state, else unused
};

Path clone_state(const ir::Graph& graph, const std::vector<c10::IValue>& inputs) {
  Path p;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const c10::IValue& v = inputs[i];
    p.state.push_back(is_state(*graph.inputs()[i]) && v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
  }
  return p;
}

std::vector<c10::IValue> call_inputs(const ir::Graph& graph, const Path& path, const std::vector<c10::IValue>& inputs,
                                     int64_t rotation) {
  std::vector<c10::IValue> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (is_state(*graph.inputs()[i]) || !inputs[i].isTensor()) out.push_back(path.state[i]);
    else out.push_back(rotated_copy(inputs[i].toTensor(), rotation));
  }
  return out;
}

void update_state(const ir::Graph& graph, Path& path) {
  for (size_t i = 0; i < path.state.size(); ++i)
    if (is_state(*graph.inputs()[i]) && path.state[i].isTensor()) update_in_place(path.state[i].toTensor());
}

// Differences between the graph's and the module's outputs and state after one call.
std::vector<std::string> differences(const ir::Graph& graph, const std::vector<c10::IValue>& expected,
                                     const std::vector<c10::IValue>& actual, const Path& expected_state,
                                     const Path& actual_state) {
  std::vector<std::string> out;
  if (expected.size() != actual.size()) {
    out.push_back("the module returns " + std::to_string(actual.size()) + " results instead of " +
                  std::to_string(expected.size()));
    return out;
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!expected[i].isTensor() || !actual[i].isTensor()) continue;
    TensorComparison c = compare_bitwise("output " + std::to_string(i) + " %" + graph.outputs()[i]->name(),
                                         expected[i].toTensor(), actual[i].toTensor());
    if (!c.equal) out.push_back(c.describe());
  }
  for (size_t i = 0; i < expected_state.state.size(); ++i) {
    if (!is_state(*graph.inputs()[i]) || !expected_state.state[i].isTensor()) continue;
    TensorComparison c = compare_bitwise("state %" + graph.inputs()[i]->name(), expected_state.state[i].toTensor(),
                                         actual_state.state[i].toTensor());
    if (!c.equal) out.push_back(c.describe());
  }
  return out;
}

// A graph input that some captured part holds static, read straight from the module's
// inputs: re-allocating it must make that part refuse to replay.
std::optional<size_t> static_state_input(const ir::Graph& graph, const ir::Module& module) {
  for (const ir::ModulePart& part : module.parts) {
    if (!part.capture || !part.capture->check_static_addresses) continue;
    for (size_t s : part.capture->static_inputs) {
      if (part.input_sources.at(s)) continue;
      const std::string& name = part.graph->inputs()[s]->name();
      for (size_t i = 0; i < graph.inputs().size(); ++i)
        if (graph.inputs()[i]->name() == name && is_state(*graph.inputs()[i])) return i;
    }
  }
  return std::nullopt;
}

exec::ExecutorOptions checked_options() {
  exec::ExecutorOptions options;
  options.check_metadata = true;
  return options;
}

}  // namespace

bool has_captured_parts(const ir::Module& module) {
  for (const ir::ModulePart& p : module.parts)
    if (p.capture) return true;
  return false;
}

std::vector<std::string> check_captured_replays(const ir::Graph& graph, const ir::Module& module,
                                                const std::vector<c10::IValue>& inputs, const std::string& pipeline) {
  std::vector<std::string> violations;
  const std::optional<size_t> moved = static_state_input(graph, module);
  // Sequence 1 runs every call; sequence 2 re-allocates a static input before a replay.
  for (int sequence = 1; sequence <= (moved ? 2 : 1); ++sequence) {
    exec::Executor expected_run(graph, checked_options());
    exec::ModuleExecutor actual_run(module, checked_options());
    Path expected_state = clone_state(graph, inputs), actual_state = clone_state(graph, inputs);
    const int calls = sequence == 1 ? kCalls : kMoveBeforeCall;
    for (int call = 1; call <= calls; ++call) {
      const std::string where = pipeline + ", call " + std::to_string(call) + " of the captured module";
      if (call > 1) {
        update_state(graph, expected_state);
        update_state(graph, actual_state);
      }
      const bool moving = sequence == 2 && call == kMoveBeforeCall;
      if (moving) {
        // Re-allocated with the same values, then updated: the old storage is now stale.
        actual_state.state[*moved] = actual_state.state[*moved].toTensor().clone();
        update_in_place(expected_state.state[*moved].toTensor());
        update_in_place(actual_state.state[*moved].toTensor());
      }
      int64_t rotation = call - 1;
      std::vector<c10::IValue> expected;
      try {
        at::manual_seed(kReplaySeed + static_cast<uint64_t>(call));
        expected = expected_run.run(call_inputs(graph, expected_state, inputs, rotation));
      } catch (const std::exception&) {
        // Rotated arguments the graph cannot take (values that must stay in order): use
        // new tensors with the original values.
        rotation = 0;
        at::manual_seed(kReplaySeed + static_cast<uint64_t>(call));
        expected = expected_run.run(call_inputs(graph, expected_state, inputs, rotation));
      }
      std::vector<c10::IValue> actual;
      try {
        at::manual_seed(kReplaySeed + static_cast<uint64_t>(call));
        actual = actual_run.run(call_inputs(graph, actual_state, inputs, rotation));
      } catch (const exec::ReplayHazard& hazard) {
        if (!moving) violations.push_back(where + " was refused although every static input kept its address: " + hazard.what());
        break;
      } catch (const std::exception& e) {
        violations.push_back(where + " failed: " + e.what());
        break;
      }
      std::vector<std::string> diffs = differences(graph, expected, actual, expected_state, actual_state);
      if (moving) {
        violations.push_back(where + ": static input %" + graph.inputs()[*moved]->name() +
                             " was re-allocated before this call and the captured graph replayed without refusing" +
                             (diffs.empty() ? std::string(" (results equal by chance)")
                                            : " on its old storage: " + diffs.front()));
        break;
      }
      if (!diffs.empty()) {
        violations.push_back(where + " differs from the graph: " + diffs.front() +
                             (diffs.size() > 1 ? " (and " + std::to_string(diffs.size() - 1) + " more)" : ""));
        break;
      }
    }
  }
  return violations;
}

}  // namespace passcheck::check
