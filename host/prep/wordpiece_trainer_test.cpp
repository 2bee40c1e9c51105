// WordPiece vocabulary learning: BERT's special-token layout, the alphabet, and the merge order
// on the classic low/lower/newest/widest corpus.
#include <gtest/gtest.h>

#include "prep/wordpiece_trainer.hpp"

namespace {

using loom::host::learn_wordpiece_vocabulary;
using loom::host::WordCounts;
using loom::host::WordpieceTrainingStats;

const WordCounts kCorpus{{"low", 5}, {"lower", 2}, {"newest", 6}, {"widest", 3}};

TEST(WordpieceTrainer, PutsSpecialTokensWhereBertHasThem) {
  const auto vocabulary = learn_wordpiece_vocabulary(kCorpus, 200, 2, nullptr);
  EXPECT_EQ(vocabulary[0], "[PAD]");
  EXPECT_EQ(vocabulary[1], "[unused0]");
  EXPECT_EQ(vocabulary[99], "[unused98]");
  EXPECT_EQ(vocabulary[100], "[UNK]");
  EXPECT_EQ(vocabulary[101], "[CLS]");
  EXPECT_EQ(vocabulary[102], "[SEP]");
  EXPECT_EQ(vocabulary[103], "[MASK]");
}

TEST(WordpieceTrainer, AlphabetHoldsEveryCharacterInEveryPositionItOccurs) {
  WordpieceTrainingStats stats;
  const auto vocabulary = learn_wordpiece_vocabulary(kCorpus, 115, 2, &stats);
  const std::vector<std::string> alphabet(vocabulary.begin() + 104, vocabulary.end());
  EXPECT_EQ(alphabet, (std::vector<std::string>{"l", "n", "w", "##d", "##e", "##i", "##o", "##r", "##s",
                                                "##t", "##w"}));
  EXPECT_EQ(stats.alphabet, 11u);
  EXPECT_EQ(stats.merges, 0u);
  EXPECT_EQ(stats.words, 16u);
  EXPECT_EQ(stats.unique_words, 4u);
}

TEST(WordpieceTrainer, MergesTheMostFrequentPairFirstTiesToOlderSymbols) {
  // Pair counts: (##e,##s) = (##s,##t) = 9 → the older pair "##es"; then "##est" (9); then
  // (l,##o) = (##o,##w) = 7 → "lo"; then "low" (7).
  const auto vocabulary = learn_wordpiece_vocabulary(kCorpus, 119, 2, nullptr);
  ASSERT_EQ(vocabulary.size(), 119u);
  EXPECT_EQ(std::vector<std::string>(vocabulary.end() - 4, vocabulary.end()),
            (std::vector<std::string>{"##es", "##est", "lo", "low"}));
}

TEST(WordpieceTrainer, StopsBelowMinFrequencyAndRejectsTooSmallSizes) {
  WordpieceTrainingStats stats;
  const auto vocabulary = learn_wordpiece_vocabulary(kCorpus, 1000, 10, &stats);
  EXPECT_EQ(vocabulary.size(), 115u);  // no pair occurs 10 times
  EXPECT_EQ(stats.merges, 0u);
  EXPECT_THROW(learn_wordpiece_vocabulary(kCorpus, 114, 2, nullptr), std::runtime_error);
}

TEST(WordpieceTrainer, IsDeterministicAndSplitsUtf8ByCodePoint) {
  const WordCounts corpus{{"café", 4}, {"cafés", 3}, {"中", 2}};
  const auto a = learn_wordpiece_vocabulary(corpus, 130, 2, nullptr);
  const auto b = learn_wordpiece_vocabulary(corpus, 130, 2, nullptr);
  EXPECT_EQ(a, b);
  EXPECT_NE(std::find(a.begin(), a.end(), "##é"), a.end());
  EXPECT_NE(std::find(a.begin(), a.end(), "中"), a.end());
  EXPECT_NE(std::find(a.begin(), a.end(), "café"), a.end());
}

}  // namespace
