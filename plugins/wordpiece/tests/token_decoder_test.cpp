// decode: "##" gluing, special tokens, transformers' clean_up_tokenization.
#include <gtest/gtest.h>

#include "loom/sdk/error.hpp"
#include "wordpiece_test_support.hpp"

namespace loom::wordpiece::testing {
namespace {

std::string decode(const std::vector<int32_t>& ids, DecodeOptions options = DecodeOptions{}) {
  const auto& t = uncased();
  std::string text(t.decode(ids.data(), ids.size(), options, nullptr, 0), '\0');
  t.decode(ids.data(), ids.size(), options, text.data(), text.size());
  return text;
}

std::vector<int32_t> ids_of(const std::string& text) {
  return uncased().tokenize_to_vector(text.data(), text.size());
}

TEST(TokenDecoder, GluesContinuationsAndCleansUpSpaces) {
  EXPECT_EQ(decode(ids_of("Hello, world! I don't know. Isn't it?")), "hello, world! i don't know. isn't it?");
  EXPECT_EQ(decode(ids_of("tokenization")), "tokenization");
  DecodeOptions raw;
  raw.clean_up_tokenization_spaces = false;
  EXPECT_EQ(decode(ids_of("Hello, world!"), raw), "hello , world !");
}

TEST(TokenDecoder, SpecialTokensAreKeptOrSkipped) {
  const std::vector<int32_t> ids{101, 7592, 102, 2088, 102, 0, 0};
  EXPECT_EQ(decode(ids), "[CLS] hello [SEP] world [SEP] [PAD] [PAD]");
  DecodeOptions skip;
  skip.skip_special_tokens = true;
  EXPECT_EQ(decode(ids, skip), "hello world");
  // A leading continuation keeps its ##; after a special token it glues (transformers ≥ 4.34).
  EXPECT_EQ(decode({2015, 7592}), "##s hello");
  EXPECT_EQ(decode({102, 2015}), "[SEP]s");
}

TEST(TokenDecoder, ReportsTheBytesNeededAndRejectsUnknownIds) {
  const auto& t = uncased();
  const std::vector<int32_t> ids{7592, 2088};
  char small[4];
  EXPECT_EQ(t.decode(ids.data(), ids.size(), DecodeOptions{}, small, sizeof(small)), 11u);
  EXPECT_EQ(std::string(small, 4), "hell");
  const std::vector<int32_t> bad{7592, 30522};
  EXPECT_THROW(t.decode(bad.data(), bad.size(), DecodeOptions{}, nullptr, 0), loom::Error);
}

}  // namespace
}  // namespace loom::wordpiece::testing
