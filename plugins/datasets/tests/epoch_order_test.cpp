// EpochOrder: coverage per epoch, file locality, determinism, rank shares.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "epoch_order.hpp"

using namespace loom_datasets;

TEST(EpochOrder, RanksPartitionEveryEpochExactly) {
  const std::vector<uint64_t> groups = {7, 1, 12, 5};
  for (int32_t world : {1, 2, 3, 8}) {
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      std::vector<uint64_t> all;
      for (int32_t rank = 0; rank < world; ++rank) {
        const RankSlicing slicing{rank, world, 3};
        const auto order = rank_order(groups, true, 42, epoch, 0, 25, slicing);
        EXPECT_EQ(order.size(), rank_share(25, slicing, false));
        all.insert(all.end(), order.begin(), order.end());
      }
      std::sort(all.begin(), all.end());
      std::vector<uint64_t> expected(25);
      std::iota(expected.begin(), expected.end(), 0u);
      EXPECT_EQ(all, expected) << "world " << world << " epoch " << epoch;
    }
  }
}

TEST(EpochOrder, ShufflesPerEpochDeterministicallyAndKeepsGroupsTogether) {
  const std::vector<uint64_t> groups = {50, 50};
  const auto a = rank_order(groups, true, 1, 0, 0, 100, {});
  EXPECT_EQ(a, rank_order(groups, true, 1, 0, 0, 100, {}));
  EXPECT_NE(a, rank_order(groups, true, 1, 1, 0, 100, {}));
  EXPECT_NE(a, rank_order(groups, true, 2, 0, 0, 100, {}));
  // One group's instances are contiguous in the sequence.
  const bool first_group_first = a[0] < 50;
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(a[i] < 50, i < 50 ? first_group_first : !first_group_first);
  std::vector<uint64_t> sequential(100);
  std::iota(sequential.begin(), sequential.end(), 0u);
  EXPECT_EQ(rank_order(groups, false, 1, 3, 0, 100, {}), sequential);
}

TEST(EpochOrder, RanksTakeConsecutiveBlocksOfTheWorldSizeIndependentSequence) {
  const std::vector<uint64_t> groups = {7, 1, 12, 5};
  const auto sequence = rank_order(groups, true, 5, 2, 0, 25, {});
  // 2 ranks × batch 4: global batches [0,8) [8,16) [16,24) [24,25); rank 1 takes 4..7, 12..15, 20..23.
  const auto rank1 = rank_order(groups, true, 5, 2, 0, 25, RankSlicing{1, 2, 4});
  std::vector<uint64_t> expected;
  for (uint64_t p : {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23}) expected.push_back(sequence[p]);
  EXPECT_EQ(rank1, expected);
  // From a mid-epoch cursor (position 10, left by another world size) with 3 ranks × batch 2.
  const auto rank2 = rank_order(groups, true, 5, 2, 10, 25, RankSlicing{2, 3, 2});
  expected.clear();
  for (uint64_t p : {14, 15, 20, 21}) expected.push_back(sequence[p]);
  EXPECT_EQ(rank2, expected);
  EXPECT_EQ((RankSlicing{2, 3, 2}.rows_of(5)), 1u);
  EXPECT_EQ((RankSlicing{2, 3, 2}.rows_of(4)), 0u);
  EXPECT_EQ(rank_share(25, RankSlicing{1, 2, 4}, false), 12u);
  EXPECT_EQ(rank_share(25, RankSlicing{0, 2, 4}, true), 12u);
}

TEST(EpochOrder, StreamRandomIsUniformEnough) {
  StreamRandom random(9);
  std::vector<int> counts(10, 0);
  for (int i = 0; i < 100000; ++i) ++counts[random.below(10)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);
}
