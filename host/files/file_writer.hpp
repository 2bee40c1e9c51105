// FileWriter: the one way the host writes a file, so that no failure is silent and no reader or
// crash sees half a file.
//
// A regular file (or a path that does not exist yet) is replaced atomically: the bytes go to a
// temporary file created owner-only (mkstemp) in the target's folder, and commit() fsyncs it,
// closes it, renames it over the target and fsyncs the folder. Until commit() the target is
// untouched; a writer destroyed without commit() (an exception on the way) removes its temporary.
// A target that is not a regular file — a device (/dev/stdout, /dev/full), a FIFO, a socket —
// cannot be renamed over, so it is written in place: every write checked, and the close.
// A symbolic link is followed: the file it names is replaced and the link stays.
//
// Every failure throws FileWriteError naming the path, the step and the system's reason:
// "out/predictions.jsonl: cannot be written: out does not exist", "/dev/full: write failed: No
// space left on device". Writes are buffered (1 MiB), so a failure may surface on a later write()
// or on commit(); nothing counts as written before commit() returns.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace loom::host {

/// Mode of the files written here unless asked otherwise: rw-r--r--.
inline constexpr std::filesystem::perms kSharedFile =
    std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
    std::filesystem::perms::group_read | std::filesystem::perms::others_read;

/// A file the host writes could not be written. Its own type, so a guard around plugin calls
/// (Component::call) passes it on unchanged rather than blaming the plugin whose call was running.
class FileWriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class FileWriter {
 public:
  /// Opens `path` for writing (see above); a new regular file gets mode `permissions`.
  explicit FileWriter(std::filesystem::path path, std::filesystem::perms permissions = kSharedFile);
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;
  /// Without commit(): closes and removes the temporary; the target keeps its old content.
  ~FileWriter();

  void write(std::span<const std::byte> bytes);
  void write(std::string_view text);
  /// Makes the content the target's: flush, fsync, close, rename, folder fsync (atomic targets);
  /// flush and close (devices, FIFOs). Throws naming the path; after a throw the target is
  /// unchanged (atomic targets) and the writer is finished.
  void commit();

  /// The path as given.
  const std::filesystem::path& path() const { return path_; }

 private:
  void flush();
  void write_out(const std::byte* data, size_t size);
  void discard() noexcept;

  std::filesystem::path path_;       // as given: named in errors
  std::filesystem::path target_;     // the file replaced (a symbolic link's target)
  std::filesystem::path temporary_;  // empty when written in place
  std::filesystem::perms permissions_;
  int fd_ = -1;
  std::vector<std::byte> buffer_;
};

/// For a file another library wrote by path (HDF5 shards): fsyncs the finished `temporary`, renames
/// it over `target` and fsyncs the folder, as FileWriter::commit does. Throws FileWriteError naming
/// `target`.
void publish_file(const std::filesystem::path& temporary, const std::filesystem::path& target);

}  // namespace loom::host
