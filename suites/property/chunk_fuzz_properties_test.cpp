// Chunk fuzzing (passes/chunk): random chunkable programs (generators/program.h,
// ProgramGenOptions::chunkable: even batch, no random ops, MoE-like Route and
// CountUpdate layers) under random chunk configurations, held by gen::run_chunk_case to
// (a) every claim of the chunked graph proved by Z3, (b) check_chunk_invariants empty on
// the chunked graph before concretize, (c) no symbol left after concretize, (d) graph
// chunking bitwise equal to eager chunking over two optimizer steps. The same body with
// a chunking mutant in place of chunk or concretize must fail within a bounded number
// of the fuzzer's cases (gen::generate_chunk_case, what `passcheck fuzz --chunk batch`
// draws). RC_PARAMS="seed=..." reproduces a property failure.
#include "suites/support/rc_check.h"
#include "generators/program.h"
#include "generators/program_case.h"
#include "suites/mutants/mutants.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <chrono>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace passcheck {
namespace {

using testing::check_n;

bool has_kind(const gen::ProgramSpec& spec, gen::OpKind kind) {
  for (const auto& layer : spec.layers)
    for (const auto& op : layer.ops)
      if (op.kind == kind) return true;
  return false;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// A random chunk configuration for `spec`: early accumulation off, batch mode, modules
// "layers.*" or a subset of the layers, SGD or Adam.
rc::Gen<gen::ChunkConfig> chunk_config_gen(size_t layers) {
  return rc::gen::exec([layers] {
    gen::ChunkConfig c;
    const int which = *rc::gen::inRange(0, 3);
    if (which == 1) c.modules = "layers." + std::to_string(*rc::gen::inRange<size_t>(0, layers));
    if (which == 2 && layers >= 2) c.modules = "layers.0,layers." + std::to_string(layers - 1);
    c.optimizer = *rc::gen::element<std::string>("sgd", "adam");
    return c;
  });
}

TEST(ChunkFuzzProperties, GeneratorMakesChunkablePrograms) {
  const gen::ProgramGenOptions o = gen::chunkable_options();
  int route = 0, count = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const gen::ProgramSpec spec = gen::program_for_seed(seed, o, static_cast<int>(seed % 101));
    ASSERT_TRUE(spec.batch == 4 || spec.batch == 6) << spec.describe();
    for (const auto& layer : spec.layers)
      for (const auto& op : layer.ops) {
        ASSERT_FALSE(gen::is_random(op.kind)) << spec.describe();
        ASSERT_NE(op.kind, gen::OpKind::BufferUpdate) << spec.describe();
        if (op.kind == gen::OpKind::Route || op.kind == gen::OpKind::CountUpdate) {
          ASSERT_GE(op.experts, 2);
          ASSERT_GE(op.top_k, 1);
          ASSERT_LE(op.top_k, op.experts);
        }
      }
    route += has_kind(spec, gen::OpKind::Route);
    count += has_kind(spec, gen::OpKind::CountUpdate);
    // The text form carries the whole program.
    ASSERT_EQ(gen::encode_spec(gen::decode_spec(gen::encode_spec(spec))), gen::encode_spec(spec));
    ASSERT_EQ(gen::decode_spec(gen::encode_spec(spec)).describe(), spec.describe());
  }
  std::cout << route << " of 200 programs route, " << count << " count tokens per expert" << std::endl;
  EXPECT_GE(route, 25);
  EXPECT_GE(count, 25);
  // The plain generator never draws the chunkable-only kinds.
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const gen::ProgramSpec spec = gen::program_for_seed(seed, {}, static_cast<int>(seed % 101));
    ASSERT_FALSE(has_kind(spec, gen::OpKind::Route) || has_kind(spec, gen::OpKind::CountUpdate)) << spec.describe();
  }
}

TEST(ChunkFuzzProperties, SubjectHonoursTheBatchSize) {
  const gen::ProgramSpec spec = gen::program_for_seed(3, gen::chunkable_options(), 50);
  models::SubjectOptions o;
  o.seed = 3;
  o.batch_size = 6;
  auto subject = gen::make_program_subject(spec, o);
  EXPECT_EQ(subject->batch(0).at(0).toTensor().size(0), 6);
  o.batch_size = 0;
  EXPECT_EQ(gen::make_program_subject(spec, o)->batch(0).at(0).toTensor().size(0), spec.batch);
}

TEST(ChunkFuzzProperties, ChunkConfigTextRoundTrips) {
  gen::ChunkConfig c;
  c.modules = "layers.0,layers.2";
  c.optimizer = "adam";
  c.steps = 3;
  EXPECT_EQ(gen::ChunkConfig::parse(c.str()).str(), c.str());
  EXPECT_THROW(gen::ChunkConfig::parse("mode=sideways"), std::invalid_argument);
  EXPECT_THROW(gen::ChunkConfig::parse("colour=red"), std::invalid_argument);
}

// The property: graph chunking of a random chunkable program equals eager chunking bit
// for bit, with every claim proved and the chunked graph's invariants holding.
TEST(ChunkFuzzProperties, GraphChunkingEqualsEagerChunking) {
  check_n(15, [] {
    const gen::ProgramSpec spec = *gen::arbitrary_program(gen::chunkable_options());
    gen::ChunkCase c;
    c.program = gen::encode_spec(spec);
    c.seed = *rc::gen::inRange<uint64_t>(0, 1000);
    c.config = *chunk_config_gen(spec.layers.size());
    RC_TAG(has_kind(spec, gen::OpKind::Route) ? "routes" : "no route",
           has_kind(spec, gen::OpKind::CountUpdate) ? "counts" : "no count", c.config.modules);
    const gen::ChunkCaseResult r = gen::run_chunk_case(c, mutants::registry_with_mutants());
    if (!r.violations.empty())
      RC_FAIL(spec.describe() + c.config.str() + "\n" + joined(r.violations) + r.report);
  });
}

// The property body over the fuzzer's case sequence with a mutant in place: the index of
// the first failing case, or -1 within `max_cases`.
struct Caught {
  int64_t index = -1;
  std::vector<std::string> violations;
  std::string description;
  double seconds = 0;
};

Caught first_failure(const std::string& chunk_pass, const std::string& concretize_pass, int64_t max_cases) {
  const auto t0 = std::chrono::steady_clock::now();
  Caught caught;
  for (int64_t i = 0; i < max_cases; ++i) {
    const gen::ChunkCase c = gen::generate_chunk_case(static_cast<uint64_t>(i) * 7919 + 17);
    gen::ChunkCaseResult r = gen::run_chunk_case(c, mutants::registry_with_mutants(), chunk_pass, concretize_pass);
    if (r.violations.empty()) continue;
    // A failure counts only when the real passes hold on the same case.
    if (!gen::run_chunk_case(c, mutants::registry_with_mutants()).violations.empty()) continue;
    caught.index = i;
    caught.violations = r.violations;
    caught.description = c.description + c.config.str();
    break;
  }
  caught.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return caught;
}

void expect_caught(const std::string& mutant, bool replaces_chunk, const std::string& expected_message,
                   int64_t max_cases) {
  const Caught c = replaces_chunk ? first_failure(mutant, "concretize", max_cases)
                                  : first_failure("chunk", mutant, max_cases);
  ASSERT_GE(c.index, 0) << mutant << " survived " << max_cases << " chunk cases";
  std::cout << mutant << ": first failure at case " << c.index << " (" << c.index + 1 << " cases, " << c.seconds
            << " s): " << c.violations.front() << std::endl;
  EXPECT_NE(joined(c.violations).find(expected_message), std::string::npos) << c.description << "\n" << joined(c.violations);
}

TEST(ChunkFuzzProperties, CatchesMutantChunkAddsChunkDim) {
  expect_caught("mutant-chunk-adds-chunk-dim", true, "chunk invariant violated", 20);
}

TEST(ChunkFuzzProperties, CatchesMutantChunkUnchainedBufferUpdate) {
  expect_caught("mutant-chunk-unchained-buffer-update", true, "chunk invariant violated", 20);
}

TEST(ChunkFuzzProperties, CatchesMutantConcretizeStaleInputSymbols) {
  expect_caught("mutant-concretize-stale-input-symbols", false, "left in the metadata of graph input", 20);
}

}  // namespace
}  // namespace passcheck
