// Atomic file replacement (see atomic_file.hpp): temp file + fsync + rename + directory fsync.
#include "files/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace loom::host {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const char* what, int error) {
  throw std::runtime_error(path.string() + ": " + what + " failed: " + std::strerror(error));
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

void write_all(int fd, const std::byte* data, std::size_t size, const std::filesystem::path& path) {
  while (size > 0) {
    ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail(path, "write", errno);
    }
    data += written;
    size -= static_cast<std::size_t>(written);
  }
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes,
                           std::filesystem::perms permissions) {
  std::filesystem::path directory = path.parent_path();
  if (directory.empty()) directory = ".";
  // mkstemp gives a unique name, so concurrent writers of one target never share a temp file.
  // (Built by appends: GCC 12 reports a false -Wrestrict on chained std::string operator+.)
  std::string temporary_name = ".";
  temporary_name.append(path.filename().string()).append(".tmp-XXXXXX");
  std::string pattern = (directory / temporary_name).string();
  FileDescriptor file(::mkstemp(pattern.data()));
  if (file.get() < 0) fail(path, "creating a temporary file in its directory (mkstemp)", errno);
  const std::filesystem::path temporary = pattern;
  try {
    write_all(file.get(), bytes.data(), bytes.size(), temporary);
    // mkstemp creates 0600; checkpoints are meant to be shared (kSharedFile). (Reading the umask
    // would mean changing it, which races with other threads.)
    if (::fchmod(file.get(), static_cast<mode_t>(permissions & std::filesystem::perms::mask)) != 0)
      fail(temporary, "fchmod", errno);
    if (::fsync(file.get()) != 0) fail(temporary, "fsync", errno);
    if (::close(file.release()) != 0) fail(temporary, "close", errno);
    if (::rename(temporary.c_str(), path.c_str()) != 0) fail(path, "rename from the temporary file", errno);
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
  FileDescriptor dir(::open(directory.c_str(), O_RDONLY | O_DIRECTORY));
  if (dir.get() < 0 || ::fsync(dir.get()) != 0) fail(directory, "fsync of the directory", errno);
}

void write_file_atomically(const std::filesystem::path& path, std::string_view text,
                           std::filesystem::perms permissions) {
  write_file_atomically(path, std::as_bytes(std::span<const char>(text.data(), text.size())), permissions);
}

}  // namespace loom::host
