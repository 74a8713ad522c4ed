#include "framework/io/files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace passcheck::io {

namespace {

std::string reason(int error) { return std::strerror(error); }

[[noreturn]] void fail(const std::string& what, const std::string& path, const std::string& doing, int error) {
  throw FileError("cannot " + doing + " " + what + " '" + path + "': " + reason(error));
}

// Writes all of `content` to `fd`, retrying short writes and EINTR.
void write_all(int fd, const std::string& content, const std::string& what, const std::string& path) {
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int error = errno;
      ::close(fd);
      fail(what, path, "write", error);
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
}

// Regular files are flushed to the device so a full disk or quota shows up here rather
// than after the success message; other targets (terminals, pipes) cannot be synced.
void sync_and_close(int fd, const std::string& what, const std::string& path, bool sync = true) {
  struct stat st {};
  if (sync && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::fsync(fd) != 0 && errno != EINVAL) {
    int error = errno;
    ::close(fd);
    fail(what, path, "write", error);
  }
  if (::close(fd) != 0) fail(what, path, "write", errno);
}

std::string directory_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The one rule of every writer for what already exists at `path`: a symbolic link is
// never written through or replaced (a repro or graph file may come with a link planted
// next to it, and following it writes where the command line did not say), except the
// standard streams' names under /dev and /proc; a file the user made read-only is never
// replaced. Returns the mode of an existing regular file (0 when missing), which an
// atomic replacement keeps.
mode_t check_replaceable(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  if (S_ISLNK(st.st_mode)) {
    if (path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0) return 0;
    char target[4096];
    ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    std::string to = n > 0 ? std::string(target, static_cast<size_t>(n)) : "?";
    throw FileError("cannot write " + what + " '" + path + "': it is a symbolic link (to '" + to +
                    "'); passcheck writes no file through a link: remove the link or name the file itself");
  }
  // By its mode bits too: the superuser's access() ignores them, but the file's owner said
  // no one should write it.
  if (S_ISREG(st.st_mode) && ((st.st_mode & 0222) == 0 || ::access(path.c_str(), W_OK) != 0))
    throw FileError("cannot write " + what + " '" + path + "': it is read-only; passcheck does not replace a file "
                    "you protected (make it writable or choose another name)");
  return S_ISREG(st.st_mode) ? st.st_mode & 07777 : 0;
}

}  // namespace

PathKind kind_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return PathKind::Missing;
  if (S_ISREG(st.st_mode)) return PathKind::Regular;
  if (S_ISDIR(st.st_mode)) return PathKind::Directory;
  return PathKind::Other;
}

std::string read_file(const std::string& path, const std::string& what, size_t max_bytes) {
  if (kind_of(path) == PathKind::Directory) throw FileError(what + " '" + path + "' is a directory");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(what, path, "open", errno);
  std::string content;
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      int error = errno;
      ::close(fd);
      fail(what, path, "read", error);
    }
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
    if (content.size() > max_bytes) {
      ::close(fd);
      throw FileError(what + " '" + path + "' is larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  ::close(fd);
  return content;
}

void write_file(const std::string& path, const std::string& content, const std::string& what, bool sync) {
  if (kind_of(path) == PathKind::Directory) throw FileError("cannot write " + what + " '" + path + "': it is a directory");
  check_replaceable(path, what);
  const bool stream_name = path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (stream_name ? 0 : O_NOFOLLOW), 0644);
  if (fd < 0) fail(what, path, "write", errno);
  write_all(fd, content, what, path);
  sync_and_close(fd, what, path, sync);
}

void write_file_atomically(const std::string& path, const std::string& content, const std::string& what, bool sync) {
  PathKind kind = kind_of(path);
  if (kind == PathKind::Directory) throw FileError("cannot write " + what + " '" + path + "': it is a directory");
  if (kind == PathKind::Other)
    throw FileError("cannot write " + what + " '" + path + "': it exists and is not a regular file (replacing it "
                    "would destroy a device, pipe or socket)");
  const mode_t existing_mode = check_replaceable(path, what);
  // mkstemp: a unique name, so two writers of one path never share a temporary file.
  std::string tmp_template = directory_of(path) + "/.passcheck-XXXXXX";
  std::string tmp = tmp_template;
  int fd = ::mkstemp(tmp.data());
  if (fd < 0) fail(what, path, "write (temporary file in " + directory_of(path) + ")", errno);
  try {
    ::fchmod(fd, existing_mode != 0 ? existing_mode : 0644);  // a replaced file keeps its mode
    write_all(fd, content, what, path);
    sync_and_close(fd, what, path, sync);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int error = errno;
    ::unlink(tmp.c_str());
    fail(what, path, "write", error);
  }
}

void check_writable(const std::string& path, const std::string& what) {
  if (path.empty()) throw FileError(what + ": empty file name");
  PathKind kind = kind_of(path);
  if (kind == PathKind::Directory) throw FileError("cannot write " + what + " '" + path + "': it is a directory");
  std::string directory = directory_of(path);
  PathKind dir_kind = kind_of(directory);
  if (dir_kind == PathKind::Missing)
    throw FileError("cannot write " + what + " '" + path + "': directory '" + directory + "' does not exist");
  if (dir_kind != PathKind::Directory)
    throw FileError("cannot write " + what + " '" + path + "': '" + directory + "' is not a directory");
  check_replaceable(path, what);
  const std::string& probe = kind == PathKind::Missing ? directory : path;
  if (::access(probe.c_str(), W_OK) != 0) fail(what, path, "write", errno);
}

void check_new_or_forced(const std::string& path, const std::string& what, bool force) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || force) return;
  throw FileError(what + " '" + path + "' already exists; pass --force to replace it");
}

bool create_exclusively(const std::string& path, const std::string& what) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    fail(what, path, "create", errno);
  }
  if (::close(fd) != 0) fail(what, path, "create", errno);
  return true;
}

void ensure_directory(const std::string& path, const std::string& what) {
  if (path.empty()) throw FileError(what + ": empty directory name");
  PathKind kind = kind_of(path);
  if (kind == PathKind::Directory) return;
  if (kind != PathKind::Missing) throw FileError(what + " '" + path + "' exists and is not a directory");
  std::string parent = directory_of(path);
  if (parent != path && parent != "." && parent != "/") ensure_directory(parent, what);
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) fail(what, path, "create", errno);
}

}  // namespace passcheck::io
