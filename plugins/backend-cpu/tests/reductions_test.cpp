// sum_squares per segment, global_norm, check_finite.
#include "op_test_support.hpp"

namespace {

using namespace loom_cpu_test;

TEST(Reductions, SumSquaresPerSegmentAndGlobalNorm) {
  const int64_t n = 70001;  // several chunks
  auto x = random_floats(n, 101);
  const int64_t offsets[] = {0, 10, 10, 40000, n};
  std::vector<float> out(4), norm(1);
  backend().sum_squares(view(x, {n}), offsets, 4, view(out, {4}));
  double total = 0;
  for (int s = 0; s < 4; ++s) {
    double expected = 0;
    for (int64_t i = offsets[s]; i < offsets[s + 1]; ++i) expected += double(x[i]) * x[i];
    EXPECT_NEAR(out[s], expected, 1e-6 * expected + 1e-12) << "segment " << s;
    total += expected;
  }
  EXPECT_EQ(out[1], 0.0f);
  backend().global_norm(view(x, {n}), view(norm, {1}));
  EXPECT_NEAR(norm[0], std::sqrt(total), 1e-6 * std::sqrt(total));
  loom_cpu::CpuBackend one(1);
  std::vector<float> out1(4);
  one.sum_squares(view(x, {n}), offsets, 4, view(out1, {4}));
  EXPECT_EQ(out1, out) << "thread-count independent";
  const int64_t bad[] = {0, 5, 3};
  std::vector<float> two(2);
  EXPECT_THROW(backend().sum_squares(view(x, {n}), bad, 2, view(two, {2})), loom::Error);
}

TEST(Reductions, CheckFiniteSetsTheFlagOnlyForNanOrInfinity) {
  std::vector<float> x = random_floats(100000, 102);
  std::vector<int32_t> flag = {0};
  backend().check_finite(view(x, {100000}), view(flag, {1}));
  EXPECT_EQ(flag[0], 0);
  x[77777] = INFINITY;
  backend().check_finite(view(x, {100000}), view(flag, {1}));
  EXPECT_EQ(flag[0], 1);
  flag[0] = 0;
  std::vector<loom::BFloat16> h = to_bf16(random_floats(9, 103));
  backend().check_finite(view(h, {9}), view(flag, {1}));
  EXPECT_EQ(flag[0], 0);
  h[4] = loom::to_bf16(NAN);
  backend().check_finite(view(h, {9}), view(flag, {1}));
  EXPECT_EQ(flag[0], 1);
  std::vector<float> finite = {1, 2};
  backend().check_finite(view(finite, {2}), view(flag, {1}));
  EXPECT_EQ(flag[0], 1) << "the flag is never cleared";
}

}  // namespace
