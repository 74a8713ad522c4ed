// Fuzz target over the repro file format (framework/check/repro.h): parse_repro reads
// the header lines and parses both graph sections. A ReproError (or another exception)
// for bad input is the expected outcome; a crash, a sanitizer report or a hang is a
// finding (docs/parser-fuzzing.md).
#include "framework/check/repro.h"

#include <cstdint>
#include <exception>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    passcheck::check::parse_repro(std::string(reinterpret_cast<const char*>(data), size), "fuzz.repro");
  } catch (const std::exception&) {
    // refused with an error: what hostile input should get
  }
  return 0;
}
