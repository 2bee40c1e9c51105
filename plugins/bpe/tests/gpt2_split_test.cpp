// GPT-2's split pattern, scanned by hand, on the cases where a backtracking regex is subtle.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpt2_split.hpp"

namespace loom::bpe {
namespace {

std::vector<std::string> pieces_of(const std::string& text) {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  split_gpt2(text, ranges);
  std::vector<std::string> out;
  for (const auto& [b, e] : ranges) out.push_back(text.substr(b, e - b));
  return out;
}

TEST(Gpt2Split, SpaceJoinsTheWordAfterIt) {
  EXPECT_EQ(pieces_of("Hello world"), (std::vector<std::string>{"Hello", " world"}));
}

TEST(Gpt2Split, WhitespaceRunLeavesItsLastSpaceToTheNextWord) {
  EXPECT_EQ(pieces_of("a   b"), (std::vector<std::string>{"a", "  ", " b"}));
  EXPECT_EQ(pieces_of("a \t\tb"), (std::vector<std::string>{"a", " \t", "\t", "b"}));
  EXPECT_EQ(pieces_of("a  "), (std::vector<std::string>{"a", "  "}));
  EXPECT_EQ(pieces_of("\nb"), (std::vector<std::string>{"\n", "b"}));
}

TEST(Gpt2Split, ContractionsAreLowerCaseOnly) {
  EXPECT_EQ(pieces_of("he's"), (std::vector<std::string>{"he", "'s"}));
  EXPECT_EQ(pieces_of("HE'S"), (std::vector<std::string>{"HE", "'", "S"}));
  EXPECT_EQ(pieces_of("we'll 'sand"), (std::vector<std::string>{"we", "'ll", " '", "sand"}));
}

TEST(Gpt2Split, LettersNumbersAndOthersAreSeparateRuns) {
  EXPECT_EQ(pieces_of("abc123!!x"), (std::vector<std::string>{"abc", "123", "!!", "x"}));
  EXPECT_EQ(pieces_of(" 42 ?!"), (std::vector<std::string>{" 42", " ?!"}));
}

}  // namespace
}  // namespace loom::bpe
