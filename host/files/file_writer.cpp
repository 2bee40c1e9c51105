// FileWriter: atomic replacement of regular files, checked in-place writes to devices and FIFOs.
#include "files/file_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace fs = std::filesystem;

namespace loom::host {
namespace {

constexpr size_t kBufferBytes = size_t{1} << 20;

[[noreturn]] void fail(const fs::path& path, const std::string& what, int error) {
  throw FileWriteError(path.string() + ": " + what + " failed: " + std::strerror(error));
}

[[noreturn]] void refuse(const fs::path& path, const std::string& why) {
  throw FileWriteError(path.string() + ": cannot be written: " + why);
}

// The file a write to `path` should replace: a symbolic link's target, so the link stays.
fs::path replaced_file(const fs::path& path) {
  std::error_code error;
  if (!fs::is_symlink(fs::symlink_status(path, error))) return path;
  const fs::path target = fs::weakly_canonical(path, error);
  return error ? path : target;
}

// The rename of a file into `target` is durable only once its folder is.
void sync_folder_of(const fs::path& target) {
  fs::path directory = target.parent_path();
  if (directory.empty()) directory = ".";
  const int dir = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) fail(directory, "fsync of the folder", errno);
  const bool synced = ::fsync(dir) == 0;
  const int error = errno;
  ::close(dir);
  if (!synced) fail(directory, "fsync of the folder", error);
}

}  // namespace

FileWriter::FileWriter(fs::path path, fs::perms permissions)
    : path_(std::move(path)), target_(replaced_file(path_)), permissions_(permissions) {
  struct stat info {};
  if (::stat(target_.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    if (S_ISDIR(info.st_mode)) refuse(path_, "it is a folder");
    // A device or FIFO cannot be renamed over: write it in place.
    fd_ = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd_ < 0) fail(path_, "opening for writing", errno);
    return;
  }
  fs::path directory = target_.parent_path();
  if (directory.empty()) directory = ".";
  std::error_code error;
  if (!fs::exists(directory, error)) refuse(path_, "the folder " + directory.string() + " does not exist");
  if (!fs::is_directory(directory, error)) refuse(path_, directory.string() + " is not a folder");
  // mkstemp gives a unique name, so concurrent writers of one target never share a temporary.
  // (Built by appends: GCC 12 reports a false -Wrestrict on chained std::string operator+.)
  std::string name = ".";
  name.append(target_.filename().string()).append(".tmp-XXXXXX");
  std::string pattern = (directory / name).string();
  fd_ = ::mkstemp(pattern.data());
  if (fd_ < 0) refuse(path_, "creating a file in " + directory.string() + " failed: " + std::strerror(errno));
  temporary_ = pattern;
}

FileWriter::~FileWriter() {
  discard();
}

void FileWriter::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
  temporary_.clear();
  buffer_.clear();
}

void FileWriter::write(std::span<const std::byte> bytes) {
  if (fd_ < 0) throw std::logic_error(path_.string() + ": written after commit");
  if (buffer_.size() + bytes.size() > kBufferBytes) flush();
  if (bytes.size() >= kBufferBytes) {  // a large block (a checkpoint's tensors) goes straight out
    write_out(bytes.data(), bytes.size());
    return;
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

void FileWriter::write(std::string_view text) {
  write(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

void FileWriter::flush() {
  write_out(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void FileWriter::write_out(const std::byte* data, size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd_, data, size);
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) {
      const int error = errno;
      discard();
      fail(path_, "write", error);
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
}

void FileWriter::commit() {
  if (fd_ < 0) throw std::logic_error(path_.string() + ": committed twice");
  flush();
  auto step = [&](bool ok, const char* what) {
    if (ok) return;
    const int error = errno;
    discard();
    fail(path_, what, error);
  };
  if (temporary_.empty()) {  // a device or FIFO: the close reports what the writes did not
    const int fd = fd_;
    fd_ = -1;
    step(::close(fd) == 0, "close");
    return;
  }
  // mkstemp creates 0600; most files are meant to be shared (kSharedFile). (Reading the umask
  // would mean changing it, which races with other threads.)
  step(::fchmod(fd_, static_cast<mode_t>(permissions_ & fs::perms::mask)) == 0, "fchmod");
  step(::fsync(fd_) == 0, "fsync");
  const int fd = fd_;
  fd_ = -1;
  step(::close(fd) == 0, "close");
  step(::rename(temporary_.c_str(), target_.c_str()) == 0, "rename from the temporary file");
  temporary_.clear();
  sync_folder_of(target_);
}

void publish_file(const fs::path& temporary, const fs::path& target) {
  const int fd = ::open(temporary.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(target, "opening the finished temporary file for fsync", errno);
  const bool synced = ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  if (!synced) fail(target, "fsync", error);
  if (::rename(temporary.c_str(), target.c_str()) != 0) fail(target, "rename from the temporary file", errno);
  sync_folder_of(target);
}

}  // namespace loom::host
