// Fuzz target over the graph text format: parse, print, parse the print again and
// compare (the round-trip property of framework/ir/text.h), then run the structural
// verifier. A ParseError or any other exception the parser throws for bad input is
// the expected outcome; a crash, a sanitizer report, a hang or a round trip that does
// not reproduce its own text is a finding (docs/parser-fuzzing.md).
#include "framework/check/verifier.h"
#include "framework/ir/text.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<passcheck::ir::Graph> graph;
  try {
    graph = passcheck::ir::parse_graph(text, "fuzz.graph");
  } catch (const std::exception&) {
    return 0;  // refused with an error: what hostile input should get
  }
  const std::string printed = graph->print();
  std::string reprinted;
  try {
    reprinted = passcheck::ir::parse_graph(printed, "printed.graph")->print();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "the printed form of an accepted graph does not parse: %s\n%s", e.what(), printed.c_str());
    std::abort();
  }
  if (reprinted != printed) {
    std::fprintf(stderr, "print(parse(print(g))) != print(g):\n%s\n---\n%s", printed.c_str(), reprinted.c_str());
    std::abort();
  }
  passcheck::check::verify_graph(*graph);
  return 0;
}
