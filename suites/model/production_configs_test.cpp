// The production configurations (oracles/models/configs.h) on the meta device: their
// parameter counts (a check of the configuration table against the published sizes), the
// shapes of their projections, a meta trace at two blocks of the production dims, the
// shard shapes of one rank under FSDP over 128 ranks and under FSDP x TP, and the
// refusal to build a production shape on a real device. Full depths are never traced
// here (docs/performance.md measures them).
#include "framework/dist/communicator.h"
#include "framework/dist/mesh.h"
#include "framework/check/verifier.h"
#include "oracles/distributed_driver.h"
#include "oracles/models/configs.h"
#include "oracles/training_driver.h"

#include <gtest/gtest.h>

#include <torch/nn/module.h>

#include <map>
#include <tuple>

namespace passcheck::testing {
namespace {

models::SubjectOptions on_meta(const std::string& config, int64_t n_layers = 0) {
  models::SubjectOptions o;
  o.device = c10::Device(c10::DeviceType::Meta);
  o.config = config;
  o.n_layers = n_layers;
  return o;
}

std::map<std::string, std::vector<int64_t>> parameter_shapes(const models::TrainingSubject& subject) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& item : subject.module()->named_parameters(/*recurse=*/true)) {
    out[item.key()] = item.value().sizes().vec();
    EXPECT_TRUE(item.value().device().is_meta()) << item.key();
  }
  for (const auto& item : subject.module()->named_buffers(/*recurse=*/true))
    EXPECT_TRUE(item.value().device().is_meta()) << item.key();
  return out;
}

TEST(ProductionConfigs, ParameterCountsMatchThePublishedSizes) {
  const std::vector<std::tuple<std::string, std::string, double>> published = {
      {"llama3", "8b", 8.03e9},      {"llama3", "70b", 70.6e9}, {"llama3", "405b", 405.9e9},
      {"deepseek_v3", "16b", 15.7e9}, {"qwen3", "32b", 32.8e9},
  };
  ASSERT_EQ(models::production_configs().size(), published.size());
  for (const auto& [model, config, expected] : published) {
    const double count = static_cast<double>(models::parameter_count(model, on_meta(config)));
    EXPECT_NEAR(count / expected, 1.0, 0.01) << model << ":" << config << " has " << count << " parameters";
  }
}

TEST(ProductionConfigs, ConfigNamesAndUnknownOnes) {
  EXPECT_EQ(models::config_names("llama3"), (std::vector<std::string>{"debug", "8b", "70b", "405b"}));
  EXPECT_EQ(models::config_names("mlp"), (std::vector<std::string>{"debug"}));
  try {
    models::make_subject("llama3", on_meta("9b"));
    FAIL() << "an unknown configuration was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown configuration '9b' of model 'llama3' (known: debug, 8b, 70b, 405b)"),
              std::string::npos)
        << e.what();
  }
}

TEST(ProductionConfigs, Llama3405bHasGroupedQueryProjectionsOfItsDims) {
  auto subject = models::make_subject("llama3", on_meta("405b", 2));
  auto shapes = parameter_shapes(*subject);
  // q: 128 heads x 128, k and v: 8 kv heads x 128 each, fused in that order.
  EXPECT_EQ(shapes.at("layers.0.attention.wqkv.weight"), (std::vector<int64_t>{16384 + 1024 + 1024, 16384}));
  EXPECT_EQ(shapes.at("layers.1.attention.wo.weight"), (std::vector<int64_t>{16384, 16384}));
  EXPECT_EQ(shapes.at("layers.0.feed_forward.w1.weight"), (std::vector<int64_t>{53248, 16384}));
  EXPECT_EQ(shapes.at("tok_embeddings.weight"), (std::vector<int64_t>{128256, 16384}));
  EXPECT_EQ(shapes.count("layers.2.attention.wqkv.weight"), 0u);
}

TEST(ProductionConfigs, EveryConfigTracesOnMetaAtTwoBlocks) {
  for (const models::ModelConfigInfo& c : models::production_configs()) {
    models::SubjectOptions options = on_meta(c.name, 2);
    options.seq_len = 256;  // the production dims; a shorter sequence keeps the test quick
    auto subject = models::make_subject(c.model, options);
    parameter_shapes(*subject);
    trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), /*on_meta=*/false);
    EXPECT_GT(program.graph().num_nodes(), 100u) << c.model << ":" << c.name;
    EXPECT_TRUE(check::verify_graph(program.graph()).empty()) << c.model << ":" << c.name;
  }
  // qwen3 32b's q/k norms and GQA projections.
  auto qwen = models::make_subject("qwen3", on_meta("32b", 1));
  auto shapes = parameter_shapes(*qwen);
  EXPECT_EQ(shapes.at("layers.0.attention.wq.weight"), (std::vector<int64_t>{8192, 5120}));
  EXPECT_EQ(shapes.at("layers.0.attention.wk.weight"), (std::vector<int64_t>{1024, 5120}));
  EXPECT_EQ(shapes.at("layers.0.attention.q_norm.weight"), (std::vector<int64_t>{128}));
}

// This rank's parameter shapes of llama3 8b (two blocks) under `plan` on `mesh`.
std::map<std::string, std::vector<int64_t>> rank_shapes(const std::string& plan, const std::string& mesh_text,
                                                        int64_t rank) {
  dist::DeviceMesh mesh = dist::DeviceMesh::parse(mesh_text);
  dist::MetaOnlyCommunicator communicator(rank, mesh.world_size());
  dist::RankScope scope(dist::RankContext{std::make_shared<const dist::DeviceMesh>(mesh), rank, &communicator});
  models::SubjectOptions options = on_meta("8b", 2);
  options.parallel.plan = plan;
  options.parallel.mesh = mesh.str();
  return parameter_shapes(*models::make_subject("llama3", options));
}

TEST(ProductionConfigs, Llama38bShardsOverOneHundredTwentyEightRanksOnMeta) {
  auto fsdp = rank_shapes("fsdp", "dp=128", 5);
  EXPECT_EQ(fsdp.at("layers.0.attention.wqkv.weight"), (std::vector<int64_t>{6144 / 128, 4096}));
  EXPECT_EQ(fsdp.at("tok_embeddings.weight"), (std::vector<int64_t>{128256 / 128, 4096}));
  EXPECT_EQ(fsdp.at("layers.1.feed_forward.w2.weight"), (std::vector<int64_t>{4096 / 128, 14336}));
  // TP over 8 (each rank one kv head and 4 query heads), then S(0) over dp=16.
  auto fsdp_tp = rank_shapes("fsdp,tp", "dp=16,tp=8", 77);
  EXPECT_EQ(fsdp_tp.at("layers.0.attention.wqkv.weight"), (std::vector<int64_t>{(512 + 128 + 128) / 16, 4096}));
  EXPECT_EQ(fsdp_tp.at("layers.0.attention.wo.weight"), (std::vector<int64_t>{4096 / 16, 512}));
  EXPECT_EQ(fsdp_tp.at("output.weight"), (std::vector<int64_t>{128256 / 16, 4096}));

  models::SubjectOptions options = on_meta("8b", 2);
  options.seq_len = 256;
  options.parallel.plan = "fsdp";
  std::shared_ptr<ir::Graph> graph = oracles::trace_rank_graph("llama3", options, dist::DeviceMesh::parse("dp=128"), 127);
  EXPECT_GT(graph->num_nodes(), 100u);
  EXPECT_TRUE(check::verify_graph(*graph).empty());
}

TEST(ProductionConfigs, AProductionShapeIsNotBuiltOnARealDevice) {
  models::SubjectOptions cpu = on_meta("70b", 1);
  cpu.device = c10::Device(c10::DeviceType::CPU);
  try {
    models::check_buildable_on_device("llama3", cpu);
    FAIL() << "llama3 70b was let onto the CPU";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("trace it on the meta device"), std::string::npos) << e.what();
  }
  models::check_buildable_on_device("llama3", on_meta("405b"));  // meta: fine
}

}  // namespace
}  // namespace passcheck::testing
