// PythonRandom reproduces CPython's random.Random draws (values printed by /usr/bin/python3).
#include <gtest/gtest.h>

#include "prep/python_random.hpp"

using loom::host::PythonRandom;

TEST(PythonRandom, MatchesCPythonForSeed12345) {
  // random.Random(12345): random(), random(), randint(2,125), randint(0,30521), randint(1,1),
  // then shuffle(list(range(10))).
  PythonRandom rng(12345);
  EXPECT_DOUBLE_EQ(rng.random(), 0.41661987254534116);
  EXPECT_DOUBLE_EQ(rng.random(), 0.010169169457068361);
  EXPECT_EQ(rng.randint(2, 125), 107);
  EXPECT_EQ(rng.randint(0, 30521), 26307);
  EXPECT_EQ(rng.randint(1, 1), 1);
  std::vector<int> items = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  rng.shuffle(items);
  EXPECT_EQ(items, (std::vector<int>{9, 6, 0, 2, 1, 8, 7, 4, 3, 5}));
}

TEST(PythonRandom, MatchesCPythonForZeroAndWideSeeds) {
  PythonRandom zero(0);
  EXPECT_DOUBLE_EQ(zero.random(), 0.8444218515250481);
  PythonRandom wide((uint64_t{1} << 40) + 7);  // a two-word init_by_array key
  EXPECT_DOUBLE_EQ(wide.random(), 0.6137037779936511);
  EXPECT_EQ(wide.randint(0, int64_t{1} << 40), 551799892330);  // getrandbits over 32 bits
}
