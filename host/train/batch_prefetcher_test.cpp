// BatchPrefetcher: the batches read ahead are the batches read one by one (order, content, the
// cursor a checkpoint saves and a resume from it), dataset errors reach the caller with their
// type and message, holds pause reading, and destruction never hangs.
#include "train/batch_prefetcher.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "loom/sdk/error.hpp"
#include "recipe/errors.hpp"

namespace loom::host {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kInstances = 30;  // an epoch: 7 batches of 4 and one of 2
constexpr int32_t kBatch = 4, kSeq = 8;

// A classification dataset whose batches are a function of its cursor: instance i's row holds
// i·100 + column, its label is i mod 3; odd batches are 6 columns wide. It can fail at one batch,
// read slowly, and records which threads call it.
class CountingDataset final : public loom::Dataset {
 public:
  uint64_t fail_at = UINT64_MAX;       // next_batch call that throws
  bool io_error = false;               // throw loom::IoError instead of std::runtime_error
  std::chrono::milliseconds delay{0};  // per batch
  std::atomic<uint64_t> calls{0};
  std::atomic<bool> sigint_blocked{true};  // in every call so far
  std::thread::id caller;

  void open(const loom::DatasetSetup&) override {}
  loom::BatchLimits limits() const override {
    return {.task = loom::BatchTask::classification,
            .batch_size = kBatch,
            .max_seq_length = kSeq,
            .max_predictions = 0,
            .num_labels = 3};
  }
  uint64_t size() const override { return kInstances; }
  uint64_t rank_size() const override { return kInstances; }
  loom::DatasetCursor cursor() const override { return cursor_; }
  void seek(const loom::DatasetCursor& c) override { cursor_ = c; }
  loom::BatchShape next_batch(const loom::BatchBuffers& out) override {
    const uint64_t call = calls.fetch_add(1);
    caller = std::this_thread::get_id();
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, nullptr, &mask);
    if (sigismember(&mask, SIGINT) != 1) sigint_blocked = false;
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    if (call == fail_at) {
      if (io_error) throw loom::IoError("shard.hdf5: row 7 is broken");
      throw std::runtime_error("row 7 is broken");
    }
    const uint64_t first = cursor_.position;
    const auto rows = static_cast<int32_t>(std::min<uint64_t>(kBatch, kInstances - first));
    const int32_t seq = (first / kBatch) % 2 == 0 ? kSeq : 6;
    for (int32_t r = 0; r < rows; ++r) {
      const uint64_t instance = first + static_cast<uint64_t>(r);
      for (int32_t c = 0; c < seq; ++c) {
        out.input_ids[r * seq + c] = static_cast<int32_t>(instance * 100 + static_cast<uint64_t>(c));
        out.attention_mask[r * seq + c] = 1;
        out.token_type_ids[r * seq + c] = 0;
      }
      out.labels[r] = static_cast<int32_t>(instance % 3);
      out.instance_ids[r] = instance;
    }
    const loom::BatchShape shape{rows, seq, 0, first + static_cast<uint64_t>(rows) == kInstances ? 1 : 0,
                                 cursor_.epoch};
    cursor_.position = first + static_cast<uint64_t>(rows);
    if (cursor_.position == kInstances) cursor_ = {cursor_.epoch + 1, 0};
    return shape;
  }
  const char* label_name(int32_t) const override { return nullptr; }
  size_t describe_instance(uint64_t, char*, size_t) const override { return 0; }

 private:
  loom::DatasetCursor cursor_{0, 0};
};

struct Fixture {
  std::shared_ptr<CountingDataset> dataset = std::make_shared<CountingDataset>();
  Component<loom::Dataset> data{dataset, "test-data", "dataset/counting"};
};

// The batch a synchronous reader gets, as values.
struct Batch {
  loom::BatchShape shape{};
  std::vector<int32_t> ids, labels;
  std::vector<uint64_t> instances;
  bool operator==(const Batch& o) const {
    return shape.rows == o.shape.rows && shape.seq == o.shape.seq && shape.epoch == o.shape.epoch &&
           shape.last_in_epoch == o.shape.last_in_epoch && ids == o.ids && labels == o.labels &&
           instances == o.instances;
  }
};

Batch values(const HostBatch& b, const loom::BatchShape& shape, const std::vector<uint64_t>& instances) {
  const auto cells = static_cast<size_t>(b.batch * b.seq), rows = static_cast<size_t>(b.batch);
  return {shape, std::vector<int32_t>(b.input_ids, b.input_ids + cells),
          std::vector<int32_t>(b.labels, b.labels + rows),
          std::vector<uint64_t>(instances.begin(), instances.begin() + static_cast<ptrdiff_t>(rows))};
}

// `count` batches read one by one from the start (or `from`), with the cursor after each.
std::vector<std::pair<Batch, loom::DatasetCursor>> synchronous(size_t count,
                                                               loom::DatasetCursor from = {0, 0}) {
  CountingDataset d;
  d.seek(from);
  HostBatchBuffers buffers(d.limits());
  std::vector<std::pair<Batch, loom::DatasetCursor>> out;
  for (size_t i = 0; i < count; ++i) {
    loom::BatchShape shape{};
    const HostBatch b = buffers.next(d, shape);
    out.emplace_back(values(b, shape, buffers.instance_ids()), d.cursor());
  }
  return out;
}

TEST(BatchPrefetcher, SameBatchesInTheSameOrderAsReadingOneByOne) {
  const auto expected = synchronous(20);  // two epochs and a half
  for (size_t depth : {size_t{1}, size_t{2}, size_t{5}}) {
    Fixture f;
    BatchPrefetcher prefetcher(f.data, f.dataset->limits(), depth);
    for (size_t i = 0; i < expected.size(); ++i) {
      const PrefetchedBatch got = prefetcher.take();
      EXPECT_TRUE(values(got.batch, got.shape, *got.instance_ids) == expected[i].first) << "batch " << i;
      const loom::DatasetCursor c = prefetcher.cursor();
      EXPECT_EQ(c.epoch, expected[i].second.epoch) << "batch " << i;
      EXPECT_EQ(c.position, expected[i].second.position) << "batch " << i;
    }
  }
}

TEST(BatchPrefetcher, ReadsAheadOnItsOwnThreadAndTheCursorIsWhatWasTaken) {
  Fixture f;
  BatchPrefetcher prefetcher(f.data, f.dataset->limits(), 2);
  EXPECT_EQ(prefetcher.cursor().position, 0u);  // nothing taken yet
  (void)prefetcher.take();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (f.dataset->calls < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(f.dataset->calls.load(), 3u);  // the batch taken and two ahead, no more
  EXPECT_NE(f.dataset->caller, std::this_thread::get_id());
  EXPECT_EQ(prefetcher.cursor().position, 4u);
}

TEST(BatchPrefetcher, ResumingAtTheSavedCursorContinuesWithTheNextBatch) {
  const auto expected = synchronous(19);
  for (size_t stop_after : {size_t{3}, size_t{8}, size_t{11}}) {
    loom::DatasetCursor saved{};
    {
      Fixture f;
      BatchPrefetcher prefetcher(f.data, f.dataset->limits());
      for (size_t i = 0; i < stop_after; ++i) (void)prefetcher.take();
      saved = prefetcher.cursor();
    }
    Fixture resumed;
    resumed.dataset->seek(saved);
    BatchPrefetcher prefetcher(resumed.data, resumed.dataset->limits());
    for (size_t i = stop_after; i < expected.size(); ++i) {
      const PrefetchedBatch got = prefetcher.take();
      EXPECT_TRUE(values(got.batch, got.shape, *got.instance_ids) == expected[i].first)
          << "resumed after " << stop_after << ", batch " << i;
    }
  }
}

TEST(BatchPrefetcher, ADatasetErrorReachesTheCallerAtItsBatchWithItsMessage) {
  Fixture f;
  f.dataset->fail_at = 5;
  BatchPrefetcher prefetcher(f.data, f.dataset->limits());
  for (int i = 0; i < 5; ++i) EXPECT_NO_THROW((void)prefetcher.take()) << "batch " << i;
  try {
    (void)prefetcher.take();
    FAIL() << "the failing batch was returned";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("plugin 'test-data', component dataset/counting: row 7 is broken"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(prefetcher.cursor().position, 20u);  // the last batch that was read
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(f.dataset->calls.load(), 6u);                   // nothing read after the error
  EXPECT_THROW((void)prefetcher.take(), std::logic_error);  // and no wait for ever
}

TEST(BatchPrefetcher, ADataErrorKeepsItsType) {
  Fixture f;
  f.dataset->fail_at = 0;
  f.dataset->io_error = true;
  BatchPrefetcher prefetcher(f.data, f.dataset->limits());
  try {
    (void)prefetcher.take();
    FAIL() << "no error";
  } catch (const InputError& e) {  // exit code 1 with the file named, as without read-ahead
    EXPECT_NE(std::string(e.what()).find("shard.hdf5: row 7 is broken"), std::string::npos) << e.what();
  }
}

TEST(BatchPrefetcher, AnErrorInABatchNeverTakenIsNeverReported) {
  Fixture f;
  f.dataset->fail_at = 2;
  BatchPrefetcher prefetcher(f.data, f.dataset->limits());
  EXPECT_NO_THROW((void)prefetcher.take());
  EXPECT_NO_THROW((void)prefetcher.take());
}  // destroyed with the error unread

TEST(BatchPrefetcher, AHoldPausesReadingAndLetsTheCallerUseTheDataset) {
  Fixture f;
  BatchPrefetcher prefetcher(f.data, f.dataset->limits(), 2);
  (void)prefetcher.take();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (f.dataset->calls < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  {
    const BatchPrefetcher::Hold held = prefetcher.hold();
    const uint64_t before = f.dataset->calls;
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(f.dataset->calls.load(), before);
    (void)prefetcher.take();  // read before the hold: still there
    (void)prefetcher.take();
    EXPECT_THROW((void)prefetcher.take(), std::logic_error);  // nothing is read under a hold
  }
  EXPECT_NO_THROW((void)prefetcher.take());  // reading resumed
}

TEST(BatchPrefetcher, DestroyedWhileReadingOrOnAnExceptionItStopsWithoutHanging) {
  const auto start = std::chrono::steady_clock::now();
  {
    Fixture f;
    f.dataset->delay = 50ms;
    BatchPrefetcher prefetcher(f.data, f.dataset->limits(), 4);
    std::this_thread::sleep_for(10ms);  // inside the first batch
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  Fixture f;
  f.dataset->delay = 20ms;
  EXPECT_THROW(
      {
        BatchPrefetcher prefetcher(f.data, f.dataset->limits(), 4);
        (void)prefetcher.take();
        throw std::runtime_error("the step failed");
      },
      std::runtime_error);
  const uint64_t after = f.dataset->calls;
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(f.dataset->calls.load(), after);  // the thread is gone
}

TEST(BatchPrefetcher, TheReadingThreadLeavesStopSignalsToTheStopRequestThread) {
  // main.cpp blocks SIGINT and SIGTERM before any thread exists; threads made later inherit that.
  sigset_t set, previous;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, &previous);
  {
    Fixture f;
    BatchPrefetcher prefetcher(f.data, f.dataset->limits());
    (void)prefetcher.take();
    EXPECT_TRUE(f.dataset->sigint_blocked.load());
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

}  // namespace
}  // namespace loom::host
