// Checkpoint directories: atomic commit, verification, latest, pruning, crash and failure leftovers;
// metrics.jsonl continuation.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "checkpoint/checkpoint_store.hpp"
#include "metrics/metrics_log.hpp"

namespace fs = std::filesystem;

namespace loom::host {
namespace {

class TempRun : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/loom-ckpt-XXXXXX";
    root_ = mkdtemp(pattern);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(TempRun, CommitWritesManifestAndLatest) {
  CheckpointStore store(root_ / "checkpoints", 3);
  const fs::path done = store.commit(500, [](const fs::path& dir) {
    write_text(dir / "model.safetensors", "weights");
    write_text(dir / "state.json", "{}");
  });
  EXPECT_EQ(done, root_ / "checkpoints" / "step-000500");
  EXPECT_EQ(read_text(root_ / "checkpoints" / "latest"), "step-000500\n");
  const std::string manifest = read_text(done / "MANIFEST");
  EXPECT_NE(manifest.find("  model.safetensors\n"), std::string::npos);
  EXPECT_NE(manifest.find("  state.json\n"), std::string::npos);
  EXPECT_EQ(CheckpointStore::verify(done), "");
  EXPECT_EQ(store.resolve("auto"), done);
}

TEST_F(TempRun, KeepsOnlyTheNewestK) {
  CheckpointStore store(root_ / "checkpoints", 2);
  for (uint64_t step : {100, 200, 300, 400})
    store.commit(step, [](const fs::path& dir) { write_text(dir / "a", "x"); });
  const auto all = store.complete();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].filename(), "step-000300");
  EXPECT_EQ(all[1].filename(), "step-000400");
}

TEST_F(TempRun, RotationOrdersByStepNumberPastSixDigits) {
  // "step-1000000" sorts before "step-999999" by name; rotation must keep the newest by number.
  CheckpointStore store(root_ / "checkpoints", 2);
  for (uint64_t step : {999998, 999999, 1000000, 1000001})
    store.commit(step, [](const fs::path& dir) { write_text(dir / "a", "x"); });
  const auto all = store.complete();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].filename(), "step-1000000");
  EXPECT_EQ(all[1].filename(), "step-1000001");
  EXPECT_EQ(store.latest(), root_ / "checkpoints" / "step-1000001");
}

TEST_F(TempRun, AFailedCommitNeverRotatesAwayTheNewestCheckpoint) {
  // A checkpoint whose writer refuses (a state that is not finite, a full disk) leaves the
  // earlier ones, `latest` included, exactly as they were.
  CheckpointStore store(root_ / "checkpoints", 1);
  store.commit(5, [](const fs::path& dir) { write_text(dir / "a", "finite"); });
  for (uint64_t step : {6, 8, 10})
    EXPECT_THROW(store.commit(step, [](const fs::path&) { throw std::runtime_error("not finite"); }),
                 std::runtime_error);
  const auto all = store.complete();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].filename(), "step-000005");
  EXPECT_EQ(read_text(root_ / "checkpoints" / "latest"), "step-000005\n");
  EXPECT_EQ(CheckpointStore::verify(all[0]), "");
}

TEST_F(TempRun, FailedCommitRemovesItsPartialDirectoryAndKeepsThePreviousCheckpoint) {
  CheckpointStore store(root_ / "checkpoints", 3);
  store.commit(100, [](const fs::path& dir) { write_text(dir / "a", "x"); });
  EXPECT_THROW(store.commit(200,
                            [](const fs::path& dir) {
                              write_text(dir / "a", "half");
                              throw std::runtime_error("No space left on device");
                            }),
               std::runtime_error);
  EXPECT_FALSE(fs::exists(root_ / "checkpoints" / ".partial-step-000200"));
  EXPECT_EQ(read_text(root_ / "checkpoints" / "latest"), "step-000100\n");
  EXPECT_EQ(store.resolve("auto"), root_ / "checkpoints" / "step-000100");
}

TEST_F(TempRun, PartialDirectoriesOfAKilledRunAreRemovedAndNamed) {
  CheckpointStore store(root_ / "checkpoints", 3);
  EXPECT_TRUE(store.remove_partial().empty());  // no checkpoints/ yet
  store.commit(100, [](const fs::path& dir) { write_text(dir / "a", "x"); });
  fs::create_directories(root_ / "checkpoints" / ".partial-step-000200");
  write_text(root_ / "checkpoints" / ".partial-step-000200" / "model.safetensors", "half");
  const auto removed = store.remove_partial();
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0], root_ / "checkpoints" / ".partial-step-000200");
  EXPECT_FALSE(fs::exists(removed[0]));
  EXPECT_EQ(store.resolve("auto"), root_ / "checkpoints" / "step-000100");
}

TEST_F(TempRun, DamagedCheckpointIsRefusedAndThePreviousOneOffered) {
  CheckpointStore store(root_ / "checkpoints", 3);
  store.commit(100, [](const fs::path& dir) { write_text(dir / "model.safetensors", "good"); });
  const fs::path newest =
      store.commit(200, [](const fs::path& dir) { write_text(dir / "model.safetensors", "good2"); });
  write_text(newest / "model.safetensors", "bitrot");
  try {
    store.resolve("auto");
    FAIL() << "damaged checkpoint accepted";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("step-000200 is damaged: model.safetensors does not match its sha256"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("--resume " + (root_ / "checkpoints" / "step-000100").string()), std::string::npos)
        << message;
  }
  EXPECT_EQ(store.resolve((root_ / "checkpoints" / "step-000100").string()),
            root_ / "checkpoints" / "step-000100");
}

TEST_F(TempRun, AManifestNameThatCannotBeLookedUpIsAProblemNotAnException) {
  CheckpointStore store(root_ / "checkpoints", 3);
  const fs::path done = store.commit(100, [](const fs::path& dir) { write_text(dir / "state.json", "{}"); });
  const std::string name(300, 'x');  // longer than a file name may be
  std::ofstream(done / "MANIFEST", std::ios::app) << std::string(64, '0') << "  " << name << "\n";
  const std::string problem = CheckpointStore::verify(done);
  EXPECT_NE(problem.find(name + " cannot be looked up: File name too long"), std::string::npos) << problem;
  EXPECT_THROW(store.resolve("auto"), std::runtime_error);
}

TEST_F(TempRun, NoCheckpointMeansFreshStart) {
  CheckpointStore store(root_ / "checkpoints", 3);
  EXPECT_FALSE(store.resolve("auto").has_value());
}

std::vector<std::string> read_lines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_F(TempRun, MetricsLogOnResumeDropsRecordsAfterTheResumedStep) {
  const fs::path path = root_ / "metrics.jsonl";
  {
    MetricsLog log(path, 0);
    EXPECT_EQ(log.dropped(), 0u);
    for (int step = 10; step <= 50; step += 10) log.write({{"type", "train"}, {"step", step}, {"loss", 1.0}});
  }
  std::ofstream(path, std::ios::app) << "{\"type\": \"train\", \"st";  // torn line from a kill
  {
    MetricsLog log(path, 30);
    EXPECT_EQ(log.dropped(), 3u);  // steps 40 and 50, and the torn line
    log.write({{"type", "train"}, {"step", 40}, {"loss", 0.5}});
  }
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[2].find("\"step\":30"), std::string::npos);
  EXPECT_NE(lines[3].find("\"loss\":0.5"), std::string::npos);
}

TEST_F(TempRun, MetricsLogContinuesTheFileItNeverTruncates) {
  const fs::path path = root_ / "metrics.jsonl";
  { MetricsLog(path, 0).write({{"type", "train"}, {"step", 1}}); }
  {
    MetricsLog log(path, 1);  // resumed at the last recorded step: nothing to drop
    EXPECT_EQ(log.dropped(), 0u);
    log.write({{"type", "train"}, {"step", 2}});
  }
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("\"step\":1"), std::string::npos);
  EXPECT_NE(lines[1].find("\"step\":2"), std::string::npos);
}

TEST_F(TempRun, MetricsLogOfAFreshStartDropsAnEarlierAttemptsRecords) {
  const fs::path path = root_ / "metrics.jsonl";
  { MetricsLog(path, 0).write({{"type", "train"}, {"step", 5}}); }
  MetricsLog log(path, 0);
  EXPECT_EQ(log.dropped(), 1u);
  EXPECT_TRUE(read_lines(path).empty());
}

TEST(ProgressLine, ShowsStepLossLrScaleThroughputAndEta) {
  EXPECT_EQ(format_progress_line(120, 2000, 7.12345, 1.2e-3, 65536, 312.44, 312),
            "step 120/2000 | loss 7.1235 | lr 1.20e-03 | scale 65536 | 312.4 seq/s | ETA 5m12s");
  EXPECT_EQ(format_duration(3725), "1h02m");
  EXPECT_EQ(format_duration(42), "42s");
}

}  // namespace
}  // namespace loom::host
