// FileWriter and standard output: every failure to write is an error naming the path; a file
// appears whole or not at all; devices and FIFOs are written in place and checked through close.
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "files/atomic_file.hpp"
#include "files/file_writer.hpp"
#include "files/standard_output.hpp"

namespace fs = std::filesystem;

namespace loom::host {
namespace {

class FileWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/loom-file-writer-XXXXXX";
    root_ = mkdtemp(pattern);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Names in the folder, so a test can see that no temporary was left behind.
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(root_)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  fs::path root_;
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The message of the FileWriteError `write` throws; "" when it throws none.
template <typename Write>
std::string failure(Write&& write) {
  try {
    write();
  } catch (const FileWriteError& e) {
    return e.what();
  }
  return "";
}

TEST_F(FileWriterTest, TheFileAppearsOnlyAtCommitWithItsMode) {
  const fs::path path = root_ / "predictions.tsv";
  std::ofstream(path) << "old\n";
  FileWriter writer(path);
  writer.write("a\t1\n");
  writer.write(std::string(3 << 20, 'x'));  // past the buffer: written straight out
  EXPECT_EQ(read_text(path), "old\n");
  writer.commit();
  EXPECT_EQ(read_text(path).size(), 4u + (3u << 20));
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::mask, kSharedFile);
  EXPECT_EQ(listing(), std::vector<std::string>{"predictions.tsv"});
}

TEST_F(FileWriterTest, AWriterNotCommittedLeavesTheTargetAndNoTemporary) {
  const fs::path path = root_ / "out.jsonl";
  std::ofstream(path) << "kept\n";
  {
    FileWriter writer(path);
    writer.write("half of it");
  }
  EXPECT_EQ(read_text(path), "kept\n");
  EXPECT_EQ(listing(), std::vector<std::string>{"out.jsonl"});
}

TEST_F(FileWriterTest, AMissingFolderIsNamed) {
  const std::string message = failure([&] { FileWriter writer(root_ / "no-such-folder" / "out.tsv"); });
  EXPECT_NE(message.find((root_ / "no-such-folder" / "out.tsv").string() + ": cannot be written"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("does not exist"), std::string::npos) << message;
}

TEST_F(FileWriterTest, AFolderAsTargetIsRefused) {
  fs::create_directories(root_ / "predictions.json");
  EXPECT_NE(failure([&] { write_file_atomically(root_ / "predictions.json", "{}"); }).find("it is a folder"),
            std::string::npos);
}

TEST_F(FileWriterTest, AFolderThatRefusesFilesIsNamed) {
  // /proc takes no new files, even from root (a read-only folder would not stop root).
  const std::string message = failure([&] { FileWriter writer("/proc/loom-output.tsv"); });
  EXPECT_NE(message.find("/proc/loom-output.tsv: cannot be written: creating a file in /proc failed"),
            std::string::npos)
      << message;
}

TEST_F(FileWriterTest, AFullDeviceFailsOnCommitNamingIt) {
  ASSERT_TRUE(fs::exists("/dev/full"));
  const std::string message = failure([&] {
    FileWriter writer("/dev/full");
    writer.write("one prediction\n");
    writer.commit();
  });
  EXPECT_NE(message.find("/dev/full: write failed: No space left on device"), std::string::npos) << message;
  EXPECT_TRUE(fs::is_character_file("/dev/full"));  // written in place, never renamed over
}

TEST_F(FileWriterTest, DevicesAndFifosAreWrittenInPlace) {
  write_file_atomically("/dev/null", "discarded\n");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  const fs::path fifo = root_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  FILE* reader = std::fopen(fifo.c_str(), "r+");  // read-write: opening does not block
  ASSERT_NE(reader, nullptr);
  write_file_atomically(fifo, "through the pipe\n");
  char line[64] = {};
  ASSERT_NE(std::fgets(line, sizeof line, reader), nullptr);
  EXPECT_STREQ(line, "through the pipe\n");
  std::fclose(reader);
  EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST_F(FileWriterTest, ASymbolicLinkIsFollowed) {
  std::ofstream(root_ / "real.txt") << "old\n";
  fs::create_symlink(root_ / "real.txt", root_ / "link.txt");
  write_file_atomically(root_ / "link.txt", "new\n");
  EXPECT_TRUE(fs::is_symlink(root_ / "link.txt"));
  EXPECT_EQ(read_text(root_ / "real.txt"), "new\n");
}

TEST(StandardOutput, AFullDeviceIsAnErrorNamingStandardOutput) {
  // In a child: the test runner's own stdout must stay open.
  EXPECT_EXIT(
      {
        if (std::freopen("/dev/full", "w", stdout) == nullptr) std::exit(4);
        std::cout << "a result line\n";
        try {
          close_standard_output();
        } catch (const std::exception& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::exit(3);
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(3), "standard output: write failed: No space left on device");
}

TEST(StandardOutput, AWorkingStandardOutputClosesQuietly) {
  EXPECT_EXIT(
      {
        if (std::freopen("/dev/null", "w", stdout) == nullptr) std::exit(4);
        std::cout << "a result line\n";
        close_standard_output();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace loom::host
