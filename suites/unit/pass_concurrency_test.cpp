// Passes hold no state between calls: two threads running passes at the same time on two
// different graphs get, every time, exactly what each pass gives when run alone. The
// jobs mix real passes with mutants of the same pass (remat beside the remat mutants,
// chunk beside its unchained mutant), whose faults travel in their own call's options; a
// fault that leaked through shared state would change the other thread's graph or stats.
#include "framework/check/pass.h"
#include "framework/ir/text.h"
#include "suites/mutants/mutants.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace passcheck {
namespace {

// Two backward readers of a prefer_recompute sin and a must_recompute cos: remat and
// each remat mutant leave a different graph.
const char* kRematGraph = R"(graph(param %w : f32[4, 4], arg %x : f32[4, 4]):
  %a : f32[4, 4] = aten::mm(%x, %w)  #{fqn="layers.0", recompute=must_save}
  %b : f32[4, 4] = aten::sin(%a)  #{fqn="layers.0", recompute=prefer_recompute}
  %c : f32[4, 4] = aten::cos(%a)  #{fqn="layers.0", recompute=must_recompute}
  %s : f32[] = aten::sum(%a, None)  #{phase=loss, fqn="loss"}
  %g1 : f32[4, 4] = aten::mul.Tensor(%b, %c)  #{phase=backward, fqn="layers.0"}
  %g2 : f32[4, 4] = aten::add.Tensor(%g1, %b, 1)  #{phase=backward, fqn="layers.0"}
  %g3 : f32[4, 4] = aten::mul.Tensor(%g2, %c)  #{phase=backward, fqn="layers.0"}
  return (%s, %g3)
)";

// A chunkable layer with an in-place counter update (chunk chains it, the mutant does not).
const char* kChunkGraph = R"(symbol s0 in [2, 4] hint 4 multiple_of 2
graph(
    param %w : f32[8, 8],
    buffer %counts : f32[8],
    arg %x : f32[sym(s0), 8]):
  %t : f32[8, 8]{1, 8} = aten::t(%w)  #{fqn="layers.0"}
  %mm : f32[sym(s0), 8] = aten::mm(%x, %t)  #{fqn="layers.0"}
  %relu : f32[sym(s0), 8] = aten::relu(%mm)  #{fqn="layers.0"}
  %colsum : f32[8] = aten::sum.dim_IntList(%relu, [0], False)  #{fqn="layers.0"}
  %upd : f32[8] = aten::add_.Tensor(%counts, %colsum)  #{fqn="layers.0"}
  %loss : f32[] = aten::sum(%relu)  #{phase=loss}
  return (%loss)
)";

const char* kCseGraph = R"(graph(param %w : f32[4, 4], arg %x : f32[2, 4]):
  %mm : f32[2, 4] = aten::mm(%x, %w)  #{seq=0}
  %relu : f32[2, 4] = aten::relu(%mm)
  %mm_1 : f32[2, 4] = aten::mm(%x, %w)  #{phase=backward, seq=0}
  %relu_1 : f32[2, 4] = aten::relu(%mm_1)  #{phase=backward}
  %add : f32[2, 4] = aten::add.Tensor(%relu, %relu_1, 1)  #{phase=backward}
  return (%add, %mm_1)
)";

struct Job {
  std::string pass;
  std::map<std::string, std::string> options;
  const char* graph;
};

// Everything a run leaves: the printed graph and the whole PassResult.
struct Outcome {
  std::string graph;
  bool changed = false;
  std::map<std::string, int64_t> stats, rules_fired, guards_refused;
  bool operator==(const Outcome& o) const {
    return graph == o.graph && changed == o.changed && stats == o.stats && rules_fired == o.rules_fired &&
           guards_refused == o.guards_refused;
  }
};

Outcome run_job(const Job& job) {
  const check::RegisteredPass& pass = mutants::registry_with_mutants().get(job.pass);
  std::unique_ptr<ir::Graph> graph = ir::parse_graph(job.graph, job.pass + ".graph");
  check::PassResult r = pass.run(*graph, check::PassOptions(pass.info, job.options));
  return {graph->print(), r.changed, r.stats, r.rules_fired, r.guards_refused};
}

const std::vector<Job>& jobs() {
  static const std::vector<Job> all = {
      {"remat", {}, kRematGraph},
      {"mutant-remat-ignores-prefer-recompute", {}, kRematGraph},
      {"mutant-remat-recomputes-twice", {}, kRematGraph},
      {"mutant-remat-keeps-original", {}, kRematGraph},
      {"chunk", {{"early-accumulation", "false"}}, kChunkGraph},
      {"mutant-chunk-unchained-buffer-update", {{"early-accumulation", "false"}}, kChunkGraph},
      {"cse", {}, kCseGraph},
      {"mutant-cse-no-result-written", {}, kCseGraph},
  };
  return all;
}

TEST(PassConcurrency, MutantsAndRealPassesDifferWhenRunAlone) {
  // Otherwise a fault leaking into the other thread would change nothing visible.
  std::map<std::string, Outcome> alone;
  for (const Job& j : jobs()) alone[j.pass] = run_job(j);
  EXPECT_EQ(alone["remat"].stats.at("recomputed_nodes"), 2);
  EXPECT_FALSE(alone["mutant-remat-ignores-prefer-recompute"] == alone["remat"]);
  EXPECT_FALSE(alone["mutant-remat-recomputes-twice"] == alone["remat"]);
  EXPECT_FALSE(alone["mutant-remat-keeps-original"] == alone["remat"]);
  EXPECT_FALSE(alone["mutant-chunk-unchained-buffer-update"] == alone["chunk"]);
  EXPECT_EQ(alone["cse"].stats.at("erased_nodes"), 2);
}

TEST(PassConcurrency, TwoThreadsGetWhatEachPassGivesAlone) {
  std::vector<Outcome> alone;
  for (const Job& j : jobs()) alone.push_back(run_job(j));
  constexpr int kIterations = 400;
  constexpr int kThreads = 2;
  std::atomic<int> ready{0};
  std::vector<std::vector<std::string>> mismatches(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      // Start together, so the two threads overlap from the first iteration.
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      // Thread 0 walks the jobs forward, thread 1 backward from the middle: over the
      // iterations every pass meets every other (remat beside its mutants included).
      const size_t n = jobs().size();
      for (int i = 0; i < kIterations; ++i) {
        const size_t k = t == 0 ? i % n : (n / 2 + n - i % n) % n;
        try {
          if (!(run_job(jobs()[k]) == alone[k]))
            mismatches[t].push_back(jobs()[k].pass + " at iteration " + std::to_string(i));
        } catch (const std::exception& e) {
          mismatches[t].push_back(jobs()[k].pass + " threw at iteration " + std::to_string(i) + ": " + e.what());
        }
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(mismatches[t].empty()) << "thread " << t << ": " << mismatches[t].size()
                                       << " runs differ from the pass run alone, first: " << mismatches[t].front();
  }
}

}  // namespace
}  // namespace passcheck
