// Per-rank oracles of parallelized subjects (distributed_driver.h).
#include "oracles/distributed_driver.h"

#include "framework/dist/collectives.h"
#include "oracles/models/parallelize.h"
#include "oracles/placements.h"

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/utils.h>

#include <cstdio>
#include <stdexcept>

namespace passcheck::oracles {

std::string CollectiveCounts::str() const {
  return "all_gather " + std::to_string(all_gather) + ", reduce_scatter " + std::to_string(reduce_scatter) +
         ", all_reduce " + std::to_string(all_reduce) + ", all_to_all " + std::to_string(all_to_all) +
         ", wait_tensor " + std::to_string(wait);
}

bool CollectiveCounts::operator==(const CollectiveCounts& o) const {
  return all_gather == o.all_gather && reduce_scatter == o.reduce_scatter && all_reduce == o.all_reduce &&
         all_to_all == o.all_to_all && wait == o.wait;
}

CollectiveCounts count_collectives(const ir::Graph& graph) {
  CollectiveCounts c;
  for (const ir::Node* n : graph.nodes()) {
    const std::string& op = n->op();
    if (op == "_c10d_functional::all_gather_into_tensor") ++c.all_gather;
    else if (op == "_c10d_functional::reduce_scatter_tensor") ++c.reduce_scatter;
    else if (op == "_c10d_functional::all_reduce") ++c.all_reduce;
    else if (op == "_c10d_functional::all_to_all_single") ++c.all_to_all;
    else if (op == "_c10d_functional::wait_tensor") ++c.wait;
  }
  return c;
}

namespace {

models::ParallelPlan plan_of(const models::SubjectOptions& subject, const std::string& model) {
  std::optional<models::ParallelPlan> plan = models::resolve_plan(model, subject.parallel, {"fsdp", "fsdp2d", "tp", "ep"});
  if (!plan) throw std::invalid_argument("the distributed driver needs a parallel plan (SubjectOptions::parallel)");
  return *plan;
}

void barrier(const models::ParallelPlan& plan) {
  torch::NoGradGuard no_grad;
  dist::wait_tensor(dist::all_reduce(at::zeros({1}), "sum", plan.world_group()));
}

// Eager training of `subject` for `steps` steps, as the driver's eager path does it.
void train_eagerly(models::TrainingSubject& subject, const DriverOptions& options) {
  auto optimizer = make_optimizer(options.optimizer, optimizer_parameters(*subject.module()), options.learning_rate);
  for (int step = 1; step <= options.steps; ++step) {
    at::manual_seed(options.rng_seed + static_cast<uint64_t>(step));
    std::vector<at::Tensor> params = assign_gradients(*subject.module(), eager_step(subject, subject.batch(step)));
    subject.before_optimizer_step();
    optimizer->step();
    drop_gradients(params);
  }
}

}  // namespace

std::shared_ptr<ir::Graph> trace_rank_graph(const std::string& model, models::SubjectOptions options,
                                            const dist::DeviceMesh& mesh, int64_t rank) {
  mesh.coordinates(rank);  // a rank outside the mesh is an error naming it
  dist::MetaOnlyCommunicator communicator(rank, mesh.world_size());
  dist::RankScope scope(dist::RankContext{std::make_shared<const dist::DeviceMesh>(mesh), rank, &communicator});
  options.parallel.mesh = mesh.str();
  options.device = c10::Device(c10::DeviceType::Meta);
  auto subject = models::make_subject(model, options);
  trace::TracedProgram program = trace_subject(*subject, subject->batch(0), /*on_meta=*/false);
  std::shared_ptr<ir::Graph> graph = program.shared_graph();
  record_placements(*graph, mesh, rank, program.state_fqns(), program.num_parameters(), subject->placements());
  return graph;
}

RankDriverReport run_rank_traced_vs_eager(DriverOptions options) {
  const dist::RankContext& rank = dist::current_rank();
  models::ParallelPlan plan = plan_of(options.subject, options.model);
  options.trace_on_meta = true;
  RankDriverReport report;
  report.rank = rank.rank;
  auto transform = options.transform;
  // The mesh, rank and declared placements go on the graph before any pass sees it:
  // collective passes read group sizes from the mesh, placement passes the placements.
  models::SubjectOptions on_meta = options.subject;
  on_meta.device = c10::Device(c10::DeviceType::Meta);
  const auto placements = models::make_subject(options.model, on_meta)->placements();
  options.transform = [&](trace::TracedProgram& program) {
    record_placements(program.mutable_graph(), *rank.mesh, rank.rank, program.state_fqns(), program.num_parameters(),
                      placements);
    if (transform) transform(program);
    report.collectives = count_collectives(program.graph());
    for (const ir::Node* n : program.graph().nodes())
      if (n->op().rfind("_c10d_functional::", 0) == 0 && n->meta().module_fqn.empty()) ++report.collectives_without_module;
    barrier(plan);
  };
  report.driver = run_traced_vs_eager(options);
  return report;
}

bool ShardedComparison::ok() const {
  if (parameters.empty()) return false;
  for (const auto& p : parameters)
    if (!p.same_shape || !(p.relative <= tolerance)) return false;
  return true;
}

std::string ShardedComparison::format() const {
  std::string out;
  char line[256];
  for (const auto& p : parameters) {
    std::snprintf(line, sizeof line, "  %-40s %s max ULP %12llu  relative %.3g\n", p.fqn.c_str(),
                  p.same_shape ? "" : "SHAPE DIFFERS", static_cast<unsigned long long>(p.max_ulp), p.relative);
    out += line;
  }
  std::snprintf(line, sizeof line, "sharded vs single rank: max ULP %llu, max relative %.3g, tolerance %.3g: %s\n",
                static_cast<unsigned long long>(max_ulp), max_relative, tolerance,
                ok() ? "WITHIN TOLERANCE" : "OUT OF TOLERANCE");
  return out + line;
}

ShardedComparison compare_sharded_with_single_rank(const DriverOptions& options, double tolerance) {
  const dist::RankContext& rank = dist::current_rank();
  models::ParallelPlan plan = plan_of(options.subject, options.model);
  ShardedComparison result;
  result.tolerance = tolerance;

  auto sharded = models::make_subject(options.model, options.subject);
  train_eagerly(*sharded, options);
  std::vector<std::pair<std::string, at::Tensor>> full;
  for (const auto& item : sharded->module()->named_parameters(true))
    full.emplace_back(item.key(), models::gather_full_parameter(item.key(), item.value(), plan));
  if (rank.rank != 0) return result;

  models::SubjectOptions single = options.subject;
  single.parallel = models::ParallelOptions{};
  int64_t per_rank = options.subject.batch_size;
  // The model's default per-rank batch: the rows of the sharded subject's own batch.
  if (per_rank == 0) per_rank = sharded->batch(0).at(0).toTensor().size(0);
  single.batch_size = per_rank * plan.batch_slices();
  if (plan.ep) single.moe_capacity_groups = plan.ep_size;
  // The single-rank model must not see the rank's collectives: it runs on rank 0 alone.
  auto reference = models::make_subject(options.model, single);
  train_eagerly(*reference, options);
  size_t i = 0;
  for (const auto& item : reference->module()->named_parameters(true)) {
    ShardedComparison::Parameter p;
    p.fqn = item.key();
    const at::Tensor& got = full.at(i++).second;
    p.same_shape = got.sizes() == item.value().sizes();
    if (p.same_shape) {
      p.max_ulp = check::compare_bitwise(p.fqn, item.value(), got).max_ulp;
      at::Tensor expected = item.value().detach().to(at::kDouble);
      double scale = expected.abs().max().item<double>();
      double diff = (got.to(at::kDouble) - expected).abs().max().item<double>();
      p.relative = scale > 0 ? diff / scale : diff;
    }
    result.max_ulp = std::max(result.max_ulp, p.max_ulp);
    result.max_relative = std::max(result.max_relative, p.relative);
    result.parameters.push_back(p);
  }
  return result;
}

}  // namespace passcheck::oracles
