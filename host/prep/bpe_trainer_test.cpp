// The BPE trainer against Hugging Face `tokenizers`' BpeTrainer: on a committed corpus sample, the
// merges equal, merge for merge, those its Node.js binding learned with the same settings
// (tools/make_bpe_fixtures.mjs: vocab_size 30000, min_frequency 0, no special tokens, no initial
// alphabet, ByteLevel without a prefix space; each line is a text with its newline).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "plugin_loading/plugin_registry.hpp"
#include "prep/bpe_tokenizer_json.hpp"
#include "prep/bpe_trainer.hpp"

namespace loom::host {
namespace {

const std::string kFixtures = std::string(LOOM_SOURCE_FIXTURE_DIR) + "/bpe";

TEST(BpeTrainer, LearnsTheMergesTokenizersLearns) {
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
  std::ifstream in(kFixtures + "/corpus-sample.txt", std::ios::binary);
  for (std::string line; std::getline(in, line);) count_words(*splitter.get(), line + "\n", counts, scratch);
  std::filesystem::remove(splitter_path);

  const BpeTrainingResult trained = learn_bpe(counts, BpeTrainingOptions{30000, 0, {}, {}});
  std::ifstream expected_in(kFixtures + "/expected-trained-merges.txt", std::ios::binary);
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

}  // namespace
}  // namespace loom::host
