// The distributed situations (distributed_situations.h).
#include "generators/distributed_situations.h"

#include "framework/check/distributed_properties.h"
#include "framework/check/pipeline.h"
#include "framework/ir/text.h"

namespace passcheck::gen {

const char* fsdp_joint_graph() {
  return R"(mesh dp=4 rank 0
graph(param %w : f32[4, 8] placed(S(0)), arg %x : f32[2, 8], arg %grad : f32[2, 16]):
  %ag : f32[16, 8] = _c10d_functional::all_gather_into_tensor(%w, 4, "dp")
  %wait : f32[16, 8] = _c10d_functional::wait_tensor(%ag)
  %t : f32[8, 16]{1, 8} = aten::t(%wait)
  %mm : f32[2, 16] = aten::mm(%x, %t)
  %t_1 : f32[16, 8] = aten::t(%t)  #{phase=backward}
  %mm_1 : f32[2, 8] = aten::mm(%grad, %t_1)  #{phase=backward}
  return (%mm, %mm_1)
)";
}

const std::vector<DistributedSituation>& distributed_situations() {
  static const std::vector<DistributedSituation> situations = {
      // ag/wait/t tagged, the chain stops at mm (two inputs); remat regathers in the backward.
      {"fsdp-joint", fsdp_joint_graph(),
       "force-recompute-fsdp-all-gather,remat"},
      // A cast before the gather; the same graph saved instead of recomputed.
      {"fsdp-cast", R"(mesh dp=4 rank 0
graph(param %w : f32[4, 8] placed(S(0)), arg %x : bf16[2, 16]):
  %cast : bf16[4, 8] = aten::_to_copy(%w, torch.bfloat16, None, None, None, False, None)
  %ag : bf16[16, 8] = _c10d_functional::all_gather_into_tensor(%cast, 4, "dp")
  %wait : bf16[16, 8] = _c10d_functional::wait_tensor(%ag)
  %mm : bf16[2, 8] = aten::mm(%x, %wait)
  return (%mm)
)",
       "force-recompute-fsdp-all-gather"},
      {"fsdp-force-save", R"(mesh dp=4 rank 0
graph(param %w : f32[4, 8] placed(S(0)), arg %x : f32[2, 8]):
  %ag : f32[16, 8] = _c10d_functional::all_gather_into_tensor(%w, 4, "dp")
  %wait : f32[16, 8] = _c10d_functional::wait_tensor(%ag)
  %permute : f32[8, 16]{1, 8} = aten::permute(%wait, [1, 0])
  %mm : f32[2, 16] = aten::mm(%x, %permute)
  return (%mm)
)",
       "force-recompute-fsdp-all-gather{reshard-after-forward=false}"},
      // A gather of a computed value and a backward unshard: both left alone.
      {"fsdp-not-unshards", R"(mesh dp=4 rank 0
graph(param %w : f32[4, 8] placed(S(0)), arg %a : f32[4, 4]):
  %pre : f32[4, 8] = aten::mm(%a, %w)
  %ag : f32[16, 8] = _c10d_functional::all_gather_into_tensor(%pre, 4, "dp")
  %wait : f32[16, 8] = _c10d_functional::wait_tensor(%ag)
  %ag_1 : f32[16, 8] = _c10d_functional::all_gather_into_tensor(%w, 4, "dp")  #{phase=backward}
  %wait_1 : f32[16, 8] = _c10d_functional::wait_tensor(%ag_1)  #{phase=backward}
  return (%wait, %wait_1)
)",
       "force-recompute-fsdp-all-gather"},
      // Every alias case: rewired and erased, equal placements, none recorded, consumers
      // without wants, wanting the alias's placement or a third one.
      {"alias-round-trips", R"(mesh dp=32, tp=8 rank 0
graph(arg %x : f32[4, 8] placed(S(0), S(0)), arg %y : f32[4, 8]):
  %a : f32[4, 8] placed(S(0), R) = aten::alias(%x)
  %keep : f32[4, 8] = aten::neg(%a)  #{wants=[(S(0), R)]}
  %third : f32[4, 8] = aten::relu(%a)  #{wants=[(R, R)]}
  %plain : f32[4, 8] = aten::abs(%a)
  %back : f32[4, 8] = aten::add.Tensor(%a, %a, 1)  #{wants=[(S(0), S(0)), (S(0), S(0))]}
  %b : f32[4, 8] placed(S(0), R) = aten::alias(%x)
  %back_1 : f32[4, 8] = aten::neg(%b)  #{wants=[(S(0), S(0))]}
  %c : f32[4, 8] placed(S(0), S(0)) = aten::alias(%x)
  %d : f32[4, 8] = aten::alias(%y)
  return (%keep, %third, %plain, %back, %back_1, %c, %d)
)",
       "eliminate-alias-round-trips"},
      // Gathers moved up (one behind a random draw stays), reduce_scatters bucketed (one
      // whose wait is read before the bucket stays).
      {"prefetch", R"(mesh dp=2 rank 0
graph(param %w : f32[2, 4] placed(S(0)), param %v : f32[2, 4] placed(S(0)), arg %x : f32[4, 4]):
  %mm : f32[4, 4] = aten::mm(%x, %x)
  %ag : f32[4, 4] = _c10d_functional::all_gather_into_tensor(%w, 2, "dp")
  %wait : f32[4, 4] = _c10d_functional::wait_tensor(%ag)
  %noisy : f32[2, 4] = aten::bernoulli(%v, None)
  %ag_1 : f32[4, 4] = _c10d_functional::all_gather_into_tensor(%noisy, 2, "dp")
  %wait_1 : f32[4, 4] = _c10d_functional::wait_tensor(%ag_1)
  %mm_1 : f32[4, 4] = aten::mm(%mm, %wait)
  %mm_2 : f32[4, 4] = aten::mm(%mm_1, %wait_1)
  %rs : f32[2, 4] = _c10d_functional::reduce_scatter_tensor(%mm_2, "sum", 2, "dp")  #{phase=backward}
  %wait_2 : f32[2, 4] = _c10d_functional::wait_tensor(%rs)  #{phase=backward}
  %rs_1 : f32[2, 4] = _c10d_functional::reduce_scatter_tensor(%mm_1, "sum", 2, "dp")  #{phase=backward}
  %wait_3 : f32[2, 4] = _c10d_functional::wait_tensor(%rs_1)  #{phase=backward}
  %early : f32[2, 4] = aten::neg(%wait_3)  #{phase=backward}
  %mm_3 : f32[4, 4] = aten::mm(%mm_2, %x)  #{phase=backward}
  %rs_2 : f32[2, 4] = _c10d_functional::reduce_scatter_tensor(%mm_3, "sum", 2, "dp")  #{phase=backward}
  %wait_4 : f32[2, 4] = _c10d_functional::wait_tensor(%rs_2)  #{phase=backward}
  return (%wait_2, %early, %wait_4)
)",
       "prefetch-fsdp-all-gathers{bucket-reduce-scatters=3}"},
      // A chunk behind its recorded reduce_scatter, and one recorded behind a value that
      // is no reduce_scatter.
      {"cap-chunks", R"(mesh dp=2 rank 0
graph(arg %x : f32[4, 4], arg %y : f32[4, 4]):
  %mm : f32[4, 4] = aten::mm(%x, %x)  #{custom={"schedule_rank": "0", "schedule_rs_before": ""}}
  %mm_1 : f32[4, 4] = aten::mm(%mm, %x)  #{custom={"schedule_rank": "1", "schedule_rs_before": ""}}
  %mm_2 : f32[4, 4] = aten::mm(%y, %y)  #{custom={"schedule_rank": "2", "schedule_rs_before": "rs"}}
  %mm_3 : f32[4, 4] = aten::mm(%mm_2, %y)  #{custom={"schedule_rank": "3", "schedule_rs_before": "mm"}}
  %rs : f32[2, 4] = _c10d_functional::reduce_scatter_tensor(%mm_1, "sum", 2, "dp")
  %wait : f32[2, 4] = _c10d_functional::wait_tensor(%rs)
  return (%wait, %mm_3)
)",
       "cap-compute-batch-size{max-consecutive=2}"},
      // Recorded ranks against the data chain: a cycle, so nothing moves.
      {"cap-cycle", R"(graph(arg %x : f32[4, 4]):
  %mm : f32[4, 4] = aten::mm(%x, %x)  #{custom={"schedule_rank": "2", "schedule_rs_before": ""}}
  %mm_1 : f32[4, 4] = aten::mm(%mm, %x)  #{custom={"schedule_rank": "1", "schedule_rs_before": ""}}
  %mm_2 : f32[4, 4] = aten::mm(%mm_1, %x)  #{custom={"schedule_rank": "0", "schedule_rs_before": ""}}
  return (%mm_2)
)",
       "cap-compute-batch-size{max-consecutive=1}"},
      // A collective whose result nobody reads, waited: every rank must still run both.
      {"unused-collective", R"(mesh dp=2 rank 0
graph(arg %x : f32[4, 4]):
  %ar : f32[4, 4] = _c10d_functional::all_reduce(%x, "sum", "dp")
  %wait : f32[4, 4] = _c10d_functional::wait_tensor(%ar)
  %neg : f32[4, 4] = aten::neg(%x)
  return (%neg)
)",
       "dce"},
      // Nothing recorded: the current order.
      {"cap-unrecorded", R"(graph(arg %x : f32[4, 4]):
  %mm : f32[4, 4] = aten::mm(%x, %x)
  %mm_1 : f32[4, 4] = aten::mm(%x, %mm)
  return (%mm_1)
)",
       "cap-compute-batch-size{max-consecutive=1}"},
  };
  return situations;
}

std::vector<std::string> distributed_situation_violations(const check::PassRegistry& registry) {
  std::vector<std::string> violations;
  for (const DistributedSituation& s : distributed_situations()) {
    try {
      std::unique_ptr<ir::Graph> graph = ir::parse_graph(s.text, "<" + s.name + ">");
      std::unique_ptr<ir::Graph> before = graph->clone();
      check::Pipeline::parse(s.pipeline, registry).run(*graph);
      std::vector<std::string> found = check::check_redirected_reads_wanted(*before, *graph);
      if (s.pipeline.find("remat") != std::string::npos)
        for (std::string& v : check::check_gathered_parameters_not_saved(*graph)) found.push_back(std::move(v));
      for (const std::string& v : found) violations.push_back(s.name + ": " + v);
    } catch (const std::exception& e) {
      violations.push_back(s.name + ": " + e.what());
    }
  }
  return violations;
}

}  // namespace passcheck::gen
