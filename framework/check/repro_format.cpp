// Repro files as text (see repro.h): the writer and the line-numbered reader. Kept
// apart from replay (repro.cpp) so that the reader builds with the IR alone: the parser
// fuzzer (suites/parser_fuzz) links just this file, the IR and framework/io.
#include "framework/check/repro.h"

#include "framework/io/files.h"
#include "framework/ir/text.h"
#include "framework/version.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

namespace passcheck::check {

namespace {


constexpr const char* kMagic = "#! passcheck-repro 1";

std::string one_line(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (c == '\n' || c == '\r') c = ' ';
  return out;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// Parses one graph section; blank lines pad it so the parser's line numbers are the file's.
void check_graph(const std::string& path, int first_line, const std::string& section) {
  try {
    ir::parse_graph(std::string(static_cast<size_t>(first_line - 1), '\n') + section, path);
  } catch (const ir::ParseError& e) {
    throw ReproError(path, e.line(), "in the graph section: " + e.message() + " (column " + std::to_string(e.column()) + ")");
  }
}

}  // namespace

std::string format_repro(const Repro& r, const std::string& path) {
  std::ostringstream os;
  os << kMagic << "\n";
  os << "#! version: " << (r.version.empty() ? PASSCHECK_VERSION : r.version) << "\n";
  os << "#! status: " << r.status << "\n";
  os << "#! pipeline: " << one_line(r.pipeline) << "\n";
  if (!r.registries.empty()) {
    os << "#! registries: ";
    for (size_t i = 0; i < r.registries.size(); ++i) os << (i ? "," : "") << r.registries[i];
    os << "\n";
  }
  os << "#! seed: " << r.seed << "\n";
  os << "#! int-high: " << r.int_high << "\n";
  if (!r.chunk.empty()) os << "#! chunk: " << one_line(r.chunk) << "\n";
  if (!r.program.empty()) os << "#! program: " << one_line(r.program) << "\n";
  if (!r.sim_mesh.empty()) os << "#! sim-mesh: " << one_line(r.sim_mesh) << "\n";
  if (!r.case_description.empty()) os << "#! case: " << one_line(r.case_description) << "\n";
  if (!r.property.empty()) os << "#! property: " << r.property << "\n";
  for (const auto& m : r.messages) os << "#! message: " << one_line(m) << "\n";
  if (r.timeout_ms > 0) os << "#! timeout-ms: " << r.timeout_ms << "\n";
  os << "#! replay: passcheck repro " << path << "\n";
  os << "# original\n" << r.original;
  if (!r.original.empty() && r.original.back() != '\n') os << "\n";
  if (!r.minimized.empty()) {
    os << "# minimized\n" << r.minimized;
    if (r.minimized.back() != '\n') os << "\n";
  }
  return os.str();
}

void write_repro(const std::string& path, const Repro& repro, bool sync) {
  io::write_file_atomically(path, format_repro(repro, path), "repro file", sync);
}

void write_claimed_repro(const std::string& path, const Repro& repro) {
  const std::string text = format_repro(repro, path);
  // No O_TRUNC: truncating makes some file systems (ext4's auto_da_alloc) flush the
  // file at close. The claimed file is empty; anything else is replaced atomically.
  int fd = ::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (fd >= 0 && (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != 0)) {
    ::close(fd);
    fd = -1;
  }
  if (fd < 0) {
    write_repro(path, repro, /*sync=*/false);
    return;
  }
  const char* p = text.data();
  size_t left = text.size();
  bool ok = true;
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  ::close(fd);
  if (!ok) write_repro(path, repro, /*sync=*/false);  // the OS reason comes from there
}

Repro parse_repro(const std::string& text, const std::string& path) {
  std::vector<std::string> lines = split_lines(text);
  if (lines.empty() || trim(lines[0]) != kMagic)
    throw ReproError(path, 1, std::string("not a passcheck repro file: the first line must be '") + kMagic + "'");
  Repro r;
  bool have_pipeline = false, have_seed = false;
  enum class Section { Header, Original, Minimized } section = Section::Header;
  int original_line = 0, minimized_line = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    int lineno = static_cast<int>(i) + 1;
    std::string t = trim(line);
    if (t == "# original") {
      if (section != Section::Header) throw ReproError(path, lineno, "a second '# original' section");
      section = Section::Original;
      original_line = lineno + 1;
      continue;
    }
    if (t == "# minimized") {
      if (section != Section::Original) throw ReproError(path, lineno, "'# minimized' must follow the '# original' section");
      section = Section::Minimized;
      minimized_line = lineno + 1;
      continue;
    }
    if (section == Section::Original) {
      r.original += line + "\n";
      continue;
    }
    if (section == Section::Minimized) {
      r.minimized += line + "\n";
      continue;
    }
    if (t.empty() || (t[0] == '#' && t.rfind("#!", 0) != 0)) continue;  // blank or plain comment
    if (t.rfind("#!", 0) != 0) throw ReproError(path, lineno, "expected '#! key: value' or '# original' before the graph");
    std::string body = trim(t.substr(2));
    size_t colon = body.find(':');
    if (colon == std::string::npos) throw ReproError(path, lineno, "expected '#! key: value', got '" + t + "'");
    std::string key = trim(body.substr(0, colon)), value = trim(body.substr(colon + 1));
    auto to_int = [&](const std::string& what) -> long long {
      try {
        size_t used = 0;
        long long v = std::stoll(value, &used);
        if (used != value.size()) throw std::invalid_argument(value);
        return v;
      } catch (const std::exception&) {
        throw ReproError(path, lineno, what + " must be an integer, got '" + value + "'");
      }
    };
    if (key == "version") {
      r.version = value;
    } else if (key == "status") {
      if (value != "pending" && value != "failed" && value != "crash" && value != "timeout" && value != "passed")
        throw ReproError(path, lineno, "status must be pending, failed, crash, timeout or passed; got '" + value + "'");
      r.status = value;
    } else if (key == "pipeline") {
      if (value.empty()) throw ReproError(path, lineno, "empty pipeline");
      r.pipeline = value;
      have_pipeline = true;
    } else if (key == "registries") {
      std::stringstream ss(value);
      std::string item;
      while (std::getline(ss, item, ',')) {
        item = trim(item);
        if (item != "mutants" && item != "test" && item != "python")
          throw ReproError(path, lineno, "unknown registry '" + item + "' (known: mutants, test, python)");
        r.registries.push_back(item);
      }
    } else if (key == "seed") {
      try {
        size_t used = 0;
        if (value.empty() || value[0] == '-') throw std::invalid_argument(value);
        r.seed = std::stoull(value, &used);
        if (used != value.size()) throw std::invalid_argument(value);
      } catch (const std::exception&) {
        throw ReproError(path, lineno, "seed must be an integer in [0, 2^64), got '" + value + "'");
      }
      have_seed = true;
    } else if (key == "int-high") {
      r.int_high = to_int("int-high");
      if (r.int_high < 1) throw ReproError(path, lineno, "int-high must be at least 1");
    } else if (key == "timeout-ms") {
      r.timeout_ms = to_int("timeout-ms");
      if (r.timeout_ms < 1) throw ReproError(path, lineno, "timeout-ms must be at least 1");
    } else if (key == "chunk") {
      if (value.empty()) throw ReproError(path, lineno, "empty chunk configuration");
      r.chunk = value;
    } else if (key == "program") {
      if (value.empty()) throw ReproError(path, lineno, "empty program");
      r.program = value;
    } else if (key == "sim-mesh") {
      if (value.empty()) throw ReproError(path, lineno, "empty sim mesh");
      r.sim_mesh = value;
      r.sim_mesh_line = lineno;  // the mesh itself is checked where it is built (dist::DeviceMesh)
    } else if (key == "case") {
      r.case_description = value;
    } else if (key == "property") {
      r.property = value;
    } else if (key == "message") {
      r.messages.push_back(value);
    } else if (key == "replay" || key == "nodes") {
      // Derived from the rest; rewritten on every write.
    } else {
      throw ReproError(path, lineno, "unknown key '" + key + "'");
    }
  }
  int last = static_cast<int>(lines.size());
  if (r.chunk.empty() != r.program.empty())
    throw ReproError(path, last, "a chunk case needs both '#! chunk: ...' and '#! program: ...'");
  if (!r.sim_mesh.empty() && !r.program.empty())
    throw ReproError(path, last, "a repro is one kind of case: '#! sim-mesh: ...' (a mesh case) and '#! program: ...' "
                                 "(a chunk case) cannot both be given");
  if (!have_pipeline) throw ReproError(path, last, "missing '#! pipeline: ...'");
  if (!have_seed) throw ReproError(path, last, "missing '#! seed: ...'");
  if (section == Section::Header || trim(r.original).empty()) throw ReproError(path, last, "missing the '# original' graph section");
  check_graph(path, original_line, r.original);
  r.original_first_line = original_line;
  r.minimized_first_line = minimized_line;
  if (section == Section::Minimized) {
    if (trim(r.minimized).empty()) throw ReproError(path, last, "empty '# minimized' section");
    check_graph(path, minimized_line, r.minimized);
  }
  return r;
}

Repro read_repro(const std::string& path) {
  std::string text;
  try {
    text = io::read_file(path, "repro file");
  } catch (const io::FileError& e) {
    throw ReproError(path, 0, e.what());
  }
  return parse_repro(text, path);
}

}  // namespace passcheck::check
