// Fuzz target over input archives (torch.save files: `passcheck run --inputs`), read with
// exec::read_archive: the pickle-stack check, LibTorch's unpickler and the tensor-extent
// check. An exception for bad input is the expected outcome; a crash, a sanitizer report
// or a hang is a finding (docs/parser-fuzzing.md). LibTorch itself is not instrumented,
// so only what reaches passcheck's code (and crashes inside LibTorch) is seen.
#include "framework/exec/inputs.h"

#include <cstdint>
#include <exception>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    for (const c10::IValue& value : passcheck::exec::read_archive(
             std::string(reinterpret_cast<const char*>(data), size), "fuzz.pt"))
      if (value.isTensor()) (void)value.toTensor().sum().item<double>();  // read every byte the tensor claims
  } catch (const std::exception&) {
    // refused with an error: what hostile input should get
  }
  return 0;
}
