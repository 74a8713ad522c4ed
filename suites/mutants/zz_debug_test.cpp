#include "generators/program.h"
#include "generators/program_case.h"
#include "suites/mutants/ac_mutants.h"
#include <gtest/gtest.h>
#include <iostream>
namespace passcheck {
TEST(ZzDebug, RealChunk) {
  const auto& reg = mutants::registry_with_mutants();
  int fails = 0, refusals = 0, clean = 0;
  for (int i = 0; i < 80; ++i) {
    uint64_t seed = 0x5eed0000ULL + i * 7919;
    auto c = gen::generate_chunk_case(seed, gen::chunk_coverage_options());
    auto r = gen::run_chunk_case(c, reg);
    if (!r.refusal.empty()) ++refusals;
    else if (r.violations.empty()) ++clean;
    else { ++fails; std::cout << i << " " << c.config.str() << "\n" << c.description << r.violations[0].substr(0, 300) << "\n"; }
  }
  std::cout << "clean " << clean << " refused " << refusals << " failing " << fails << "\n";
}
}
