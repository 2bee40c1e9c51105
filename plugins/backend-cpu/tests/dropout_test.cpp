// dropout: the mask is the Philox stream keyed by (seed, offset), identical for every thread
// count, keeps about 1 − p, scales by 1/(1 − p), and backward applies the same mask.
#include "loom/sdk/philox.hpp"
#include "op_test_support.hpp"

namespace {

using namespace loom_cpu_test;

TEST(Dropout, MaskIsTheDocumentedPhiloxStream) {
  const int64_t n = 1003;
  const float p = 0.1f;
  std::vector<float> x(n, 1.0f), y(n);
  backend().dropout_forward(view(x, {n}), view(y, {n}), p, 1234, 77);
  const uint32_t threshold = loom::dropout_threshold(p);
  int64_t kept = 0;
  for (int64_t e = 0; e < n; ++e) {
    const bool keep = loom::philox_word(1234, 77 + e) >= threshold;
    EXPECT_EQ(y[e], keep ? 1.0f / (1.0f - p) : 0.0f) << "element " << e;
    kept += keep;
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.9, 0.03);
}

TEST(Dropout, SameResultForEveryThreadCount) {
  const int64_t n = 3 * 4096 + 17;  // several chunks, a ragged tail
  auto x = random_floats(n, 71);
  std::vector<float> reference(n);
  loom_cpu::CpuBackend one(1);
  one.dropout_forward(view(x, {n}), view(reference, {n}), 0.3f, 99, 5);
  for (int threads : {2, 3, 5}) {
    loom_cpu::CpuBackend many(threads);
    std::vector<float> y(n);
    many.dropout_forward(view(x, {n}), view(y, {n}), 0.3f, 99, 5);
    EXPECT_EQ(y, reference) << threads << " threads";
  }
}

TEST(Dropout, KeyedBySeedAndOffset) {
  const int64_t n = 500, shift = 123;
  std::vector<float> ones(n + shift, 1.0f), big(n + shift), small(n), other_seed(n);
  backend().dropout_forward(view(ones, {n + shift}), view(big, {n + shift}), 0.5f, 42, 0);
  std::vector<float> x(n, 1.0f);
  backend().dropout_forward(view(x, {n}), view(small, {n}), 0.5f, 42, shift);
  EXPECT_EQ(small, std::vector<float>(big.begin() + shift, big.end()))
      << "offset k = elements k.. of the stream";
  backend().dropout_forward(view(x, {n}), view(other_seed, {n}), 0.5f, 43, shift);
  EXPECT_NE(small, other_seed);
}

TEST(Dropout, BackwardAppliesTheForwardMask) {
  const int64_t n = 257;
  auto x = random_floats(n, 72), dy = random_floats(n, 73);
  std::vector<float> ones(n, 1.0f), mask(n), dx(n);
  backend().dropout_forward(view(ones, {n}), view(mask, {n}), 0.2f, 7, 1000);
  backend().dropout_backward(view(dy, {n}), view(dx, {n}), 0.2f, 7, 1000);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(dx[i], dy[i] * mask[i]);
  // In place, and bf16 storage of the forward.
  auto x16 = to_bf16(x);
  std::vector<loom::BFloat16> y16(n);
  backend().dropout_forward(view(x16, {n}), view(y16, {n}), 0.2f, 7, 1000);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(loom::to_f32(y16[i]), loom::to_f32(loom::to_bf16(loom::to_f32(x16[i]) * mask[i])));
  backend().dropout_backward(view(dy, {n}), view(dy, {n}), 0.2f, 7, 1000);
  EXPECT_EQ(dy, dx);
}

TEST(Dropout, ZeroProbabilityCopies) {
  auto x = random_floats(50, 74);
  std::vector<float> y(50);
  backend().dropout_forward(view(x, {50}), view(y, {50}), 0.0f, 1, 0);
  EXPECT_EQ(x, y);
  EXPECT_THROW(backend().dropout_forward(view(x, {50}), view(y, {50}), 1.0f, 1, 0), loom::Error);
}

}  // namespace
