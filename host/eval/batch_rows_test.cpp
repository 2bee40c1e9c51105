// A batch's rows named by the places the dataset gives for them: file and line, shard row,
// question id.
#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "eval/batch_rows.hpp"

namespace loom::host {
namespace {

// A dataset that only describes its instances, with `describe(id)` as the JSON.
class DescribedDataset : public loom::Dataset {
 public:
  explicit DescribedDataset(std::function<nlohmann::json(uint64_t)> describe)
      : describe_(std::move(describe)) {}
  void open(const loom::DatasetSetup&) override {}
  loom::BatchLimits limits() const override { return {}; }
  uint64_t size() const override { return 1000; }
  uint64_t rank_size() const override { return 1000; }
  loom::DatasetCursor cursor() const override { return {0, 0}; }
  void seek(const loom::DatasetCursor&) override {}
  loom::BatchShape next_batch(const loom::BatchBuffers&) override { return {}; }
  const char* label_name(int32_t) const override { return nullptr; }
  size_t describe_instance(uint64_t id, char* json, size_t capacity) const override {
    const std::string text = describe_(id).dump();
    std::memcpy(json, text.data(), std::min(text.size(), capacity));
    if (text.size() < capacity) json[text.size()] = '\0';
    return text.size();
  }

 private:
  std::function<nlohmann::json(uint64_t)> describe_;
};

TEST(BatchRows, TextRowsAreFileAndLine) {
  DescribedDataset tsv([](uint64_t id) { return nlohmann::json{{"file", "dev.tsv"}, {"line", id + 2}}; });
  const std::vector<uint64_t> one{12}, batch{3, 0, 7};
  EXPECT_EQ(describe_rows(tsv, one), "dev.tsv:14");
  EXPECT_EQ(describe_rows(tsv, batch), "dev.tsv lines 2-9");
}

TEST(BatchRows, ShardRowsAreFileAndRow) {
  DescribedDataset shards([](uint64_t id) { return nlohmann::json{{"file", "heldout.hdf5"}, {"row", id}}; });
  const std::vector<uint64_t> one{7}, batch{4, 5, 6};
  EXPECT_EQ(describe_rows(shards, one), "heldout.hdf5 row 7");
  EXPECT_EQ(describe_rows(shards, batch), "heldout.hdf5 rows 4-6");
}

TEST(BatchRows, QuestionsAreTheirIdsAndLongDescriptionsAreReadWhole) {
  const std::string words(10000, 'w');  // more than the first read takes
  DescribedDataset squad([&](uint64_t id) {
    return nlohmann::json{{"qas_id", std::string("q").append(std::to_string(id / 2))}, {"doc_words", words}};
  });
  const std::vector<uint64_t> one_question{4, 5}, many{0, 2, 4, 6, 8};
  EXPECT_EQ(describe_rows(squad, one_question), "question id q2");
  EXPECT_EQ(describe_rows(squad, many), "question ids q0, q1, q2, ... (5)");
}

TEST(BatchRows, ADatasetThatDescribesNothingGivesInstanceNumbers) {
  DescribedDataset silent([](uint64_t) { return nullptr; });
  const std::vector<uint64_t> batch{9, 3};
  EXPECT_EQ(describe_rows(silent, batch), "instances 3-9 of the dataset");
}

}  // namespace
}  // namespace loom::host
