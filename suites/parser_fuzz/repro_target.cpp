// Fuzz target over the repro file format (framework/check/repro.h): parse_repro reads
// the header lines (sim mesh, chunk, program, registries, numbers) and parses both graph
// sections; an accepted file's pipeline text goes through the pipeline parser, as
// `passcheck repro` does before it runs anything. A ReproError (or another exception)
// for bad input is the expected outcome; a crash, a sanitizer report or a hang is a
// finding (docs/parser-fuzzing.md).
#include "framework/check/pipeline.h"
#include "framework/check/repro.h"

#include <cstdint>
#include <exception>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const passcheck::check::Repro repro =
        passcheck::check::parse_repro(std::string(reinterpret_cast<const char*>(data), size), "fuzz.repro");
    // An empty registry: the pipeline's syntax (names, option lists, quoting) is what a
    // file controls; the passes themselves are not linked into the fuzz build.
    static const passcheck::check::PassRegistry no_passes;
    passcheck::check::Pipeline::parse(repro.pipeline, no_passes);
  } catch (const std::exception&) {
    // refused with an error: what hostile input should get
  }
  return 0;
}
