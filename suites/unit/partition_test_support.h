// Helpers the partitioner unit tests share: traced debug models (suites/support),
// the per-rank FSDP llama3 graph from the CLI, and running a joint graph against a
// partitioned module bit for bit.
#pragma once

#include "framework/check/compare.h"
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/exec/module_executor.h"
#include "framework/ir/text.h"
#include "oracles/training_driver.h"
#include "passes/partition/partition_passes.h"
#include "suites/support/test_support.h"
#include "suites/support/traced_joint.h"

#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

namespace passcheck::testing {

/// `joint` as a one-part module run through the registered partitioner `pass_name`.
inline ir::Module run_partitioner(const ir::Graph& joint, const std::string& pass_name,
                                  std::map<std::string, std::string> options = {}) {
  ir::Module module = ir::Module::of_graph(joint.clone());
  const auto& pass = check::PassRegistry::global().get(pass_name);
  pass.run_module(module, check::PassOptions(pass.info, options));
  return module;
}

/// Names of the values the forward part saves for later parts, in output order.
inline std::vector<std::string> saved_names(const ir::Module& module) {
  std::vector<std::string> out;
  for (size_t i : module.linked_outputs(0)) out.push_back(module.parts[0].graph->outputs()[i]->name());
  return out;
}

/// Rank 0's graph of llama3 under FSDP on dp=2, as `passcheck trace` prints it.
inline std::unique_ptr<ir::Graph> fsdp_llama3_rank_graph() {
  CommandResult r = run_command(passcheck_binary() + " trace --model llama3 --parallel fsdp --mesh dp=2 2>/dev/null");
  if (r.exit_code != 0) throw std::runtime_error("passcheck trace failed: " + r.output);
  return ir::parse_graph(r.output, "llama3-fsdp-dp2");
}

/// Adds a failure per output of `module` that differs from `joint`'s bit for bit.
inline void expect_module_matches_joint(const ir::Graph& joint, const ir::Module& module,
                                        const std::vector<c10::IValue>& inputs) {
  // Both runs draw the same random numbers (dropout_mlp): the generator restarts.
  exec::Executor joint_exec(joint);
  at::manual_seed(20261123);
  std::vector<c10::IValue> expected = joint_exec.run(inputs);
  exec::ModuleExecutor module_exec(module);
  at::manual_seed(20261123);
  std::vector<c10::IValue> actual = module_exec.run(inputs);
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!expected[i].isTensor()) continue;
    check::TensorComparison c =
        check::compare_bitwise("output " + std::to_string(i), expected[i].toTensor(), actual[i].toTensor());
    EXPECT_TRUE(c.equal) << c.describe();
  }
}


/// A two-matmul MLP's joint graph: mm is banned from recomputation (compute-intensive),
/// relu is cheap to recompute from it; the backward reads relu and the loss.
inline constexpr const char* kReluMlp = R"(graph(param %w : f32[64, 64], arg %x : f32[8, 64]):
  %mm : f32[8, 64] = aten::mm(%x, %w)
  %relu : f32[8, 64] = aten::relu(%mm)
  %mm_1 : f32[8, 64] = aten::mm(%relu, %w)
  %sum : f32[] = aten::sum(%mm_1, None)  #{phase=loss}
  %ones_like : f32[] = aten::ones_like(%sum, None, None, None, None, torch.contiguous_format)  #{phase=backward}
  %expand : f32[8, 64]{0, 0} = aten::expand(%ones_like, [8, 64], False)  #{phase=backward}
  %t : f32[64, 64]{1, 64} = aten::t(%w)  #{phase=backward}
  %mm_2 : f32[8, 64] = aten::mm(%expand, %t)  #{phase=backward}
  %threshold_backward : f32[8, 64] = aten::threshold_backward(%mm_2, %relu, 0)  #{phase=backward}
  %t_1 : f32[64, 8]{1, 64} = aten::t(%relu)  #{phase=backward}
  %mm_3 : f32[64, 64] = aten::mm(%t_1, %expand)  #{phase=backward}
  %t_2 : f32[64, 8]{1, 64} = aten::t(%x)  #{phase=backward}
  %mm_4 : f32[64, 64] = aten::mm(%t_2, %threshold_backward)  #{phase=backward}
  %add : f32[64, 64] = aten::add.Tensor(%mm_3, %mm_4, 1)  #{phase=backward}
  return (%sum, %add))";

}  // namespace passcheck::testing
