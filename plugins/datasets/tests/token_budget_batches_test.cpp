// Batches by token budget (batch_tokens) through the datasets as a run uses them: the budget and
// row cap per micro-batch, every instance once per epoch on 1–3 ranks, exact resume from a cursor
// saved on one world size and restored on another (across an epoch boundary too, with dynamic
// masking), refusal of a cursor between bins, and option errors that name the key.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>

#include "dataset_test_support.hpp"
#include "prep/pretraining_instances.hpp"
#include "prep/pretraining_shard_writer.hpp"

namespace fs = std::filesystem;
using namespace datasets_test;

namespace {

constexpr int32_t kBudget = 96, kRowCap = 6;

/// One micro-batch as a rank received it.
struct MicroBatch {
  std::vector<uint64_t> instances;
  std::vector<int32_t> ids, labels;  // rows × seq input ids then mlm labels; per-row labels
  int32_t seq = 0;
  uint64_t epoch = 0;
  int64_t real_tokens = 0;
  bool operator==(const MicroBatch&) const = default;
};

/// A TSV of `count` single sentences of 1–40 vocabulary words (tokens: words + [CLS] + [SEP]).
std::string write_sentences(size_t count, uint32_t seed) {
  std::vector<std::string> words;
  std::ifstream vocab(data_file("vocab.txt"));
  for (std::string line; std::getline(vocab, line);)
    if (!line.empty() && std::all_of(line.begin(), line.end(), [](char c) { return c >= 'a' && c <= 'z'; }))
      words.push_back(line);
  const std::string path = ::testing::TempDir() + "loom-budget-" + std::to_string(seed) + ".tsv";
  std::ofstream out(path);
  out << "sentence\tlabel\n";
  std::mt19937 gen(seed);
  for (size_t i = 0; i < count; ++i) {
    const size_t length = 1 + gen() % 40;
    for (size_t w = 0; w < length; ++w) out << (w ? " " : "") << words[gen() % words.size()];
    out << "\t" << (gen() % 2 ? "yes" : "no") << "\n";
  }
  return path;
}

std::string sentences_toml(const std::string& file, const std::string& extra = "") {
  return "file = \"" + file + "\"\nmax_seq_length = 64\nbatch_size = " + std::to_string(kRowCap) +
         "\nbatch_tokens = " + std::to_string(kBudget) + "\nbatch_tokens_window = 20\n" + extra;
}

const loom::Tokenizer* tokenizer() {
  static auto instance = make_tokenizer(data_file("vocab.txt"));
  return instance.get();
}

/// `world` ranks of one dataset, stepped together as the processes of a run are.
struct Ranks {
  Ranks(const std::string& name, const std::string& toml, int32_t world, uint64_t seed = 5) {
    for (int32_t rank = 0; rank < world; ++rank) {
      datasets.push_back(make_dataset(name, toml));
      datasets.back().call([&](loom::Dataset& d) { d.open(setup(seed, rank, world, tokenizer())); });
    }
  }
  void seek(const loom::DatasetCursor& cursor) {
    for (auto& dataset : datasets) dataset.call([&](loom::Dataset& d) { d.seek(cursor); });
  }
  /// The next global batch: each rank's micro-batch (rows = 0 ones left out); checks that the
  /// ranks agree on the cursor and the epoch's end.
  std::vector<MicroBatch> next(bool* last_in_epoch = nullptr) {
    std::vector<MicroBatch> out;
    std::set<std::pair<uint64_t, uint64_t>> cursors;
    std::set<int32_t> lasts;
    for (auto& dataset : datasets)
      dataset.call([&](loom::Dataset& d) {
        Batch batch(d.limits());
        batch.shape = d.next_batch(batch.buffers());
        cursors.insert({d.cursor().epoch, d.cursor().position});
        lasts.insert(batch.shape.last_in_epoch);
        EXPECT_LE(batch.shape.rows, d.limits().batch_size);
        if (batch.shape.rows == 0) {
          EXPECT_EQ(batch.shape.seq, 0);
          return;
        }
        MicroBatch micro;
        micro.seq = batch.shape.seq;
        micro.epoch = batch.shape.epoch;
        const size_t cells = static_cast<size_t>(batch.shape.rows) * static_cast<size_t>(batch.shape.seq);
        micro.ids.assign(batch.input_ids.begin(), batch.input_ids.begin() + static_cast<ptrdiff_t>(cells));
        micro.ids.insert(micro.ids.end(), batch.mlm_labels.begin(),
                         batch.mlm_labels.begin() + static_cast<ptrdiff_t>(cells));
        int32_t longest = 0;
        for (int32_t r = 0; r < batch.shape.rows; ++r) {
          micro.instances.push_back(batch.instance_ids[static_cast<size_t>(r)]);
          micro.labels.push_back(d.limits().task == loom::BatchTask::pretraining
                                     ? batch.next_sentence_labels[static_cast<size_t>(r)]
                                     : batch.labels[static_cast<size_t>(r)]);
          int32_t length = 0;
          for (int32_t c = 0; c < batch.shape.seq; ++c) length += batch.at(batch.attention_mask, r, c);
          longest = std::max(longest, length);
          micro.real_tokens += length;
        }
        EXPECT_EQ(batch.shape.seq, std::min((longest + 7) / 8 * 8, d.limits().max_seq_length));
        out.push_back(std::move(micro));
      });
    EXPECT_EQ(cursors.size(), 1u) << "ranks disagree on the cursor";
    EXPECT_EQ(lasts.size(), 1u) << "ranks disagree on the epoch's end";
    if (last_in_epoch) *last_in_epoch = *lasts.begin() != 0;
    return out;
  }
  loom::DatasetCursor cursor() {
    return datasets.front().call([](loom::Dataset& d) { return d.cursor(); });
  }
  std::vector<loom::host::Component<loom::Dataset>> datasets;
};

/// The micro-batches of `batches` global batches, in order.
std::vector<MicroBatch> stream(Ranks& ranks, size_t batches) {
  std::vector<MicroBatch> out;
  for (size_t b = 0; b < batches; ++b)
    for (MicroBatch& micro : ranks.next()) out.push_back(std::move(micro));
  return out;
}

}  // namespace

TEST(TokenBudgetBatches, BudgetAndRowCapHoldAndEveryInstanceComesOncePerEpoch) {
  const std::string file = write_sentences(157, 1);
  for (int32_t world : {1, 2, 3}) {
    Ranks ranks("text-classification", sentences_toml(file), world);
    uint64_t total = 0;
    ranks.datasets.front().call([&](loom::Dataset& d) { total = d.size(); });
    ASSERT_EQ(total, 157u);
    uint64_t shares = 0;
    for (auto& dataset : ranks.datasets) dataset.call([&](loom::Dataset& d) { shares += d.rank_size(); });
    EXPECT_EQ(shares, total) << "world " << world;
    for (uint64_t epoch = 0; epoch < 2; ++epoch) {
      std::multiset<uint64_t> seen;
      size_t micro_batches = 0, with_more_rows = 0;
      bool last = false;
      while (!last)
        for (const MicroBatch& micro : ranks.next(&last)) {
          EXPECT_EQ(micro.epoch, epoch);
          if (micro.instances.size() > 1) {
            EXPECT_LE(micro.real_tokens, kBudget);
          }
          EXPECT_LE(micro.instances.size(), static_cast<size_t>(kRowCap));
          seen.insert(micro.instances.begin(), micro.instances.end());
          ++micro_batches;
          with_more_rows += micro.instances.size() > 1 ? 1 : 0;
        }
      ASSERT_EQ(seen.size(), total) << "world " << world;
      for (uint64_t id = 0; id < total; ++id) EXPECT_EQ(seen.count(id), 1u) << "instance " << id;
      EXPECT_GT(with_more_rows, micro_batches / 2);  // short sentences share micro-batches
      EXPECT_EQ(ranks.cursor().epoch, epoch);
      EXPECT_EQ(ranks.cursor().position, total);
    }
  }
}

TEST(TokenBudgetBatches, LongSequencesPastTheBudgetComeAlone) {
  const std::string file = write_sentences(60, 2);
  Ranks ranks("text-classification",
              "file = \"" + file + "\"\nmax_seq_length = 64\nbatch_size = 4\nbatch_tokens = 20\n", 1);
  size_t alone = 0;
  bool last = false;
  while (!last)
    for (const MicroBatch& micro : ranks.next(&last)) {
      if (micro.real_tokens > 20) {
        EXPECT_EQ(micro.instances.size(), 1u);
      }
      alone += micro.real_tokens > 20 ? 1 : 0;
    }
  EXPECT_GT(alone, 0u);
}

TEST(TokenBudgetBatches, ACursorResumesExactlyOnAnyWorldSize) {
  const std::string file = write_sentences(83, 3);
  Ranks reference("text-classification", sentences_toml(file), 1);
  const std::vector<MicroBatch> expected = stream(reference, 60);  // past the first epoch's end
  ASSERT_GT(expected.back().epoch, 0u);
  for (int32_t saved_on : {1, 2})
    for (int32_t resumed_on : {1, 2})
      for (size_t taken : {3, 11, 19}) {
        Ranks first("text-classification", sentences_toml(file), saved_on);
        std::vector<MicroBatch> got = stream(first, taken);
        const loom::DatasetCursor cursor = first.cursor();
        Ranks second("text-classification", sentences_toml(file), resumed_on);
        second.seek(cursor);
        while (got.size() < expected.size())
          for (MicroBatch& micro : second.next()) got.push_back(std::move(micro));
        got.resize(expected.size());
        EXPECT_EQ(got, expected) << "saved on " << saved_on << " rank(s) after " << taken
                                 << " global batches, resumed on " << resumed_on;
      }
}

TEST(TokenBudgetBatches, PretrainingShardsWithDynamicMaskingResumeAcrossWorldSizes) {
  const fs::path dir = fs::temp_directory_path() / ("loom-budget-shards-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::mt19937 gen(4);
  std::vector<loom::host::TokenizedDocument> documents(40);
  for (auto& document : documents) {
    document.resize(2 + gen() % 10);
    for (auto& sentence : document) {
      sentence.resize(1 + gen() % 12);
      for (auto& id : sentence) id = 6 + static_cast<int32_t>(gen() % 360);
    }
  }
  loom::host::MaskingOptions masking;
  masking.max_seq_length = 64;
  masking.max_predictions = 10;
  loom::host::MaskingVocabulary vocab{366, 3, 4, 5, std::vector<uint8_t>(366, 0)};
  loom::host::PythonRandom random(4);
  const auto instances = loom::host::create_training_instances(documents, 1, masking, vocab, random);
  const size_t half = instances.size() / 2;
  loom::host::write_pretraining_shard((dir / "training_0.hdf5").string(),
                                      {instances.begin(), instances.begin() + static_cast<ptrdiff_t>(half)},
                                      64, 10);
  loom::host::write_pretraining_shard((dir / "training_1.hdf5").string(),
                                      {instances.begin() + static_cast<ptrdiff_t>(half), instances.end()}, 64,
                                      10);
  const std::string toml = "files = \"" + (dir / "training_*.hdf5").string() +
                           "\"\nbatch_size = 8\nbatch_tokens = 160\nmasking = \"dynamic\"\n";
  Ranks reference("pretraining-shards", toml, 1);
  const std::vector<MicroBatch> expected = stream(reference, 40);
  ASSERT_GT(expected.back().epoch, 0u);
  Ranks first("pretraining-shards", toml, 2);
  std::vector<MicroBatch> got = stream(first, 5);
  Ranks second("pretraining-shards", toml, 1);
  second.seek(first.cursor());
  while (got.size() < expected.size())
    for (MicroBatch& micro : second.next()) got.push_back(std::move(micro));
  got.resize(expected.size());
  EXPECT_EQ(got, expected);
  fs::remove_all(dir);
}

TEST(TokenBudgetBatches, ACursorInsideABinIsRefused) {
  const std::string file = write_sentences(40, 5);
  Ranks ranks("text-classification", sentences_toml(file), 1);
  const std::vector<MicroBatch> first = ranks.next();
  ASSERT_GT(first.front().instances.size(), 1u);
  Ranks resumed("text-classification", sentences_toml(file), 2);
  const std::string message = error_of([&] { resumed.seek({0, 1}); });
  EXPECT_NE(message.find("does not start a batch of the token-budget window"), std::string::npos) << message;
  EXPECT_NE(message.find("batch_tokens"), std::string::npos) << message;
}

TEST(TokenBudgetBatches, OptionErrorsNameTheKey) {
  const std::string file = write_sentences(10, 6);
  auto error = [&](const std::string& dataset, const std::string& toml) {
    return error_of([&] { (void)make_dataset(dataset, toml); });
  };
  const std::string text = "file = \"" + file + "\"\n";
  std::string message = error("text-classification", text + "batch_tokens = 0\n");
  EXPECT_NE(message.find("data.batch_tokens"), std::string::npos) << message;
  message = error("text-classification", text + "batch_tokens = \"4096\"\n");
  EXPECT_NE(message.find("data.batch_tokens"), std::string::npos) << message;
  message = error("text-classification", text + "batch_tokens_window = 64\n");
  EXPECT_NE(message.find("data.batch_tokens_window"), std::string::npos) << message;
  EXPECT_NE(message.find("set batch_tokens"), std::string::npos) << message;
  message = error("squad", text + "batch_tokens = 512\nbatch_tokens_window = 0\n");
  EXPECT_NE(message.find("data.batch_tokens_window"), std::string::npos) << message;
  message = error("pretraining-shards", "files = \"x\"\nbatch_tokens = 512\ndrop_last = true\n");
  EXPECT_NE(message.find("data.drop_last"), std::string::npos) << message;
  EXPECT_NE(message.find("batch_tokens"), std::string::npos) << message;
  EXPECT_EQ(error("squad", text + "batch_tokens = 512\n"), "");
}
