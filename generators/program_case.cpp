// generate_case: one seed -> one random program, traced on the CPU into its joint graph.
// The RapidCheck generator is sampled directly (no property run), so the case depends
// on the seed alone; the same seed also seeds the parameters and the input seed.
#include "generators/program_case.h"

#include "generators/program.h"
#include "oracles/training_driver.h"

namespace passcheck::gen {

GeneratedCase generate_case(uint64_t seed, const ProgramGenOptions& options) {
  // Sizes cycle through RapidCheck's range so that small and large programs both occur.
  int size = static_cast<int>(seed % 101);
  ProgramSpec spec = program_for_seed(seed, options, size);
  auto subject = make_program_subject(spec, seed, c10::Device(c10::DeviceType::CPU));
  trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), /*on_meta=*/false);
  GeneratedCase c;
  c.graph = program.shared_graph();
  c.input_seed = seed ^ 0x9e3779b97f4a7c15ULL;
  c.int_high = spec.int_high();
  c.description = spec.describe();
  return c;
}

}  // namespace passcheck::gen
