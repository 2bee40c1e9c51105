// cast, copy (strided), fill/zero, and the SDK's bf16/f16 scalar conversions.
#include <cstring>

#include "op_test_support.hpp"

namespace {

using namespace loom_cpu_test;

TEST(Float16, Bf16RoundsToNearestEvenAndKeepsSpecials) {
  EXPECT_EQ(loom::f32_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(loom::f32_to_bf16_bits(1.00390625f), 0x3f80);  // exact tie → even
  EXPECT_EQ(loom::f32_to_bf16_bits(1.01171875f), 0x3f82);  // tie 0x3f81.5 → even 0x3f82
  EXPECT_EQ(loom::f32_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(loom::f32_to_bf16_bits(INFINITY), 0x7f80);
  EXPECT_EQ(loom::f32_to_bf16_bits(3.4e38f), 0x7f80);  // overflow rounds to infinity
  EXPECT_TRUE(std::isnan(loom::bf16_bits_to_f32(loom::f32_to_bf16_bits(NAN))));
  EXPECT_EQ(loom::bf16_bits_to_f32(0x4049), 3.140625f);
}

TEST(Float16, HalfRoundTripsEveryValueAndRoundsToNearestEven) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float v = loom::f16_bits_to_f32(static_cast<uint16_t>(bits));
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(loom::f16_bits_to_f32(loom::f32_to_f16_bits(v))));
      continue;
    }
    ASSERT_EQ(loom::f32_to_f16_bits(v), bits) << "value " << v;
  }
  EXPECT_EQ(loom::f32_to_f16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(loom::f32_to_f16_bits(65520.0f), 0x7c00);         // halfway to the next binade → inf
  EXPECT_EQ(loom::f32_to_f16_bits(1.0f + 0x1p-11f), 0x3c00);  // tie → even
  EXPECT_EQ(loom::f32_to_f16_bits(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  EXPECT_EQ(loom::f32_to_f16_bits(0x1p-25f), 0x0000);         // tie with 0 → even (0)
  EXPECT_EQ(loom::f32_to_f16_bits(0x1p-25f * 1.5f), 0x0001);  // above the tie → smallest subnormal
  EXPECT_EQ(loom::f32_to_f16_bits(-0x1p-24f * 3), 0x8003);
}

TEST(Cast, F32ToBf16AndF16AndBack) {
  const int64_t n = 1000;
  auto x = random_floats(n, 111, -70000, 70000);
  std::vector<loom::BFloat16> b(n);
  std::vector<loom::Half> h(n);
  std::vector<float> back(n);
  backend().cast(view(x, {n}), view(b, {n}));
  backend().cast(view(x, {n}), view(h, {n}));
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(b[i].bits, loom::f32_to_bf16_bits(x[i]));
    ASSERT_EQ(h[i].bits, loom::f32_to_f16_bits(x[i]));
  }
  backend().cast(view(b, {n}), view(back, {n}));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(back[i], loom::bf16_bits_to_f32(b[i].bits));
  backend().cast(view(h, {n}), view(b, {n}));  // f16 → bf16 through f32
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(b[i].bits, loom::f32_to_bf16_bits(loom::f16_bits_to_f32(h[i].bits)));
}

TEST(Copy, PermutedViewsCopyBothWays) {
  // Head split: [B, T, H, D] → [B, H, T, D] and back.
  const int64_t B = 2, T = 5, H = 3, D = 4;
  auto x = random_floats(B * T * H * D, 112);
  std::vector<float> heads(x.size()), back(x.size());
  backend().copy(view(x, {B, T, H, D}).permute({0, 2, 1, 3}), view(heads, {B, H, T, D}));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d)
          ASSERT_EQ(heads[((b * H + h) * T + t) * D + d], x[((b * T + t) * H + h) * D + d]);
  backend().copy(view(heads, {B, H, T, D}), view(back, {B, T, H, D}).permute({0, 2, 1, 3}));
  EXPECT_EQ(back, x);
  // A strided column: start logits of a [B, T, 2] span-head output.
  std::vector<float> start(B * T * H * D / 2);
  EXPECT_THROW(backend().copy(view(x, {60, 2}).select(1, 0),
                              loom::Tensor::contiguous(start.data(), loom::DType::f32, {2, 30})),
               loom::Error);
  backend().copy(view(x, {B * T * H * D / 2, 2}).select(1, 0), view(start, {60}));
  for (int64_t i = 0; i < 60; ++i) ASSERT_EQ(start[i], x[2 * i]);
}

TEST(Fill, EveryDtypeAndStridedViews) {
  std::vector<int64_t> i64(6, 1);
  backend().fill(view(i64, {6}), -3);
  EXPECT_EQ(i64, std::vector<int64_t>(6, -3));
  std::vector<loom::BFloat16> b(4);
  backend().fill(view(b, {4}), 1.5);
  for (auto v : b) EXPECT_EQ(loom::to_f32(v), 1.5f);
  std::vector<float> m(12, 9.0f);
  backend().zero(view(m, {3, 4}).narrow(1, 1, 2));
  EXPECT_EQ(m, (std::vector<float>{9, 0, 0, 9, 9, 0, 0, 9, 9, 0, 0, 9}));
  std::vector<uint8_t> u(3);
  backend().fill(view(u, {3}), 7);
  EXPECT_EQ(u, (std::vector<uint8_t>{7, 7, 7}));
}

TEST(Memory, AllocationsAreAlignedAndCopiesMoveBytes) {
  void* p = backend().allocate(100);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % loom::Backend::kAlignment, 0u);
  const char text[] = "loom";
  char out[5] = {};
  backend().copy_from_host(p, text, 5);
  backend().copy_to_host(out, p, 5);
  EXPECT_STREQ(out, "loom");
  backend().deallocate(p);
  EXPECT_EQ(backend().allocate(0), nullptr);
  loom::Buffer buffer(backend(), 64);
  EXPECT_EQ(buffer.view(loom::DType::f32, {4, 4}).numel(), 16);
  EXPECT_THROW(buffer.view(loom::DType::f32, {5, 4}), loom::Error);
}

}  // namespace
