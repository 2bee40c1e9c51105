// tokenizer/wordpiece loaded through the host registry, as `loom tokenize` and the data tools use it.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "recipe/errors.hpp"
#include "plugin_loading/plugin_registry.hpp"
#include "loom/sdk/tokenizer.hpp"
#include "loom/sdk/vocabulary_file.hpp"
#include "wordpiece_test_support.hpp"

namespace loom::wordpiece::testing {
namespace {

loom::host::Component<loom::Tokenizer> make_wordpiece(const std::string& toml, bool dry_run = false) {
  loom::host::PluginSearchOptions search;
  search.directories = {LOOM_PLUGIN_DIR};
  search.default_paths = false;
  search.environment = false;
  loom::host::PluginRegistry registry(search);
  const auto* entry = registry.find(LOOM_KIND_TOKENIZER, "wordpiece");
  if (entry == nullptr) throw std::runtime_error("tokenizer/wordpiece not found");
  return registry.create<loom::Tokenizer>(*entry, {"tokenizer", toml, "", "test.toml:3:1"}, dry_run);
}

std::string vocab_option() {
  return "vocab = \"" + uncased_vocab_path() + "\"\n";
}

TEST(WordpiecePlugin, NamesItsVocabularyFileAndItsSha256) {
  auto tokenizer = make_wordpiece(vocab_option());
  const auto* file = tokenizer.find<loom::VocabularyFile>();
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(std::string(file->vocabulary_path()), uncased_vocab_path());
  // What `sha256sum` prints for the file, and what loom prep pretraining records in a manifest.
  EXPECT_STREQ(file->vocabulary_sha256(), "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3");
}

TEST(WordpiecePlugin, TokenizesThroughTheInterface) {
  auto tokenizer = make_wordpiece(vocab_option());
  tokenizer.call([](loom::Tokenizer& t) {
    EXPECT_EQ(t.vocab_size(), 30522);
    const SpecialTokenIds s = t.special_token_ids();
    EXPECT_EQ(s.pad, 0);
    EXPECT_EQ(s.unk, 100);
    EXPECT_EQ(s.cls, 101);
    EXPECT_EQ(s.sep, 102);
    EXPECT_EQ(s.mask, 103);
    EXPECT_TRUE(t.lower_case());
    const std::string text = "Hello, world!";
    int32_t ids[3];
    EXPECT_EQ(t.tokenize(text.data(), text.size(), ids, 3), 4u);  // needs 4, wrote 3
    EXPECT_EQ(std::vector<int32_t>(ids, ids + 3), (std::vector<int32_t>{7592, 1010, 2088}));
    EXPECT_EQ(t.token_to_id("##s", 3), 2015);
    EXPECT_STREQ(t.id_to_token(7592), "hello");
    EXPECT_TRUE(t.is_continuation(2015));
  });
}

TEST(WordpiecePlugin, IsSafeToCallFromSeveralThreads) {
  auto tokenizer = make_wordpiece(vocab_option());
  const std::string text = "The quick brown fox jumps over the lazy dog, naïvely — 中文 café.";
  std::vector<int32_t> expected(64);
  expected.resize(tokenizer.get()->tokenize(text.data(), text.size(), expected.data(), expected.size()));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&] {
      for (int k = 0; k < 2000; ++k) {
        int32_t ids[64];
        const size_t n = tokenizer.get()->tokenize(text.data(), text.size(), ids, 64);
        if (std::vector<int32_t>(ids, ids + n) != expected) ++mismatches;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(WordpiecePlugin, OptionProblemsNameTheKey) {
  try {
    make_wordpiece("vocab = \"/no/such/vocab.txt\"\ncasde = true\n");
    FAIL() << "expected RecipeError";
  } catch (const loom::host::RecipeError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("tokenizer.vocab"), std::string::npos) << message;
    EXPECT_NE(message.find("/no/such/vocab.txt"), std::string::npos) << message;
    EXPECT_NE(message.find("did you mean 'cased'"), std::string::npos) << message;
  }
  EXPECT_THROW(make_wordpiece(""), loom::host::RecipeError);  // vocab is required
  EXPECT_THROW(make_wordpiece(vocab_option() + "max_input_chars_per_word = 0\n"), loom::host::RecipeError);
}

TEST(WordpiecePlugin, AVocabularyWithoutUnkIsRejected) {
  const std::string path = ::testing::TempDir() + "/no_unk_vocab.txt";
  {
    std::ofstream out(path);
    out << "[PAD]\nhello\n";
  }
  EXPECT_THROW(make_wordpiece("vocab = \"" + path + "\"\n"), loom::host::RecipeError);
}

TEST(WordpiecePlugin, DryRunChecksTheFileButLoadsNothing) {
  auto tokenizer = make_wordpiece(vocab_option() + "cased = true\n", /*dry_run=*/true);
  EXPECT_THROW(tokenizer.call([](loom::Tokenizer& t) { return t.tokenize("a", 1, nullptr, 0); }),
               loom::host::PluginError);
  EXPECT_THROW(make_wordpiece("vocab = \"/no/such/vocab.txt\"\n", true), loom::host::RecipeError);
}

}  // namespace
}  // namespace loom::wordpiece::testing
