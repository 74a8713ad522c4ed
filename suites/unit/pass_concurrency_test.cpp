// Passes hold no state between calls: two threads running passes at the same time on two
// different graphs get, every time, exactly what each pass gives when run alone. The
// jobs mix real passes with mutants of the same pass (remat beside the remat mutants,
// chunk beside its unchained mutant), whose faults travel in their own call's options; a
// fault that leaked through shared state would change the other thread's graph or stats.
#include "suites/support/test_support.h"
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

// A chain of prefer_recompute and must_recompute forward nodes, each read twice in the
// backward: remat and each remat mutant leave a different graph, and the chain keeps
// remat busy long enough for the two threads to overlap inside it.
std::string remat_graph() {
  std::string text = "graph(param %w : f32[4, 4], arg %x : f32[4, 4]):\n"
                     "  %a : f32[4, 4] = aten::mm(%x, %w)  #{fqn=\"layers.0\", recompute=must_save}\n";
  std::string prev = "a";
  constexpr int kChain = 16;
  for (int i = 0; i < kChain; ++i) {
    const std::string v = "f" + std::to_string(i);
    text += "  %" + v + " : f32[4, 4] = aten::" + (i % 2 ? "cos" : "sin") + "(%" + prev + ")  #{fqn=\"layers.0\", " +
            (i % 2 ? "recompute=must_recompute}" : "recompute=prefer_recompute}") + "\n";
    prev = v;
  }
  text += "  %s : f32[] = aten::sum(%a, None)  #{phase=loss, fqn=\"loss\"}\n";
  std::string grad = "a";
  for (int i = kChain; i-- > 0;) {
    const std::string v = "f" + std::to_string(i);
    const std::string g1 = "g" + std::to_string(i), g2 = "h" + std::to_string(i);
    text += "  %" + g1 + " : f32[4, 4] = aten::mul.Tensor(%" + grad + ", %" + v + ")  #{phase=backward, fqn=\"layers.0\"}\n";
    text += "  %" + g2 + " : f32[4, 4] = aten::add.Tensor(%" + g1 + ", %" + v + ", 1)  #{phase=backward, fqn=\"layers.0\"}\n";
    grad = g2;
  }
  return text + "  return (%s, %" + grad + ")\n";
}

// A chunkable layer with an in-place counter update (chunk chains it, the mutant does not).
const char* const kChunkGraph = testing::kChunkableLayerGraph;

const char* const kCseGraph = testing::kRepeatedMmReluGraph;

struct Job {
  std::string pass;
  std::map<std::string, std::string> options;
  std::string graph;
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

std::unique_ptr<ir::Graph> input_of(const Job& job) { return ir::parse_graph(job.graph, job.pass + ".graph"); }

check::PassResult run_pass(const Job& job, ir::Graph& graph) {
  const check::RegisteredPass& pass = mutants::registry_with_mutants().get(job.pass);
  return pass.run(graph, check::PassOptions(pass.info, job.options));
}

Outcome outcome_of(const ir::Graph& graph, const check::PassResult& r) {
  return {graph.print(), r.changed, r.stats, r.rules_fired, r.guards_refused};
}

Outcome run_alone(const Job& job) {
  std::unique_ptr<ir::Graph> graph = input_of(job);
  check::PassResult r = run_pass(job, *graph);
  return outcome_of(*graph, r);
}

const std::vector<Job>& jobs() {
  static const std::vector<Job> all = {
      {"remat", {}, remat_graph()},
      {"mutant-remat-ignores-prefer-recompute", {}, remat_graph()},
      {"mutant-remat-recomputes-twice", {}, remat_graph()},
      {"mutant-remat-keeps-original", {}, remat_graph()},
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
  for (const Job& j : jobs()) alone[j.pass] = run_alone(j);
  EXPECT_EQ(alone["remat"].stats.at("recomputed_nodes"), 16);
  EXPECT_FALSE(alone["mutant-remat-ignores-prefer-recompute"] == alone["remat"]);
  EXPECT_FALSE(alone["mutant-remat-recomputes-twice"] == alone["remat"]);
  EXPECT_FALSE(alone["mutant-remat-keeps-original"] == alone["remat"]);
  EXPECT_FALSE(alone["mutant-chunk-unchained-buffer-update"] == alone["chunk"]);
  EXPECT_EQ(alone["cse"].stats.at("erased_nodes"), 2);
}

TEST(PassConcurrency, TwoThreadsGetWhatEachPassGivesAlone) {
  std::vector<Outcome> alone;
  for (const Job& j : jobs()) alone.push_back(run_alone(j));
  constexpr int kIterations = 2000;
  constexpr int kThreads = 2;
  const size_t n = jobs().size();
  // Thread 0 walks the jobs forward, thread 1 backward from the middle: over the
  // iterations every pass meets every other (remat beside its mutants included).
  auto job_index = [n](int thread, int i) { return thread == 0 ? i % n : (n / 2 + n - i % n) % n; };
  // The inputs are parsed and the results printed outside the threads, so the threads
  // do nothing but run passes and overlap as much as they can.
  std::vector<std::vector<std::unique_ptr<ir::Graph>>> graphs(kThreads);
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kIterations; ++i) graphs[t].push_back(input_of(jobs()[job_index(t, i)]));
  std::vector<std::vector<check::PassResult>> results(kThreads, std::vector<check::PassResult>(kIterations));
  std::vector<std::vector<std::string>> errors(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int i = 0; i < kIterations; ++i) {
        const Job& job = jobs()[job_index(t, i)];
        try {
          results[t][i] = run_pass(job, *graphs[t][i]);
        } catch (const std::exception& e) {
          errors[t].push_back(job.pass + " threw at iteration " + std::to_string(i) + ": " + e.what());
        }
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    std::vector<std::string> mismatches = errors[t];
    for (int i = 0; i < kIterations; ++i) {
      const size_t k = job_index(t, i);
      if (!(outcome_of(*graphs[t][i], results[t][i]) == alone[k]))
        mismatches.push_back(jobs()[k].pass + " at iteration " + std::to_string(i));
    }
    EXPECT_TRUE(mismatches.empty()) << "thread " << t << ": " << mismatches.size()
                                    << " runs differ from the pass run alone, first: " << mismatches.front();
  }
}

}  // namespace
}  // namespace passcheck
