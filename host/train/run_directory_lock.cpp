// Exclusive ownership of a run directory through flock(2) on runs/<name>/.lock; see
// run_directory_lock.hpp.
#include "train/run_directory_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "recipe/errors.hpp"

namespace fs = std::filesystem;

namespace loom::host {
namespace {

// How long a refused process waits for the owner's record to appear: the owner writes it
// microseconds after taking the lock, so only a look in between ever needs a second try.
constexpr auto kOwnerRecordWait = std::chrono::seconds(2);
constexpr auto kOwnerRecordPoll = std::chrono::milliseconds(10);

[[noreturn]] void fail(const fs::path& path, const std::string& what, int error) {
  throw std::runtime_error(fmt::format("{}: {} failed: {}", path.string(), what, std::strerror(error)));
}

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[32] = {};
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

bool process_is_alive(long pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

// Truncate first, then write: a reader sees an empty or torn record (and looks again), never a
// mix of this record and a dead owner's.
void write_owner(int fd, const fs::path& path) {
  const nlohmann::json record{{"pid", static_cast<long>(::getpid())}, {"host", this_host()}, {"since", utc_now()}};
  const std::string line = record.dump() + "\n";
  if (::ftruncate(fd, 0) != 0) fail(path, "truncating the lock file", errno);
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::pwrite(fd, line.data() + done, line.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, "writing the owner into the lock file", errno);
    done += static_cast<size_t>(n);
  }
}

std::string describe_owner(const fs::path& run_directory, const std::optional<RunDirectoryOwner>& owner) {
  if (!owner)
    return fmt::format("owner unknown: {} holds no owner record",
                       RunDirectoryLock::lock_file(run_directory).string());
  return fmt::format("pid {}, host {}, since {}", owner->pid, owner->host, owner->since);
}

}  // namespace

fs::path RunDirectoryLock::lock_file(const fs::path& run_directory) {
  return run_directory / ".lock";
}

std::optional<RunDirectoryOwner> RunDirectoryLock::read_owner(const fs::path& run_directory) {
  std::ifstream in(lock_file(run_directory));
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  const std::string line = text.str();
  if (line.empty() || line.back() != '\n') return std::nullopt;  // being written
  const nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (record.is_discarded() || !record.is_object() || !record.contains("pid") || !record["pid"].is_number_integer() ||
      !record.contains("host") || !record["host"].is_string() || !record.contains("since") ||
      !record["since"].is_string())
    return std::nullopt;
  return RunDirectoryOwner{record["pid"].get<long>(), record["host"].get<std::string>(),
                           record["since"].get<std::string>()};
}

RunDirectoryLock RunDirectoryLock::acquire(const fs::path& run_directory) {
  fs::create_directories(run_directory);
  const fs::path path = lock_file(run_directory);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, "opening the run directory's lock file", errno);
  RunDirectoryLock lock(run_directory, fd);  // closes the descriptor on every way out

  const auto deadline = std::chrono::steady_clock::now() + kOwnerRecordWait;
  std::optional<RunDirectoryOwner> owner;
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      write_owner(fd, path);
      return lock;
    }
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK)
      fail(path, "locking (flock; the run directory must be on a file system that supports it)", errno);
    owner = read_owner(run_directory);
    // An owner record of a process that no longer runs here was left by a dead owner: the live
    // one has locked the file but not yet written its own record.
    const bool current = owner && (owner->host != this_host() || process_is_alive(owner->pid));
    if (current || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(kOwnerRecordPoll);
  }
  throw RunDirectoryInUse(fmt::format("{} is in use by loom run ({}); wait for it or choose another run.name",
                                      run_directory.string(), describe_owner(run_directory, owner)));
}

RunDirectoryLock::RunDirectoryLock(fs::path run_directory, int fd)
    : run_directory_(std::move(run_directory)), fd_(fd) {}

RunDirectoryLock::RunDirectoryLock(RunDirectoryLock&& other) noexcept
    : run_directory_(std::move(other.run_directory_)), fd_(other.fd_) {
  other.fd_ = -1;
}

RunDirectoryLock& RunDirectoryLock::operator=(RunDirectoryLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    run_directory_ = std::move(other.run_directory_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

RunDirectoryLock::~RunDirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor of the open file releases the flock
}

}  // namespace loom::host
