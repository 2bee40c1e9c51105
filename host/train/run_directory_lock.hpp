// RunDirectoryLock: one run owns runs/<name> (docs/training.md, "Who owns a run directory").
//
// `acquire` creates the run directory, opens runs/<name>/.lock and takes an exclusive, non-blocking
// flock(2) on it, then writes the owner (one JSON line: pid, host, since) into the file for the
// message others get. The lock lives as long as the object; the kernel drops it when the process
// exits or is killed, so a .lock file left by a dead process never blocks anyone (the file itself
// stays: removing it would let two processes lock two different files of one name).
//
// A second owner is refused with RunDirectoryInUse (exit 2):
//   runs/<name> is in use by loom run (pid N, host H, since T); wait for it or choose another run.name
//
// `loom run` takes the lock before it reads or writes anything in the directory (checkpoint
// resolution, leftover cleanup, metrics). Under MPI only rank 0 takes it, since the directory is
// shared by design and rank 0 is its only writer.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace loom::host {

/// Who holds a run directory, as written in its .lock file.
struct RunDirectoryOwner {
  long pid = 0;
  std::string host;
  std::string since;  ///< UTC, ISO 8601 ("2026-11-23T09:30:12Z")
};

class RunDirectoryLock {
 public:
  /// Takes `run_directory` (created if missing) for this process; throws RunDirectoryInUse when
  /// another process holds it, std::runtime_error when the lock cannot be taken at all.
  static RunDirectoryLock acquire(const std::filesystem::path& run_directory);

  RunDirectoryLock(RunDirectoryLock&& other) noexcept;
  RunDirectoryLock& operator=(RunDirectoryLock&& other) noexcept;
  RunDirectoryLock(const RunDirectoryLock&) = delete;
  RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;
  /// Releases the lock (the .lock file stays, naming its last owner).
  ~RunDirectoryLock();

  const std::filesystem::path& run_directory() const { return run_directory_; }

  /// runs/<name>/.lock.
  static std::filesystem::path lock_file(const std::filesystem::path& run_directory);
  /// The owner recorded in a .lock file, or nullopt when it holds no complete record.
  static std::optional<RunDirectoryOwner> read_owner(const std::filesystem::path& run_directory);

 private:
  RunDirectoryLock(std::filesystem::path run_directory, int fd);

  std::filesystem::path run_directory_;
  int fd_ = -1;
};

}  // namespace loom::host
