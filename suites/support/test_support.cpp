// Suite helpers (see test_support.h).
#include "suites/support/test_support.h"

#include "framework/ir/text.h"

#include <ATen/Context.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace passcheck::testing {

CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run: " + command);
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) result.output.append(buf.data(), n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::string passcheck_binary() {
  const char* env = std::getenv("PASSCHECK_BINARY");
  return env ? env : PASSCHECK_DEFAULT_BINARY;
}

std::string cli(const std::string& args) { return passcheck_binary() + " " + args; }

std::unique_ptr<ir::Graph> parse_graph_text(const std::string& text, const std::string& name) {
  return ir::parse_graph(text, name);
}

std::string source_path(const std::string& relative) {
  const char* env = std::getenv("PASSCHECK_SOURCE_DIR");
  return std::string(env ? env : PASSCHECK_DEFAULT_SOURCE_DIR) + "/" + relative;
}

namespace {

// The directories make_temp_dir made, removed when the test process exits (a failing test's
// files stay with PASSCHECK_KEEP_TEST_DIRS=1). Only by the process that made them: a forked
// child that calls exit() must not delete what its parent still uses.
class TempDirs {
 public:
  void add(const std::string& dir) {
    std::lock_guard<std::mutex> lock(mutex_);
    dirs_.push_back(dir);
  }
  ~TempDirs() {
    if (::getpid() != owner_ || std::getenv("PASSCHECK_KEEP_TEST_DIRS")) return;
    std::error_code ignored;
    for (const std::string& dir : dirs_) std::filesystem::remove_all(dir, ignored);
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> dirs_;
  pid_t owner_ = ::getpid();
};

TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

}  // namespace

std::string make_temp_dir() {
  char tmpl[] = "/tmp/passcheck-test-XXXXXX";
  char* dir = mkdtemp(tmpl);
  if (!dir) throw std::runtime_error("mkdtemp failed");
  temp_dirs().add(dir);
  return dir;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << text;
}

bool cuda_available() { return at::hasCUDA(); }

const char* const kChunkableLayerGraph = R"(symbol s0 in [2, 4] hint 4 multiple_of 2
graph(
    param %w : f32[8, 8],
    buffer %counts : f32[8],
    arg %x : f32[sym(s0), 8]):
  %t : f32[8, 8]{1, 8} = aten::t(%w)  #{fqn="layers.0"}
  %mm : f32[sym(s0), 8] = aten::mm(%x, %t)  #{fqn="layers.0"}
  %relu : f32[sym(s0), 8] = aten::relu(%mm)  #{fqn="layers.0"}
  %colsum : f32[8] = aten::sum.dim_IntList(%relu, [0], False)  #{fqn="layers.0"}
  %upd : f32[8] = aten::add_.Tensor(%counts, %colsum)  #{fqn="layers.0"}
  %loss : f32[] = aten::sum(%relu)  #{phase=loss}
  return (%loss)
)";

const char* const kRepeatedMmReluGraph = R"(graph(param %w : f32[4, 4], arg %x : f32[2, 4]):
  %mm : f32[2, 4] = aten::mm(%x, %w)  #{seq=0}
  %relu : f32[2, 4] = aten::relu(%mm)
  %mm_1 : f32[2, 4] = aten::mm(%x, %w)  #{phase=backward, seq=0}
  %relu_1 : f32[2, 4] = aten::relu(%mm_1)  #{phase=backward}
  %add : f32[2, 4] = aten::add.Tensor(%relu, %relu_1, 1)  #{phase=backward}
  return (%add, %mm_1)
)";

}  // namespace passcheck::testing
