// Suite helpers (see test_support.h).
#include "suites/support/test_support.h"

#include <ATen/Context.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <sys/wait.h>

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

std::string source_path(const std::string& relative) {
  const char* env = std::getenv("PASSCHECK_SOURCE_DIR");
  return std::string(env ? env : PASSCHECK_DEFAULT_SOURCE_DIR) + "/" + relative;
}

std::string make_temp_dir() {
  char tmpl[] = "/tmp/passcheck-test-XXXXXX";
  char* dir = mkdtemp(tmpl);
  if (!dir) throw std::runtime_error("mkdtemp failed");
  return dir;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << text;
}

bool cuda_available() { return at::hasCUDA(); }

}  // namespace passcheck::testing
