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
        const auto order = rank_order(groups, true, 42, epoch, rank, world);
        EXPECT_EQ(order.size(), rank_share(25, rank, world));
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
  const auto a = rank_order(groups, true, 1, 0, 0, 1);
  EXPECT_EQ(a, rank_order(groups, true, 1, 0, 0, 1));
  EXPECT_NE(a, rank_order(groups, true, 1, 1, 0, 1));
  EXPECT_NE(a, rank_order(groups, true, 2, 0, 0, 1));
  // One group's instances are contiguous in the sequence.
  const bool first_group_first = a[0] < 50;
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(a[i] < 50, i < 50 ? first_group_first : !first_group_first);
  std::vector<uint64_t> sequential(100);
  std::iota(sequential.begin(), sequential.end(), 0u);
  EXPECT_EQ(rank_order(groups, false, 1, 3, 0, 1), sequential);
}

TEST(EpochOrder, StreamRandomIsUniformEnough) {
  StreamRandom random(9);
  std::vector<int> counts(10, 0);
  for (int i = 0; i < 100000; ++i) ++counts[random.below(10)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);
}
