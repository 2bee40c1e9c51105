// dataset/pretraining-shards: shard round trip with the host's writer, labels and padding,
// resumable cursor, rank coverage, dynamic masking and corrupted shards.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "dataset_test_support.hpp"
#include "hdf5_shard.hpp"
#include "prep/pretraining_instances.hpp"
#include "prep/pretraining_shard_writer.hpp"

namespace fs = std::filesystem;
using namespace datasets_test;
using loom::host::PretrainingInstance;

namespace {

// Ids as in tests/data/vocab.txt: [PAD]=0, [CLS]=3, [SEP]=4, [MASK]=5, 366 entries.
constexpr int32_t kCls = 3, kSep = 4, kMask = 5, kVocab = 366;

std::vector<PretrainingInstance> make_instances(size_t documents, uint64_t seed, int32_t max_seq_length = 64,
                                                int32_t max_predictions = 10) {
  std::mt19937 gen(static_cast<uint32_t>(seed));
  std::vector<loom::host::TokenizedDocument> docs(documents);
  for (auto& doc : docs) {
    doc.resize(2 + gen() % 12);
    for (auto& sentence : doc) {
      sentence.resize(1 + gen() % 14);
      for (auto& id : sentence) id = 6 + static_cast<int32_t>(gen() % (kVocab - 6));
    }
  }
  loom::host::MaskingOptions options;
  options.max_seq_length = max_seq_length;
  options.max_predictions = max_predictions;
  loom::host::MaskingVocabulary vocab{kVocab, kCls, kSep, kMask, std::vector<uint8_t>(kVocab, 0)};
  loom::host::PythonRandom rng(seed);
  return loom::host::create_training_instances(docs, 2, options, vocab, rng);
}

struct ShardDir {
  ShardDir()
      : path(fs::temp_directory_path() /
             ("loom-shards-" + std::to_string(getpid()) + "-" + std::to_string(counter++))) {
    fs::create_directories(path);
  }
  ~ShardDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  fs::path path;
  static inline int counter = 0;
};

std::vector<std::vector<int32_t>> take_batches(loom::Dataset& dataset, int count,
                                               std::vector<uint64_t>* ids = nullptr) {
  Batch batch(dataset.limits());
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < count; ++i) {
    batch.shape = dataset.next_batch(batch.buffers());
    const size_t n = static_cast<size_t>(batch.shape.rows) * static_cast<size_t>(batch.shape.seq);
    std::vector<int32_t> flat(batch.input_ids.begin(), batch.input_ids.begin() + static_cast<ptrdiff_t>(n));
    flat.insert(flat.end(), batch.mlm_labels.begin(), batch.mlm_labels.begin() + static_cast<ptrdiff_t>(n));
    flat.push_back(static_cast<int32_t>(batch.shape.epoch));
    out.push_back(flat);
    if (ids)
      ids->insert(ids->end(), batch.instance_ids.begin(), batch.instance_ids.begin() + batch.shape.rows);
  }
  return out;
}

}  // namespace

TEST(PretrainingShards, WriterAndReaderRoundTripEveryKey) {
  ShardDir dir;
  const auto instances = make_instances(20, 1);
  loom::host::write_pretraining_shard(dir.file("training_00000.hdf5"), instances, 64, 10);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}),
            1);  // no temp file left
  const loom_datasets::ShardData data = loom_datasets::read_shard(dir.file("training_00000.hdf5"));
  ASSERT_EQ(data.shape.instances, instances.size());
  ASSERT_EQ(data.shape.seq_length, 64);
  ASSERT_EQ(data.shape.predictions, 10);
  for (size_t r = 0; r < instances.size(); ++r) {
    const auto& in = instances[r];
    for (size_t c = 0; c < 64; ++c) {
      const bool real = c < in.tokens.size();
      ASSERT_EQ(data.input_ids[r * 64 + c], real ? in.tokens[c] : 0);
      ASSERT_EQ(data.input_mask[r * 64 + c], real ? 1 : 0);
      ASSERT_EQ(data.segment_ids[r * 64 + c], real ? in.segment_ids[c] : 0);
    }
    for (size_t p = 0; p < 10; ++p) {
      const bool used = p < in.masked_positions.size();
      ASSERT_EQ(data.masked_positions[r * 10 + p], used ? in.masked_positions[p] : 0);
      ASSERT_EQ(data.masked_ids[r * 10 + p], used ? in.masked_ids[p] : 0);
    }
    ASSERT_EQ(data.next_sentence[r], in.is_random_next ? 1 : 0);
  }
}

TEST(PretrainingShards, BatchesHaveLabelsOnlyAtMaskedPositionsAndPadToMultiplesOf8) {
  ShardDir dir;
  const auto instances = make_instances(25, 2);
  loom::host::write_pretraining_shard(dir.file("a.hdf5"), instances, 64, 10);
  auto dataset = make_dataset("pretraining-shards",
                              "files = \"" + dir.file("*.hdf5") + "\"\nbatch_size = 8\nshuffle = false\n");
  dataset.call([&](loom::Dataset& d) {
    d.open(setup());
    EXPECT_EQ(d.size(), instances.size());
    Batch batch(d.limits());
    EXPECT_EQ(d.limits().max_predictions, 10);
    uint64_t seen = 0;
    do {
      batch.shape = d.next_batch(batch.buffers());
      size_t longest = 0;
      for (int32_t r = 0; r < batch.shape.rows; ++r) {
        const auto& in = instances[batch.instance_ids[static_cast<size_t>(r)]];
        EXPECT_EQ(batch.instance_ids[static_cast<size_t>(r)], seen + static_cast<uint64_t>(r));  // no shuffle
        longest = std::max(longest, in.tokens.size());
        size_t labelled = 0;
        for (int32_t c = 0; c < batch.shape.seq; ++c) {
          const size_t cc = static_cast<size_t>(c);
          EXPECT_EQ(batch.at(batch.input_ids, r, c), cc < in.tokens.size() ? in.tokens[cc] : 0);
          EXPECT_EQ(batch.at(batch.attention_mask, r, c), cc < in.tokens.size() ? 1 : 0);
          const auto where = std::find(in.masked_positions.begin(), in.masked_positions.end(), c);
          const int32_t expected =
              where == in.masked_positions.end()
                  ? loom::kIgnoreLabel
                  : in.masked_ids[static_cast<size_t>(where - in.masked_positions.begin())];
          EXPECT_EQ(batch.at(batch.mlm_labels, r, c), expected);
          labelled += expected != loom::kIgnoreLabel ? 1 : 0;
        }
        EXPECT_EQ(labelled, in.masked_positions.size());
        EXPECT_EQ(batch.next_sentence_labels[static_cast<size_t>(r)], in.is_random_next ? 1 : 0);
      }
      EXPECT_EQ(batch.shape.seq % 8, 0);
      EXPECT_EQ(static_cast<size_t>(batch.shape.seq), (longest + 7) / 8 * 8);
      seen += static_cast<uint64_t>(batch.shape.rows);
    } while (batch.shape.last_in_epoch == 0);
    EXPECT_EQ(seen, instances.size());
  });
}

TEST(PretrainingShards, ResumedCursorGivesTheSameBatches) {
  ShardDir dir;
  loom::host::write_pretraining_shard(dir.file("training_0.hdf5"), make_instances(10, 3), 64, 10);
  loom::host::write_pretraining_shard(dir.file("training_1.hdf5"), make_instances(7, 4), 64, 10);
  auto tokenizer = make_tokenizer(data_file("vocab.txt"));
  for (const std::string masking : {"static", "dynamic"}) {
    const std::string toml =
        "files = \"" + dir.file("training_*.hdf5") + "\"\nbatch_size = 6\nmasking = \"" + masking + "\"\n";
    auto first = make_dataset("pretraining-shards", toml);
    loom::DatasetCursor cursor{};
    std::vector<std::vector<int32_t>> expected;
    first.call([&](loom::Dataset& d) {
      d.open(setup(7, 0, 1, tokenizer.get()));
      const uint64_t per_epoch = (d.rank_size() + 5) / 6;
      take_batches(d, static_cast<int>(per_epoch) - 2);
      cursor = d.cursor();
      expected = take_batches(d, static_cast<int>(per_epoch) + 3);  // crosses into the next epoch
    });
    auto second = make_dataset("pretraining-shards", toml);
    second.call([&](loom::Dataset& d) {
      d.open(setup(7, 0, 1, tokenizer.get()));
      d.seek(cursor);
      EXPECT_EQ(take_batches(d, static_cast<int>(expected.size())), expected) << masking;
    });
  }
}

TEST(PretrainingShards, RanksTogetherVisitEveryInstanceExactlyOncePerEpoch) {
  ShardDir dir;
  loom::host::write_pretraining_shard(dir.file("training_0.hdf5"), make_instances(9, 5), 64, 10);
  loom::host::write_pretraining_shard(dir.file("training_1.hdf5"), make_instances(13, 6), 64, 10);
  loom::host::write_pretraining_shard(dir.file("training_2.hdf5"), make_instances(4, 7), 64, 10);
  const int32_t world = 3;
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    std::multiset<uint64_t> seen;
    uint64_t total = 0;
    for (int32_t rank = 0; rank < world; ++rank) {
      auto dataset =
          make_dataset("pretraining-shards", "files = \"" + dir.file("*.hdf5") + "\"\nbatch_size = 5\n");
      dataset.call([&](loom::Dataset& d) {
        d.open(setup(11, rank, world));
        total = d.size();
        d.seek({epoch, 0});
        Batch batch(d.limits());
        do {
          batch.shape = d.next_batch(batch.buffers());
          EXPECT_EQ(batch.shape.epoch, epoch);
          seen.insert(batch.instance_ids.begin(), batch.instance_ids.begin() + batch.shape.rows);
        } while (batch.shape.last_in_epoch == 0);
      });
    }
    ASSERT_EQ(seen.size(), total);
    for (uint64_t id = 0; id < total; ++id) EXPECT_EQ(seen.count(id), 1u) << "instance " << id;
  }
}

TEST(PretrainingShards, AGlobalCursorResumesOnAnotherWorldSizeWithoutSkipsOrRepeats) {
  ShardDir dir;
  loom::host::write_pretraining_shard(dir.file("training_0.hdf5"), make_instances(9, 5), 64, 10);
  loom::host::write_pretraining_shard(dir.file("training_1.hdf5"), make_instances(14, 6), 64, 10);
  auto toml = [&](int batch) {
    return "files = \"" + dir.file("*.hdf5") + "\"\nbatch_size = " + std::to_string(batch) + "\n";
  };
  std::multiset<uint64_t> seen;
  loom::DatasetCursor cursor{};
  uint64_t total = 0;
  for (int32_t rank = 0; rank < 2; ++rank) {  // 2 ranks × batch 4: two global batches of 8
    auto dataset = make_dataset("pretraining-shards", toml(4));
    dataset.call([&](loom::Dataset& d) {
      d.open(setup(11, rank, 2));
      total = d.size();
      Batch batch(d.limits());
      for (int b = 0; b < 2; ++b) {
        batch.shape = d.next_batch(batch.buffers());
        EXPECT_EQ(batch.shape.rows, 4);
        seen.insert(batch.instance_ids.begin(), batch.instance_ids.begin() + batch.shape.rows);
      }
      cursor = d.cursor();
    });
  }
  EXPECT_EQ(cursor.position, 16u);  // global: both ranks' rows
  ASSERT_GT(total, 18u);
  // The rest of the epoch on 3 ranks in one global batch of batch ⌈rest/2⌉: ranks 0 and 1 take it
  // all, rank 2 gets no row (but still ends the epoch at the same cursor).
  const uint64_t rest = total - 16, half = (rest + 1) / 2;
  const std::vector<int32_t> expected_rows = {static_cast<int32_t>(half), static_cast<int32_t>(rest - half),
                                              0};
  for (int32_t rank = 0; rank < 3; ++rank) {
    auto dataset = make_dataset("pretraining-shards", toml(static_cast<int>(half)));
    dataset.call([&](loom::Dataset& d) {
      d.open(setup(11, rank, 3));
      d.seek(cursor);
      Batch batch(d.limits());
      batch.shape = d.next_batch(batch.buffers());
      EXPECT_EQ(batch.shape.last_in_epoch, 1);
      EXPECT_EQ(batch.shape.rows, expected_rows[static_cast<size_t>(rank)]);
      if (batch.shape.rows == 0) {
        EXPECT_EQ(batch.shape.seq, 0);
      }
      seen.insert(batch.instance_ids.begin(), batch.instance_ids.begin() + batch.shape.rows);
      EXPECT_EQ(d.cursor().position, total);
    });
  }
  ASSERT_EQ(seen.size(), total);
  for (uint64_t id = 0; id < total; ++id) EXPECT_EQ(seen.count(id), 1u) << "instance " << id;
}

TEST(PretrainingShards, DynamicMaskingChoosesFifteenPercentOfRealNonSpecialTokens) {
  ShardDir dir;
  loom::host::write_pretraining_shard(dir.file("t.hdf5"), make_instances(200, 8), 64, 10);
  auto tokenizer = make_tokenizer(data_file("vocab.txt"));
  auto dataset = make_dataset("pretraining-shards", "files = \"" + dir.file("t.hdf5") +
                                                        "\"\nbatch_size = 64\nmasking = \"dynamic\"\n");
  size_t candidates = 0, masked = 0, as_mask = 0, kept = 0;
  dataset.call([&](loom::Dataset& d) {
    d.open(setup(3, 0, 1, tokenizer.get()));
    EXPECT_EQ(d.limits().max_predictions, 64);  // no cap
    Batch batch(d.limits());
    do {
      batch.shape = d.next_batch(batch.buffers());
      for (int32_t r = 0; r < batch.shape.rows; ++r)
        for (int32_t c = 0; c < batch.shape.seq; ++c) {
          const int32_t label = batch.at(batch.mlm_labels, r, c);
          const int32_t id = batch.at(batch.input_ids, r, c);
          if (batch.at(batch.attention_mask, r, c) == 0) {
            EXPECT_EQ(label, loom::kIgnoreLabel);
            continue;
          }
          if (label == loom::kIgnoreLabel) {
            EXPECT_NE(id, kMask);
            if (id != kCls && id != kSep) ++candidates;
            continue;
          }
          EXPECT_NE(label, kCls);
          EXPECT_NE(label, kSep);
          ++candidates, ++masked;
          as_mask += id == kMask ? 1 : 0;
          kept += id == label ? 1 : 0;
        }
    } while (batch.shape.last_in_epoch == 0);
  });
  ASSERT_GT(candidates, 20000u);
  EXPECT_NEAR(static_cast<double>(masked) / static_cast<double>(candidates), 0.15, 0.01);
  EXPECT_NEAR(static_cast<double>(as_mask) / static_cast<double>(masked), 0.8, 0.02);
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(masked), 0.1, 0.02);
}

TEST(PretrainingShards, DynamicMaskingWithoutTokenizerIsAConfigError) {
  ShardDir dir;
  loom::host::write_pretraining_shard(dir.file("t.hdf5"), make_instances(5, 9), 64, 10);
  auto dataset =
      make_dataset("pretraining-shards", "files = \"" + dir.file("t.hdf5") + "\"\nmasking = \"dynamic\"\n");
  const std::string message = error_of([&] { dataset.call([](loom::Dataset& d) { d.open(setup()); }); });
  EXPECT_NE(message.find("[tokenizer]"), std::string::npos) << message;
}

TEST(PretrainingShards, CorruptedTruncatedOrIncompleteShardsNameFileAndKey) {
  ShardDir dir;
  loom::host::write_pretraining_shard(dir.file("good.hdf5"), make_instances(40, 10), 64, 10);
  auto open_error = [&](const std::string& file) {
    return error_of([&] {
      auto dataset = make_dataset("pretraining-shards", "files = \"" + file + "\"\n");
      dataset.call([](loom::Dataset& d) {
        d.open(setup());
        Batch batch(d.limits());
        for (int i = 0; i < 100; ++i) d.next_batch(batch.buffers());
      });
    });
  };
  // Truncated to half its size.
  fs::copy_file(dir.file("good.hdf5"), dir.file("truncated.hdf5"));
  fs::resize_file(dir.file("truncated.hdf5"), fs::file_size(dir.file("good.hdf5")) / 2);
  std::string message = open_error(dir.file("truncated.hdf5"));
  EXPECT_NE(message.find(dir.file("truncated.hdf5")), std::string::npos) << message;
  // Not HDF5 at all.
  std::ofstream(dir.file("text.hdf5")) << "this is not an HDF5 file\n";
  message = open_error(dir.file("text.hdf5"));
  EXPECT_NE(message.find(dir.file("text.hdf5")), std::string::npos) << message;
  // A key missing, and a key with the wrong number of rows (written with the HDF5 C API).
  for (const std::string broken : {"missing", "rows"}) {
    const std::string path = dir.file(broken + ".hdf5");
    hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    for (const char* key : {"input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
                            "next_sentence_labels"}) {
      if (broken == "missing" && std::string(key) == "masked_lm_ids") continue;
      const bool predictions = std::string(key).rfind("masked", 0) == 0;
      const hsize_t dims[2] = {broken == "rows" && std::string(key) == "segment_ids" ? 3u : 4u,
                               predictions ? 10u : 64u};
      const int rank = std::string(key) == "next_sentence_labels" ? 1 : 2;
      hid_t space = H5Screate_simple(rank, dims, nullptr);
      hid_t dataset = H5Dcreate2(file, key, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      H5Dclose(dataset);
      H5Sclose(space);
    }
    H5Fclose(file);
    message = open_error(path);
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(broken == "missing" ? "'masked_lm_ids'" : "'segment_ids'"), std::string::npos)
        << message;
  }
  // Compressed data overwritten in the middle of the file: the read fails and names the file.
  fs::copy_file(dir.file("good.hdf5"), dir.file("garbled.hdf5"));
  {
    std::fstream garble(dir.file("garbled.hdf5"), std::ios::in | std::ios::out | std::ios::binary);
    garble.seekp(static_cast<std::streamoff>(fs::file_size(dir.file("good.hdf5")) / 3));
    const std::string junk(4096, '\x5a');
    garble.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  message = open_error(dir.file("garbled.hdf5"));
  EXPECT_NE(message.find(dir.file("garbled.hdf5")), std::string::npos) << message;
  // A pattern matching nothing.
  message = open_error(dir.file("nothing-*.hdf5"));
  EXPECT_NE(message.find("matches no file"), std::string::npos) << message;
}
