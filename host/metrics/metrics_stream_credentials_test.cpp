// The metrics stream's endpoint and token files: random tokens, an owner-only token file (also when
// it replaces a world-readable one), what a client reads back and why it cannot, and finding the
// run under a runs directory that listens on an address.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "metrics/metrics_stream_credentials.hpp"

namespace loom::host {
namespace {
namespace fs = std::filesystem;

fs::path fresh_directory(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("loom-stream-credentials-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

unsigned mode_of(const fs::path& path) {
  struct stat s{};
  return ::stat(path.c_str(), &s) == 0 ? s.st_mode & 07777 : 0xFFFFu;
}

TEST(MetricsStreamCredentials, TokensAreRandomHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string token = random_stream_token();
    ASSERT_EQ(token.size(), 64u);
    ASSERT_EQ(token.find_first_not_of("0123456789abcdef"), std::string::npos) << token;
    seen.insert(token);
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(MetricsStreamCredentials, TheTokenFileIsOwnerOnlyAndReadsBack) {
  const fs::path run = fresh_directory("write");
  { std::ofstream(run / kStreamTokenFile) << "stale\n"; }
  fs::permissions(run / kStreamTokenFile, fs::perms::all);
  write_stream_credentials(run, "127.0.0.1:7070", "abc123");
  EXPECT_EQ(mode_of(run / kStreamTokenFile), 0600u) << "a world-readable file is replaced, not rewritten";
  EXPECT_EQ(mode_of(run / kStreamEndpointFile), 0644u);
  for (const auto& entry : fs::directory_iterator(run))
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << "no temporary file is left";
  const FoundStreamCredentials found = read_stream_credentials(run);
  EXPECT_EQ(found.endpoint, "127.0.0.1:7070");
  EXPECT_EQ(found.token, "abc123");
  EXPECT_TRUE(found.token_problem.empty()) << found.token_problem;

  remove_stream_credentials(run);
  remove_stream_credentials(run);  // missing files are fine
  const FoundStreamCredentials gone = read_stream_credentials(run);
  EXPECT_TRUE(gone.endpoint.empty());
  EXPECT_TRUE(gone.token.empty());
  EXPECT_NE(gone.token_problem.find(kStreamTokenFile), std::string::npos) << gone.token_problem;
  fs::remove_all(run);
}

TEST(MetricsStreamCredentials, AnUnreadableTokenSaysWhoCanReadIt) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every file; tests/e2e/metrics_stream_auth_test.py checks this as another user";
  const fs::path run = fresh_directory("unreadable");
  write_stream_credentials(run, "127.0.0.1:7070", "abc123");
  fs::permissions(run / kStreamTokenFile, fs::perms::none);
  const FoundStreamCredentials found = read_stream_credentials(run);
  EXPECT_TRUE(found.token.empty());
  EXPECT_NE(found.token_problem.find("only the run's owner"), std::string::npos) << found.token_problem;
  EXPECT_NE(found.token_problem.find("--token"), std::string::npos) << found.token_problem;
  fs::remove_all(run);
}

TEST(MetricsStreamCredentials, TheRunListeningOnAnAddressIsFoundUnderTheRunsDirectory) {
  const fs::path runs = fresh_directory("find");
  const auto listening = [&](const std::string& name, const std::string& endpoint) {
    fs::create_directories(runs / name);
    write_stream_credentials(runs / name, endpoint, name + "-token");
  };
  listening("a", "127.0.0.1:7070");
  listening("b", "127.0.0.1:7071");
  listening("v6", "[::1]:7072");
  fs::create_directories(runs / "not-listening");
  { std::ofstream(runs / "junk") << "a file, not a run\n"; }
  fs::create_directories(runs / "garbled");
  { std::ofstream(runs / "garbled" / kStreamEndpointFile) << "no address here\n"; }

  EXPECT_EQ(find_run_directory_listening_on({"127.0.0.1", 7071}, runs), runs / "b");
  EXPECT_EQ(find_run_directory_listening_on({"localhost", 7070}, runs), runs / "a") << "loopback names match";
  EXPECT_EQ(find_run_directory_listening_on({"127.0.0.1", 7072}, runs), runs / "v6");
  EXPECT_TRUE(find_run_directory_listening_on({"127.0.0.1", 9}, runs).empty());
  EXPECT_TRUE(find_run_directory_listening_on({"10.0.0.1", 7070}, runs).empty()) << "another host is another run";
  EXPECT_TRUE(find_run_directory_listening_on({"127.0.0.1", 7070}, runs / "absent").empty());

  // A stale endpoint (a run that crashed) and a live one on the same port: the newer wins.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  listening("restarted", "127.0.0.1:7070");
  EXPECT_EQ(find_run_directory_listening_on({"127.0.0.1", 7070}, runs), runs / "restarted");
  fs::remove_all(runs);
}

}  // namespace
}  // namespace loom::host
