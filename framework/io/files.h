// Checked file access for every file passcheck reads or writes (graph files, repro
// files, dumps, reports). Each failure throws FileError naming the path and the OS
// reason ("No space left on device", "is a directory"), so no write fails silently and
// no error reaches the user without the file it concerns. Standard library only.
#pragma once

#include <stdexcept>
#include <string>

namespace passcheck::io {

/// A file could not be read or written; what() names the path and the reason.
class FileError : public std::runtime_error {
 public:
  explicit FileError(const std::string& message) : std::runtime_error(message) {}
};

/// The whole content of a regular file. `what` names the file's role in messages
/// ("graph file", "repro file"). Throws FileError for a missing file, a directory, a
/// read error, or a file larger than `max_bytes`.
std::string read_file(const std::string& path, const std::string& what, size_t max_bytes = size_t(1) << 30);

/// Writes `content` to `path` in place (creating or truncating it) and checks every
/// step, closing included (a full disk is reported, not lost). For stdout-like
/// targets (/dev/stdout, a pipe) as well as regular files. `sync` false skips the fsync
/// of a regular file (for scratch files no power cut must survive).
void write_file(const std::string& path, const std::string& content, const std::string& what, bool sync = true);

/// Writes `content` to `path` atomically: a temporary file next to it, then a rename,
/// so a crash never leaves half a file. Refuses (FileError) when `path` exists and is
/// not a regular file (a device node, a directory), and removes the temporary file on
/// every failure. `sync` false skips the fsync (see write_file).
void write_file_atomically(const std::string& path, const std::string& content, const std::string& what,
                           bool sync = true);

/// Creates `path` as an empty regular file only when nothing exists there (O_EXCL), so
/// a caller never takes over a file someone else wrote. Returns false when `path`
/// exists; FileError for every other failure (the OS reason named).
bool create_exclusively(const std::string& path, const std::string& what);

/// Creates `path` and its parents as directories when missing; FileError when that is
/// impossible or `path` exists and is not a directory.
void ensure_directory(const std::string& path, const std::string& what);

/// Checks, before long work, that `path` can be written later: its directory exists and
/// is writable and `path` is not a directory. FileError with the reason otherwise.
void check_writable(const std::string& path, const std::string& what);

/// For outputs that must not silently replace earlier work (a repro file): FileError
/// naming `path` and --force when something exists there and `force` is false.
void check_new_or_forced(const std::string& path, const std::string& what, bool force);

/// Every writer above refuses (FileError) to write through or replace a symbolic link
/// (the standard streams' names under /dev and /proc excepted) and to replace a file
/// without write permission; an atomic replacement keeps the replaced file's mode.

/// The file's type for messages and checks.
enum class PathKind { Missing, Regular, Directory, Other };
PathKind kind_of(const std::string& path);

}  // namespace passcheck::io
