// `loom prep pretraining` end to end on a small corpus, with tokenizer/wordpiece from the plugin
// directory: outputs, manifest, determinism across runs and thread counts, input formats,
// de-duplication, stale shards.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "plugin_loading/plugin_registry.hpp"
#include "prep/pretraining_prep.hpp"
#include "files/sha256.hpp"

namespace fs = std::filesystem;
using namespace loom::host;

namespace {

const char* kWords[] = {"the",  "whale", "sea",   "ship", "captain", "sailed",  "north", "south", "and",
                        "a",    "storm", "came",  "crew", "slept",   "morning", "night", "it",    "was",
                        "cold", "dark",  "thank", "you",  ".",       ",",       "!",     "?",     "we",
                        "grew", "in",    "1990",  "mr",   "smith",   "said",    "no"};

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class PrepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("loom-prep-" + std::to_string(getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "raw");
    {
      std::ofstream vocab(root_ / "vocab.txt");
      vocab << "[PAD]\n[unused0]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
      for (const char* word : kWords) vocab << word << "\n";
      vocab << "##s\n";
    }
    // Eight documents of 6 hard-wrapped paragraphs of 6 sentences; four sentences are unique (a
    // number d p), "We grew in 1990." and "Thank you." repeat in every paragraph.
    for (int d = 0; d < 8; ++d) {
      std::ofstream doc(root_ / "raw" / ("doc" + std::to_string(d) + ".txt"));
      for (int p = 0; p < 6; ++p) {
        const std::string n = std::to_string(d) + std::to_string(p);
        doc << "The whale sailed north and the ship sailed\nsouth " << n << ". A storm came " << n
            << "! The crew slept, it was cold " << n << ".\nMr. Smith said no " << n
            << "? We grew in 1990. Thank you.\n\n";
      }
    }
    PluginSearchOptions search;
    search.directories = {LOOM_PLUGIN_DIR};
    search.default_paths = false;
    search.environment = false;
    registry_ = std::make_unique<PluginRegistry>(search);
    const auto* entry = registry_->find(LOOM_KIND_TOKENIZER, "wordpiece");
    ASSERT_NE(entry, nullptr) << "tokenizer/wordpiece not built in " LOOM_PLUGIN_DIR;
    tokenizer_ = registry_->create<loom::Tokenizer>(
        *entry, {"tokenizer", "vocab = \"" + (root_ / "vocab.txt").string() + "\"\n", "", "test:1:1"}, false);
  }
  void TearDown() override { fs::remove_all(root_); }

  PrepOptions options(const std::string& output) const {
    PrepOptions o;
    o.vocab = (root_ / "vocab.txt").string();
    o.inputs = {(root_ / "raw").string()};
    o.output = (root_ / output).string();
    o.max_seq_length = 32;
    o.max_predictions = 5;
    o.dupe_factor = 3;
    o.shards = 2;
    o.heldout_fraction = 0.25;
    o.threads = 2;
    return o;
  }
  nlohmann::json manifest(const std::string& output) const {
    return nlohmann::json::parse(read(root_ / output / "manifest.json"));
  }

  fs::path root_;
  std::unique_ptr<PluginRegistry> registry_;
  Component<loom::Tokenizer> tokenizer_;
};

}  // namespace

TEST_F(PrepTest, WritesShardsFormattedTextDuplicatesAndManifest) {
  std::vector<std::string> lines;
  const PrepSummary summary = prep_pretraining(options("out"), *tokenizer_.get(),
                                               [&](const std::string& line) { lines.push_back(line); });
  EXPECT_GE(lines.size(), 4u);  // progress
  const nlohmann::json m = manifest("out");
  EXPECT_EQ(m["arguments"]["max_seq_length"], 32);
  EXPECT_EQ(m["arguments"]["dupe_factor"], 3);
  EXPECT_EQ(m["vocab"]["sha256"], sha256_file_hex(root_ / "vocab.txt"));
  EXPECT_EQ(m["documents"]["kept"], 8);
  ASSERT_EQ(m["shards"].size(), 3u);  // 2 training + held-out
  uint64_t training = 0;
  for (const auto& shard : m["shards"]) {
    EXPECT_EQ(shard["sha256"], sha256_file_hex(root_ / "out" / shard["file"].get<std::string>()));
    if (shard["split"] == "training") training += shard["instances"].get<uint64_t>();
  }
  EXPECT_EQ(training, summary.training_instances);
  EXPECT_EQ(m["instances"]["training"], summary.training_instances);
  EXPECT_GT(summary.training_instances, 20u);
  // 8 × 6 occurrences of each of the two repeated lines: all but the first are removed.
  const std::string formatted = read(root_ / "out" / "formatted.txt");
  EXPECT_NE(formatted.find("The whale sailed north and the ship sailed south 00.\nA storm came 00!\n"),
            std::string::npos);
  EXPECT_EQ(formatted.find("Thank you.\nThank you."), std::string::npos);
  EXPECT_NE(formatted.find("\n\n"), std::string::npos);  // blank line between documents
  EXPECT_EQ(summary.duplicate_lines_removed, 2u * 47u);
  EXPECT_EQ(m["dedup"]["most_repeated"][0]["occurrences"], 48);
  const std::string duplicates = read(root_ / "out" / "duplicates.tsv");
  EXPECT_NE(duplicates.find("48\tThank you.\n"), std::string::npos);
  for (const auto& entry : fs::directory_iterator(root_ / "out"))
    EXPECT_NE(entry.path().filename().string().front(), '.') << entry.path();  // no temporary files
}

TEST_F(PrepTest, SameSeedGivesIdenticalShardsWhateverTheThreadCount) {
  prep_pretraining(options("a"), *tokenizer_.get(), nullptr);
  // Over a second apart: the files must not record when they were written.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  PrepOptions one_thread = options("b");
  one_thread.threads = 1;
  prep_pretraining(one_thread, *tokenizer_.get(), nullptr);
  PrepOptions other_seed = options("c");
  other_seed.seed = 7;
  prep_pretraining(other_seed, *tokenizer_.get(), nullptr);
  for (size_t s = 0; s < 3; ++s) {
    EXPECT_EQ(manifest("a")["shards"][s]["sha256"], manifest("b")["shards"][s]["sha256"]) << s;
    EXPECT_NE(manifest("a")["shards"][s]["sha256"], manifest("c")["shards"][s]["sha256"]) << s;
  }
}

TEST_F(PrepTest, SentencePerLineInputGivesTheSameCorpus) {
  prep_pretraining(options("raw-out"), *tokenizer_.get(), nullptr);
  // The formatted corpus is itself valid "sentences" input: documents must survive the round trip.
  fs::create_directories(root_ / "formatted");
  fs::copy_file(root_ / "raw-out" / "formatted.txt", root_ / "formatted" / "corpus.txt");
  PrepOptions again = options("sentences-out");
  again.inputs = {(root_ / "formatted").string()};
  again.input_format = "sentences";
  prep_pretraining(again, *tokenizer_.get(), nullptr);
  EXPECT_EQ(read(root_ / "sentences-out" / "formatted.txt"), read(root_ / "raw-out" / "formatted.txt"));
  EXPECT_EQ(manifest("sentences-out")["documents"]["kept"], 8);
  EXPECT_EQ(manifest("sentences-out")["tokens"], manifest("raw-out")["tokens"]);
}

TEST_F(PrepTest, RerunWithFewerShardsRemovesStaleShards) {
  PrepOptions four = options("out");
  four.shards = 4;
  prep_pretraining(four, *tokenizer_.get(), nullptr);
  EXPECT_TRUE(fs::exists(root_ / "out" / "training_00003.hdf5"));
  prep_pretraining(options("out"), *tokenizer_.get(), nullptr);
  EXPECT_FALSE(fs::exists(root_ / "out" / "training_00003.hdf5"));
  EXPECT_FALSE(fs::exists(root_ / "out" / "training_00002.hdf5"));
  EXPECT_TRUE(fs::exists(root_ / "out" / "training_00001.hdf5"));
}

TEST_F(PrepTest, BadOptionsAndInputsAreReportedTogether) {
  PrepOptions bad = options("out");
  bad.max_predictions = 0;
  bad.mask_ratio = 0.9;
  bad.random_ratio = 0.2;
  try {
    prep_pretraining(bad, *tokenizer_.get(), nullptr);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--max-predictions"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--mask-ratio"), std::string::npos) << e.what();
  }
  PrepOptions missing = options("out");
  missing.inputs = {(root_ / "nowhere").string()};
  EXPECT_THROW(prep_pretraining(missing, *tokenizer_.get(), nullptr), std::invalid_argument);
}
