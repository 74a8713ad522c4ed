// See rank_check.h.
#include "workflows/distributed/rank_check.h"
#include "workflows/bench/timing.h"

#include "framework/check/pipeline.h"
#include "framework/dist/communicator.h"
#include "framework/dist/sim.h"
#include "framework/io/files.h"
#include "framework/ir/module.h"
#include "oracles/models/subject.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace passcheck::distributed {

using bench::Clock;
using bench::median;
using bench::ms_since;


RankCheck check_rank(const RankCheckOptions& given, int64_t rank) {
  RankCheck result;
  result.rank = rank;
  oracles::DriverOptions options = given.driver;
  std::optional<check::Pipeline> pipeline;
  if (!given.pipeline.empty()) pipeline = check::Pipeline::parse(given.pipeline);
  const std::string& dump_dir = given.dump_dir;
  options.transform = [&](trace::TracedProgram& program) {
    ir::Graph& graph = program.mutable_graph();
    result.traced_nodes = graph.num_nodes();
    auto dump = [&](const std::string& stage, const ir::Graph& g) {
      if (dump_dir.empty()) return;
      io::write_file(dump_dir + "/rank" + std::to_string(rank) + "-" + stage + ".graph", g.print(), "rank graph");
    };
    dump("traced", graph);
    if (pipeline)
      oracles::apply_pipeline(program, *pipeline, {}, [&](const ir::Module& module) {
        result.saved_bytes = module.parts.size() > 1 ? module.linked_bytes(0) : 0;
        result.nodes_after = module.num_nodes();
        for (const ir::ModulePart& part : module.parts) {
          oracles::CollectiveCounts c = oracles::count_collectives(*part.graph);
          result.collectives_after.all_gather += c.all_gather;
          result.collectives_after.reduce_scatter += c.reduce_scatter;
          result.collectives_after.all_reduce += c.all_reduce;
          result.collectives_after.all_to_all += c.all_to_all;
          result.collectives_after.wait += c.wait;
        }
        if (!dump_dir.empty())
          io::write_file(dump_dir + "/rank" + std::to_string(rank) + "-after-pipeline.module", module.print(),
                         "rank module");
      });
    if (pipeline && !program.module()) {
      dump("after-pipeline", graph);
      result.nodes_after = graph.num_nodes();
      result.collectives_after = oracles::count_collectives(graph);
    }
  };
  oracles::RankDriverReport rank_report = oracles::run_rank_traced_vs_eager(options);
  result.report = std::move(rank_report.driver);
  result.collectives = rank_report.collectives;
  if (given.compare_single_rank) {
    oracles::DriverOptions plain = options;
    plain.transform = nullptr;
    result.single_rank = oracles::compare_sharded_with_single_rank(plain);
  }
  result.ran = true;
  return result;
}

RankBench bench_rank_steps(const std::string& model, const models::SubjectOptions& subject_options, int warmup,
                           int repeats) {
  RankBench out;
  auto subject = models::make_subject(model, subject_options);
  std::vector<c10::IValue> batch = subject->batch(0);
  std::vector<double> traces, steps;
  for (int i = 0; i < 3; ++i) {
    auto t0 = Clock::now();
    trace::TracedProgram p = oracles::trace_subject(*subject, batch, /*on_meta=*/true);
    traces.push_back(ms_since(t0));
  }
  trace::TracedProgram program = oracles::trace_subject(*subject, batch, /*on_meta=*/true);
  out.nodes = program.graph().num_nodes();
  for (int i = 0; i < warmup + repeats; ++i) {
    auto t0 = Clock::now();
    c10::IValue result = program(batch);
    if (auto* rank = dist::current_rank_or_null()) rank->communicator->wait_all();
    if (i >= warmup) steps.push_back(ms_since(t0));
  }
  out.trace_meta_ms = median(traces);
  out.step_ms = median(steps);
  return out;
}

}  // namespace passcheck::distributed
