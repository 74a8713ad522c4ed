// Test-only misbehaving passes (see test_passes.h).
#include "suites/mutants/test_passes.h"

#include <chrono>
#include <thread>

namespace passcheck::mutants {

namespace {
// Volatile, so the compiler cannot prove the pointer null and drop the store.
int* volatile null_target = nullptr;
}  // namespace

void register_test_passes(check::PassRegistry& registry) {
  registry.add({"crash-on-odd", "TEST ONLY: dereferences null when the graph has an odd number of nodes", {},
                check::NumericsEffect::Preserves, true},
               [](ir::Graph& g, const check::PassOptions&) {
                 if (g.num_nodes() % 2 == 1) *null_target = 1;
                 return check::PassResult::unchanged();
               });
  registry.add({"hang", "TEST ONLY: never returns on a graph with at least one node", {},
                check::NumericsEffect::Preserves, true},
               [](ir::Graph& g, const check::PassOptions&) {
                 while (g.num_nodes() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
                 return check::PassResult::unchanged();
               });
}

}  // namespace passcheck::mutants
