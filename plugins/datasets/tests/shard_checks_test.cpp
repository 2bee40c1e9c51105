// dataset/pretraining-shards refusing bad shards before they train: values out of range (named by
// file, key, row and column when the shard is read), values that do not fit the type they are read
// as, declared sizes the file cannot hold, a manifest.json naming another vocabulary, and dynamic
// masking without [MASK].
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "dataset_test_support.hpp"
#include "hdf5_shard.hpp"
#include "loom/sdk/error.hpp"
#include "loom/sdk/vocabulary_file.hpp"
#include "prep/pretraining_shard_writer.hpp"

namespace fs = std::filesystem;
using namespace datasets_test;
using loom::host::PretrainingInstance;

namespace {

// Ten rows of 16 tokens ([CLS]=3 a… [SEP]=4 b… [SEP]) in a vocabulary of 366 (tests/data/vocab.txt).
std::vector<PretrainingInstance> instances() {
  std::vector<PretrainingInstance> out(10);
  for (size_t r = 0; r < out.size(); ++r) {
    PretrainingInstance& in = out[r];
    in.tokens = {3, 10, 11, 12, 4, 20, 21, 4};
    in.segment_ids = {0, 0, 0, 0, 0, 1, 1, 1};
    in.masked_positions = {2, 6};
    in.masked_ids = {11, 21};
    in.tokens[2] = in.tokens[6] = 5;  // [MASK]
    in.is_random_next = r % 2 == 1;
  }
  return out;
}

// Overwrites one element of `key` in an existing shard.
void poke(const std::string& path, const char* key, hsize_t row, hsize_t column, int32_t value) {
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t dataset = H5Dopen2(file, key, H5P_DEFAULT);
  hid_t space = H5Dget_space(dataset);
  const int rank = H5Sget_simple_extent_ndims(space);
  const hsize_t start[2] = {row, column}, count[2] = {1, 1};
  H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr);
  hid_t memory = H5Screate_simple(rank, count, nullptr);
  ASSERT_GE(H5Dwrite(dataset, H5T_NATIVE_INT32, memory, space, H5P_DEFAULT, &value), 0) << key;
  H5Sclose(memory);
  H5Sclose(space);
  H5Dclose(dataset);
  H5Fclose(file);
}

// A shard of 2 rows × 4 tokens and 1 prediction with every key stored as int64: zeros, but `value`
// at the first element of `key`.
void write_int64_shard(const std::string& path, const char* key, int64_t value) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  for (const char* name : {"input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
                           "next_sentence_labels"}) {
    const bool predictions = std::string(name).rfind("masked", 0) == 0;
    const int rank = std::string(name) == "next_sentence_labels" ? 1 : 2;
    const hsize_t dims[2] = {2, predictions ? 1u : 4u};
    std::vector<int64_t> values(dims[0] * (rank == 2 ? dims[1] : 1), 0);
    if (std::string(name) == key) values[0] = value;
    hid_t space = H5Screate_simple(rank, dims, nullptr);
    hid_t dataset = H5Dcreate2(file, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(dataset, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    H5Dclose(dataset);
    H5Sclose(space);
  }
  H5Fclose(file);
}

class ShardChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("loom-shard-checks-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string shard(const std::string& name) {
    const std::string path = (dir_ / name).string();
    loom::host::write_pretraining_shard(path, instances(), 16, 4);
    return path;
  }

  // Opens `pattern` as a run does (the tokenizer's vocabulary file handed over) and reads a batch;
  // returns the error, "" when there is none.
  std::string read(const std::string& pattern, const std::string& vocab = data_file("vocab.txt"),
                   const std::string& toml = "", bool hand_vocabulary = true) {
    try {
      auto tokenizer = make_tokenizer(vocab);
      auto dataset =
          make_dataset("pretraining-shards", "files = \"" + pattern + "\"\nbatch_size = 4\n" + toml);
      const auto* file = tokenizer.find<loom::VocabularyFile>();
      auto* receiver = dataset.find<loom::DatasetVocabularyFile>();
      EXPECT_NE(file, nullptr);
      EXPECT_NE(receiver, nullptr);
      if (hand_vocabulary && file != nullptr && receiver != nullptr)
        receiver->use_vocabulary_file(file->vocabulary_path(), file->vocabulary_sha256());
      dataset.call([&](loom::Dataset& d) {
        d.open(setup(1, 0, 1, tokenizer.get()));
        Batch batch(d.limits());
        d.next_batch(batch.buffers());
      });
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }

  std::string sha256_of_test_vocabulary() {
    auto tokenizer = make_tokenizer(data_file("vocab.txt"));
    return tokenizer.find<loom::VocabularyFile>()->vocabulary_sha256();
  }

  void write_manifest(const std::string& path, const std::string& sha256, int64_t size) {
    const nlohmann::json manifest = {{"format", "loom-pretraining-shards"},
                                     {"vocab", {{"path", path}, {"sha256", sha256}, {"size", size}}}};
    std::ofstream(dir_ / "manifest.json") << manifest.dump(2);
  }

  fs::path dir_;
};

}  // namespace

TEST_F(ShardChecks, AValidShardReads) {
  EXPECT_EQ(read(shard("good.hdf5")), "");
}

TEST_F(ShardChecks, ValuesOutOfRangeNameFileKeyRowAndColumn) {
  struct Case {
    const char* key;
    hsize_t row, column;
    int32_t value;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"input_ids", 2, 3, 400,
       "key 'input_ids': row 2, column 3: token id 400 is outside the vocabulary [0, 366) of "},
      {"input_ids", 1, 12, -2, "key 'input_ids': row 1, column 12: token id -2 is negative"},
      {"segment_ids", 7, 5, 5, "key 'segment_ids': row 7, column 5: value 5 is neither 0 nor 1"},
      {"next_sentence_labels", 4, 0, 7, "key 'next_sentence_labels': row 4: value 7 is neither 0"},
      {"input_mask", 3, 10, 1, "key 'input_mask': row 3, column 10: 1 after a 0"},
      {"input_mask", 0, 1, 2, "key 'input_mask': row 0, column 1: value 2 is neither 0 nor 1"},
      {"masked_lm_positions", 5, 1, 9,
       "key 'masked_lm_positions': row 5, column 1: position 9 is outside the "
       "row's 8 real tokens"},
      {"masked_lm_ids", 6, 0, 366, "key 'masked_lm_ids': row 6, column 0: token id 366 is outside"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = shard("bad" + std::to_string(i) + ".hdf5");
    poke(path, cases[i].key, cases[i].row, cases[i].column, cases[i].value);
    const std::string message = read(path);
    EXPECT_NE(message.find(path + ": " + cases[i].expected), std::string::npos) << message;
  }
  // The vocabulary is named: by its file when the host handed it over.
  const std::string path = shard("big_id.hdf5");
  poke(path, "input_ids", 0, 1, 9000);
  EXPECT_NE(read(path).find("[0, 366) of " + data_file("vocab.txt")), std::string::npos) << read(path);
  EXPECT_NE(read(path, data_file("vocab.txt"), "", false).find("[0, 366) of the [tokenizer]'s vocabulary"),
            std::string::npos);
}

TEST_F(ShardChecks, ValuesThatDoNotFitTheirTypeAreRefusedNotSaturated) {
  // libhdf5 would read 3774873600 as int32 2147483647, an id a run without a known vocabulary
  // accepted, and 257 as int8 127, the value the range check then named.
  struct Case {
    const char* key;
    int64_t value;
    const char* type;
  };
  for (const Case& c : {Case{"input_ids", 3774873600, "int32"}, Case{"masked_lm_ids", -2147483649, "int32"},
                        Case{"input_mask", 257, "int8"}, Case{"segment_ids", -129, "int8"}}) {
    const std::string path = (dir_ / (std::string(c.key) + ".hdf5")).string();
    write_int64_shard(path, c.key, c.value);
    try {
      loom_datasets::read_shard(path);
      ADD_FAILURE() << c.key << " = " << c.value << " read";
    } catch (const loom::IoError& e) {
      const std::string expected = path + ": key '" + c.key + "': holds the value " +
                                   std::to_string(c.value) + ", which does not fit in " + c.type;
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
  // Values that fit are converted from any integer type.
  const std::string path = (dir_ / "fits.hdf5").string();
  write_int64_shard(path, "next_sentence_labels", 1);
  const loom_datasets::ShardData data = loom_datasets::read_shard(path);
  EXPECT_EQ(data.next_sentence[0], 1);
  EXPECT_EQ(read(path), "");
}

TEST_F(ShardChecks, DeclaredSizesBeyondWhatTheFileHoldsAreRefusedAtOpen) {
  // A small file declaring 10^12 rows (chunked and compressed, no data written).
  const std::string path = (dir_ / "huge.hdf5").string();
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  for (const char* key : {"input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
                          "next_sentence_labels"}) {
    const bool predictions = std::string(key).rfind("masked", 0) == 0;
    const int rank = std::string(key) == "next_sentence_labels" ? 1 : 2;
    const hsize_t dims[2] = {1000000000000ull, predictions ? 4u : 16u};
    const hsize_t chunk[2] = {1024, dims[1]};
    hid_t space = H5Screate_simple(rank, dims, nullptr);
    hid_t properties = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(properties, rank, chunk);
    H5Pset_deflate(properties, 4);
    hid_t dataset = H5Dcreate2(file, key, H5T_STD_I32LE, space, H5P_DEFAULT, properties, H5P_DEFAULT);
    ASSERT_GE(dataset, 0) << key;
    H5Dclose(dataset);
    H5Pclose(properties);
    H5Sclose(space);
  }
  H5Fclose(file);
  EXPECT_LT(fs::file_size(path), 16384u);
  std::string message = read(path);
  EXPECT_NE(
      message.find(path + ": key 'input_ids': declares 1000000000000 × 16 values, but the file stores only 0 "
                          "bytes of them"),
      std::string::npos)
      << message;
  // Uncompressed data must be stored whole: a shard cut short after its header is refused too.
  const std::string cut = (dir_ / "unwritten.hdf5").string();
  file = H5Fcreate(cut.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  for (const char* key : {"input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
                          "next_sentence_labels"}) {
    const bool predictions = std::string(key).rfind("masked", 0) == 0;
    const int rank = std::string(key) == "next_sentence_labels" ? 1 : 2;
    const hsize_t dims[2] = {10, predictions ? 4u : 16u};
    hid_t space = H5Screate_simple(rank, dims, nullptr);
    hid_t dataset = H5Dcreate2(file, key, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(dataset);
    H5Sclose(space);
  }
  H5Fclose(file);
  message = read(cut);
  EXPECT_NE(message.find(cut + ": key 'input_ids': declares 10 × 16 values"), std::string::npos) << message;
}

TEST_F(ShardChecks, AManifestNamingAnotherVocabularyIsRefused) {
  shard("training_0.hdf5");
  const std::string pattern = (dir_ / "*.hdf5").string();
  // The right vocabulary: accepted.
  write_manifest("data/vocab.txt", sha256_of_test_vocabulary(), 366);
  EXPECT_EQ(read(pattern), "");
  // Another file of the same size: refused by its hash, both vocabularies named.
  write_manifest("other/vocab.txt", std::string(64, 'a'), 366);
  std::string message = read(pattern);
  EXPECT_NE(
      message.find((dir_ / "manifest.json").string() +
                   ": these shards were prepared with the vocabulary other/vocab.txt (sha256 aaaaaaaaaaaa…, "
                   "366 tokens), but the run's [tokenizer] reads " +
                   data_file("vocab.txt")),
      std::string::npos)
      << message;
  EXPECT_NE(message.find("loom prep pretraining --vocab"), std::string::npos) << message;
  // Without the vocabulary file handed over, the sizes are compared.
  write_manifest("other/vocab.txt", std::string(64, 'a'), 30522);
  message = read(pattern, data_file("vocab.txt"), "", false);
  EXPECT_NE(message.find("30522 tokens), but the run's [tokenizer] reads its vocabulary (366 tokens)"),
            std::string::npos)
      << message;
  // A malformed record names its key.
  std::ofstream(dir_ / "manifest.json")
      << R"({"format": "loom-pretraining-shards", "vocab": {"path": "v", "sha256": 5, "size": 366}})";
  message = read(pattern);
  EXPECT_NE(message.find("manifest.json: key 'vocab.sha256'"), std::string::npos) << message;
  // Another program's manifest.json is not ours to check, whatever type its "format" has.
  std::ofstream(dir_ / "manifest.json") << R"({"files": ["training_0.hdf5"]})";
  EXPECT_EQ(read(pattern), "");
  std::ofstream(dir_ / "manifest.json") << R"({"format": {"path": "v", "sha512": 5, "size": 366}})";
  EXPECT_EQ(read(pattern), "");
  std::ofstream(dir_ / "manifest.json") << R"({"format": 1, "vocab": 2})";
  EXPECT_EQ(read(pattern), "");
}

TEST_F(ShardChecks, DynamicMaskingWithoutMaskTokenNamesTheVocabulary) {
  const std::string vocab = (dir_ / "no-mask-vocab.txt").string();
  {
    std::ifstream in(data_file("vocab.txt"));
    std::ofstream out(vocab);
    for (std::string line; std::getline(in, line);) out << (line == "[MASK]" ? "[NOTMASK]" : line) << "\n";
  }
  const std::string path = shard("t.hdf5");
  const std::string message = read(path, vocab, "masking = \"dynamic\"\n");
  EXPECT_NE(message.find("the vocabulary " + vocab + " has no [MASK] token"), std::string::npos) << message;
  EXPECT_EQ(read(path, vocab, "masking = \"dynamic\"\nmask_ratio = 0\n"), "");
}
