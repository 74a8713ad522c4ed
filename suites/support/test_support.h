// Helpers shared by the suites: locating the source tree and the passcheck binary,
// and running a command with its output captured.
#pragma once

#include <memory>
#include <string>

namespace passcheck::ir {
class Graph;
}

namespace passcheck::testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

/// Runs `command` through the shell, capturing stdout and stderr.
CommandResult run_command(const std::string& command);
/// Path of the passcheck binary (PASSCHECK_BINARY overrides the built one).
std::string passcheck_binary();
/// "<passcheck binary> <args>": a command line for run_command.
std::string cli(const std::string& args);
/// Graph text parsed as the file `name` (ir::parse_graph; messages name it).
std::unique_ptr<ir::Graph> parse_graph_text(const std::string& text, const std::string& name = "test.graph");
/// Absolute path of a file in the source tree (PASSCHECK_SOURCE_DIR overrides).
std::string source_path(const std::string& relative);
/// A fresh temporary directory for one test, removed with its files when the test process
/// exits (kept with PASSCHECK_KEEP_TEST_DIRS=1).
std::string make_temp_dir();
/// Writes `text` to `path` (throws on failure).
void write_text(const std::string& path, const std::string& text);
/// Whether a CUDA device is usable in this process.
bool cuda_available();

/// Shared fixture graphs (their text lives in test_support.cpp):
/// a chunkable layer (symbolic batch s0) with a weight, a counter buffer updated in
/// place, a row-wise body and a reduction over the chunked rows, the loss outside;
extern const char* const kChunkableLayerGraph;
/// a forward mm+relu repeated in the backward (cse merges the repeat).
extern const char* const kRepeatedMmReluGraph;

}  // namespace passcheck::testing
