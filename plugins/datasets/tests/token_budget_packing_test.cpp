// pack_by_token_budget: budget and row cap respected, every sequence exactly once, the best-fit
// choices themselves, oversize sequences alone, determinism.
#include <gtest/gtest.h>

#include <random>

#include "token_budget_packing.hpp"

using loom_datasets::pack_by_token_budget;
using loom_datasets::TokenBin;

namespace {

std::vector<uint32_t> random_lengths(size_t count, uint32_t longest, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint32_t> lengths(count);
  for (auto& length : lengths) length = 1 + gen() % longest;
  return lengths;
}

uint64_t tokens_of(const TokenBin& bin, const std::vector<uint32_t>& lengths) {
  uint64_t sum = 0;
  for (uint32_t i : bin) sum += lengths[i];
  return sum;
}

}  // namespace

TEST(TokenBudgetPacking, EverySequenceOnceWithinBudgetAndRowCap) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const std::vector<uint32_t> lengths = random_lengths(200 + seed * 7, 128, seed);
    const uint64_t budget = 256 + seed * 13;
    const uint32_t max_rows = 3 + seed % 5;
    const std::vector<TokenBin> bins = pack_by_token_budget(lengths, budget, max_rows);
    std::vector<int> seen(lengths.size(), 0);
    uint32_t previous_first = 0;
    for (size_t b = 0; b < bins.size(); ++b) {
      const TokenBin& bin = bins[b];
      ASSERT_FALSE(bin.empty());
      EXPECT_LE(tokens_of(bin, lengths), budget);
      EXPECT_LE(bin.size(), max_rows);
      EXPECT_TRUE(std::is_sorted(bin.begin(), bin.end()));
      if (b > 0) {
        EXPECT_GT(bin.front(), previous_first);  // bins ordered by their first sequence
      }
      previous_first = bin.front();
      for (uint32_t i : bin) ++seen[i];
    }
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << "sequence " << i;
  }
}

TEST(TokenBudgetPacking, BestFitDecreasingChoosesTheFullestBinThatFits) {
  // Budget 10. Longest first: 7 → bin A (3 left); 6 → bin B (4 left); 4 → B (fits 4 exactly, A
  // has only 3); 3 → A (exactly 3 left); 2 → new bin C.
  const std::vector<uint32_t> lengths = {2, 7, 4, 6, 3};
  const std::vector<TokenBin> bins = pack_by_token_budget(lengths, 10, 8);
  const std::vector<TokenBin> expected = {{0}, {1, 4}, {2, 3}};  // C, A, B by first position
  EXPECT_EQ(bins, expected);
}

TEST(TokenBudgetPacking, TiesGoToTheEarlierSequenceAndTheEarlierBin) {
  // Equal lengths keep their order; two equally full bins: the one opened first takes the next.
  const std::vector<uint32_t> lengths = {5, 5, 5, 5, 1, 1};
  const std::vector<TokenBin> bins = pack_by_token_budget(lengths, 6, 4);
  const std::vector<TokenBin> expected = {{0, 4}, {1, 5}, {2}, {3}};
  EXPECT_EQ(bins, expected);
}

TEST(TokenBudgetPacking, ASequenceLongerThanTheBudgetGetsABinOfItsOwn) {
  const std::vector<uint32_t> lengths = {3, 50, 4, 2, 40};
  const std::vector<TokenBin> bins = pack_by_token_budget(lengths, 10, 8);
  const std::vector<TokenBin> expected = {{0, 2, 3}, {1}, {4}};
  EXPECT_EQ(bins, expected);
}

TEST(TokenBudgetPacking, TheRowCapOpensNewBinsForShortSequences) {
  const std::vector<uint32_t> lengths(10, 1);
  const std::vector<TokenBin> bins = pack_by_token_budget(lengths, 1000, 4);
  const std::vector<TokenBin> expected = {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}};
  EXPECT_EQ(bins, expected);
  EXPECT_EQ(pack_by_token_budget(lengths, 1000, 1).size(), 10u);
}

TEST(TokenBudgetPacking, IsAFunctionOfItsInputs) {
  const std::vector<uint32_t> lengths = random_lengths(500, 300, 7);
  EXPECT_EQ(pack_by_token_budget(lengths, 512, 16), pack_by_token_budget(lengths, 512, 16));
  EXPECT_TRUE(pack_by_token_budget({}, 512, 16).empty());
}

TEST(TokenBudgetPacking, FillsBinsCloseToTheBudget) {
  // Best-fit decreasing on many short sequences wastes little: all bins but the last few full.
  const std::vector<uint32_t> lengths = random_lengths(512, 64, 3);
  uint64_t total = 0;
  for (uint32_t length : lengths) total += length;
  const std::vector<TokenBin> bins = pack_by_token_budget(lengths, 512, 64);
  EXPECT_LE(bins.size(), (total + 511) / 512 + 1);
}
