// Fuzz target over the module text format (framework/ir/module.h, what partitioners
// write and `passcheck run`/`equiv` read): parse, print, parse the print again and
// compare, then run the module verifier. An exception for bad input is the expected
// outcome; a crash, a sanitizer report, a hang or a round trip that does not reproduce
// its own text is a finding (docs/parser-fuzzing.md).
#include "framework/check/verifier.h"
#include "framework/ir/module.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<passcheck::ir::Module> parsed;
  try {
    parsed.emplace(passcheck::ir::parse_module(text, "fuzz.module"));
  } catch (const std::exception&) {
    return 0;  // refused with an error: what hostile input should get
  }
  const passcheck::ir::Module& module = *parsed;
  const std::string printed = passcheck::ir::print_module(module);
  std::string reprinted;
  try {
    reprinted = passcheck::ir::print_module(passcheck::ir::parse_module(printed, "printed.module"));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "the printed form of an accepted module does not parse: %s\n%s", e.what(), printed.c_str());
    std::abort();
  }
  if (reprinted != printed) {
    std::fprintf(stderr, "print(parse(print(m))) != print(m):\n%s\n---\n%s", printed.c_str(), reprinted.c_str());
    std::abort();
  }
  passcheck::check::verify_module(module);
  return 0;
}
