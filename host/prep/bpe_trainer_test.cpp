// The BPE trainer against Hugging Face `tokenizers`' BpeTrainer: on a committed corpus sample, the
// merges equal, merge for merge, those its Node.js binding learned with the same settings
// (tools/make_bpe_fixtures.mjs: vocab_size 30000, min_frequency 0, no special tokens, no initial
// alphabet, ByteLevel without a prefix space; each line is a text with its newline).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "plugin_loading/plugin_registry.hpp"
#include "prep/bpe_tokenizer_json.hpp"
#include "prep/bpe_trainer.hpp"

namespace loom::host {
namespace {

const std::string kFixtures = std::string(LOOM_SOURCE_FIXTURE_DIR) + "/bpe";

/// The merges Loom's trainer learns from the lines of `files` (each a text with its newline) with
/// BpeTrainer's defaults, against the merges in `expected_path`, merge for merge.
void expect_merges_of(const std::vector<std::filesystem::path>& files, const std::string& expected_path) {
  const auto splitter_path =
      std::filesystem::temp_directory_path() / ("loom-bpe-splitter-" + std::to_string(::getpid()) + ".json");
  std::ofstream(splitter_path) << splitter_bpe_tokenizer_json(false);
  PluginSearchOptions search;
  search.directories = {LOOM_PLUGIN_DIR};
  search.default_paths = false;
  search.environment = false;
  PluginRegistry registry(search);
  const auto* entry = registry.find(LOOM_KIND_TOKENIZER, "bpe");
  ASSERT_NE(entry, nullptr);
  auto splitter = registry.create<loom::Tokenizer>(
      *entry, {"tokenizer", "vocab = \"" + splitter_path.string() + "\"\n", "", "test"}, false);
  WordCounts counts;
  std::string scratch(1 << 16, '\0');
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    for (std::string line; std::getline(in, line);) count_words(*splitter.get(), line + "\n", counts, scratch);
  }
  std::filesystem::remove(splitter_path);

  const BpeTrainingResult trained = learn_bpe(counts, BpeTrainingOptions{30000, 0, {}, {}});
  std::ifstream expected_in(expected_path, std::ios::binary);
  std::vector<std::string> expected;
  for (std::string line; std::getline(expected_in, line);) expected.push_back(line);
  ASSERT_EQ(trained.merges.size(), expected.size());
  size_t differing = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const std::string merge = trained.merges[i].first + " " + trained.merges[i].second;
    if (merge != expected[i] && ++differing <= 5) ADD_FAILURE() << "merge " << i << ": " << merge << " vs " << expected[i];
  }
  EXPECT_EQ(differing, 0u) << "of " << expected.size() << " merges";
  EXPECT_EQ(trained.vocabulary.size(), trained.alphabet + trained.merges.size());
}

TEST(BpeTrainer, LearnsTheMergesTokenizersLearns) {
  expect_merges_of({kFixtures + "/corpus-sample.txt"}, kFixtures + "/expected-trained-merges.txt");
}

// The whole of data/raw (371 files, 12 MB; tests/e2e/bpe_train_data_raw_test.sh fetches it and sets
// the variables): 29,887 merges, each as BpeTrainer learns it. Without the variables there is no
// corpus to train on.
TEST(BpeTrainer, LearnsTheMergesTokenizersLearnsOnACorpusDirectory) {
  const char* corpus = std::getenv("LOOM_BPE_TRAIN_CORPUS");
  const char* expected = std::getenv("LOOM_BPE_TRAIN_EXPECTED");
  if (corpus == nullptr || expected == nullptr)
    GTEST_SKIP() << "LOOM_BPE_TRAIN_CORPUS / LOOM_BPE_TRAIN_EXPECTED unset (tests/e2e/bpe_train_data_raw_test.sh sets them)";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(corpus))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << corpus;
  expect_merges_of(files, expected);
}

}  // namespace
}  // namespace loom::host
