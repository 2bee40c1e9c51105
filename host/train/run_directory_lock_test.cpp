// Run-directory ownership: one owner at a time, a refusal naming the owner, release on exit and
// on SIGKILL, stale .lock files never blocking.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "recipe/errors.hpp"
#include "train/run_directory_lock.hpp"

namespace fs = std::filesystem;

namespace loom::host {
namespace {

class RunDirectory : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/loom-lock-XXXXXX";
    root_ = mkdtemp(pattern);
    run_ = root_ / "runs" / "bert";
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_, run_;
};

std::string hostname() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

// The message a refused `acquire` gives, or "" when it was not refused.
std::string refusal(const fs::path& run) {
  try {
    RunDirectoryLock lock = RunDirectoryLock::acquire(run);
  } catch (const RunDirectoryInUse& e) {
    return e.what();
  }
  return "";
}

TEST_F(RunDirectory, SecondOwnerIsRefusedWithThePidHostAndStart) {
  const RunDirectoryLock owner = RunDirectoryLock::acquire(run_);
  EXPECT_TRUE(fs::is_directory(run_));
  const std::string message = refusal(run_);
  const std::string expected_start = run_.string() + " is in use by loom run (pid " + std::to_string(getpid()) +
                                     ", host " + hostname() + ", since 20";
  EXPECT_EQ(message.rfind(expected_start, 0), 0u) << message;
  const std::string expected_end = "Z); wait for it or choose another run.name";
  ASSERT_GE(message.size(), expected_end.size());
  EXPECT_EQ(message.substr(message.size() - expected_end.size()), expected_end) << message;
}

TEST_F(RunDirectory, ReleasedWhenTheOwnerEnds) {
  { const RunDirectoryLock owner = RunDirectoryLock::acquire(run_); }
  EXPECT_EQ(refusal(run_), "");
  EXPECT_TRUE(fs::exists(RunDirectoryLock::lock_file(run_)));  // the file stays; only the flock matters
}

TEST_F(RunDirectory, StaleLockFileOfADeadProcessNeverBlocks) {
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  waitpid(dead, nullptr, 0);
  fs::create_directories(run_);
  std::ofstream(RunDirectoryLock::lock_file(run_))
      << "{\"pid\":" << dead << ",\"host\":\"" << hostname() << "\",\"since\":\"2026-01-01T00:00:00Z\"}\n";

  const RunDirectoryLock owner = RunDirectoryLock::acquire(run_);
  const auto recorded = RunDirectoryLock::read_owner(run_);
  ASSERT_TRUE(recorded.has_value());
  EXPECT_EQ(recorded->pid, getpid());
  EXPECT_EQ(recorded->host, hostname());
}

TEST_F(RunDirectory, KernelReleasesTheLockOfAKilledOwner) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    const RunDirectoryLock owner = RunDirectoryLock::acquire(run_);
    const char byte = 1;
    if (write(ready[1], &byte, 1) != 1) _exit(1);
    for (;;) pause();  // held until SIGKILL
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);

  const std::string message = refusal(run_);
  EXPECT_NE(message.find("(pid " + std::to_string(child) + ", host "), std::string::npos) << message;

  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(refusal(run_), "");
}

TEST_F(RunDirectory, OwnerRecordIsReadBack) {
  EXPECT_FALSE(RunDirectoryLock::read_owner(run_).has_value());
  const RunDirectoryLock owner = RunDirectoryLock::acquire(run_);
  const auto recorded = RunDirectoryLock::read_owner(run_);
  ASSERT_TRUE(recorded.has_value());
  EXPECT_EQ(recorded->pid, getpid());
  EXPECT_EQ(recorded->since.size(), 20u) << recorded->since;  // 2026-11-23T09:30:12Z
}

}  // namespace
}  // namespace loom::host
