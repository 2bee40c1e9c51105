// tokenizer/bpe loaded through the host registry, as recipes and the data verbs load it: both file
// forms, the named interfaces it offers, invalid UTF-8, truncation and padding.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixture_reader.hpp"
#include "loom/sdk/token_offsets.hpp"
#include "loom/sdk/tokenizer.hpp"
#include "loom/sdk/vocabulary_file.hpp"
#include "plugin_loading/plugin_registry.hpp"

namespace loom::bpe::testing {
namespace {

loom::host::Component<loom::Tokenizer> make_bpe(const std::string& toml) {
  loom::host::PluginSearchOptions search;
  search.directories = {LOOM_PLUGIN_DIR};
  search.default_paths = false;
  search.environment = false;
  loom::host::PluginRegistry registry(search);
  const auto* entry = registry.find(LOOM_KIND_TOKENIZER, "bpe");
  if (entry == nullptr) throw std::runtime_error("tokenizer/bpe not found");
  return registry.create<loom::Tokenizer>(*entry, {"tokenizer", toml, "", "test.toml:3:1"}, false);
}

std::string gpt2_options() {
  return "vocab = \"" + fixture_path("gpt2/vocab.json") + "\"\nmerges = \"" + fixture_path("gpt2/merges.txt") + "\"\n";
}

TEST(BpePlugin, Gpt2FilesThroughTheRegistry) {
  auto tokenizer = make_bpe(gpt2_options());
  ASSERT_NE(tokenizer.find<loom::VocabularyFile>(), nullptr);
  EXPECT_EQ(std::string(tokenizer.find<loom::VocabularyFile>()->vocabulary_sha256()).size(), 64u);
  const auto* offsets = tokenizer.find<loom::TokenOffsets>();
  ASSERT_NE(offsets, nullptr);
  tokenizer.call([&](loom::Tokenizer& t) {
    EXPECT_EQ(t.vocab_size(), 50257);
    const std::string text = "Hello world";
    int32_t ids[4];
    ASSERT_EQ(t.tokenize(text.data(), text.size(), ids, 4), 2u);
    EXPECT_EQ(ids[0], 15496);
    EXPECT_EQ(ids[1], 995);
    EXPECT_TRUE(t.is_continuation(15496));   // "Hello": no leading Ġ
    EXPECT_FALSE(t.is_continuation(995));    // "Ġworld"
    EXPECT_FALSE(t.is_continuation(50256));  // <|endoftext|>, an added token
    char decoded[64];
    ASSERT_EQ(t.decode(ids, 2, loom::DecodeOptions{}, decoded, sizeof decoded), text.size());
    EXPECT_EQ(std::string(decoded), text);
  });
}

TEST(BpePlugin, InvalidUtf8BecomesTheReplacementCharacterWithByteOffsetsIntoTheInput) {
  auto tokenizer = make_bpe(gpt2_options());
  const auto* offsets = tokenizer.find<loom::TokenOffsets>();
  tokenizer.call([&](loom::Tokenizer& t) {
    const std::string invalid = "a\xff\xfe b", replaced = "a\xef\xbf\xbd\xef\xbf\xbd b";
    std::vector<int32_t> a(16), b(16);
    std::vector<loom::TokenOffset> o(16);
    const size_t n = offsets->tokenize_with_offsets(invalid.data(), invalid.size(), loom::OffsetUnit::bytes, a.data(),
                                                    o.data(), a.size());
    const size_t m = t.tokenize(replaced.data(), replaced.size(), b.data(), b.size());
    ASSERT_EQ(n, m);
    EXPECT_EQ(std::vector<int32_t>(a.begin(), a.begin() + n), std::vector<int32_t>(b.begin(), b.begin() + m));
    EXPECT_EQ(t.invalid_utf8_replacements(), 2u);
    EXPECT_EQ(o[0].begin, 0u);
    EXPECT_EQ(o[n - 1].end, invalid.size());  // " b" ends at the input's end, not the repaired text's
  });
}

TEST(BpePlugin, TemplateTruncationAndPaddingAsTokenizers) {
  auto tokenizer = make_bpe("vocab = \"" + fixture_path("modernbert-tokenizer.json") + "\"\n");
  tokenizer.call([&](loom::Tokenizer& t) {
    const SpecialTokenIds s = t.special_token_ids();
    EXPECT_EQ(s.cls, 5257);
    EXPECT_EQ(s.sep, 5258);
    EXPECT_EQ(s.pad, 5259);
    EXPECT_EQ(s.mask, 5260);
    EXPECT_EQ(s.unk, 5256);
    const std::string a = "one two three four five six", b = "seven eight nine ten eleven twelve";
    EncodeOptions options;
    options.max_length = 9;  // 3 specials: six tokens left, three each
    std::vector<int32_t> ids(16), types(16), mask(16);
    const size_t n = t.encode(a.data(), a.size(), b.data(), b.size(), options,
                              EncodedBuffers{ids.data(), types.data(), mask.data(), ids.size()});
    ASSERT_EQ(n, 9u);
    EXPECT_EQ(ids[0], s.cls);
    EXPECT_EQ(ids[4], s.sep);
    EXPECT_EQ(ids[8], s.sep);
    EXPECT_EQ(types[5], 1);
    options.max_length = 12;
    options.pad_to_max_length = true;
    const size_t padded = t.encode(a.data(), 3, nullptr, 0, options,
                                   EncodedBuffers{ids.data(), types.data(), mask.data(), ids.size()});
    ASSERT_EQ(padded, 12u);
    EXPECT_EQ(ids[11], s.pad);
    EXPECT_EQ(mask[11], 0);
    EXPECT_EQ(mask[0], 1);
  });
}

TEST(BpePlugin, AVocabJsonWithoutMergesIsRefused) {
  try {
    make_bpe("vocab = \"" + fixture_path("gpt2/vocab.json") + "\"\n");
    FAIL() << "expected a refusal";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("merges"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::bpe::testing
