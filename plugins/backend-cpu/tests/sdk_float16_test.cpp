// The SDK's scalar bf16/f16 conversions (loom/sdk/float16.hpp), which every backend's casts and
// 16-bit outputs round as: round to nearest even, specials kept, overflow to infinity, f16
// subnormals.
#include <gtest/gtest.h>

#include <cmath>

#include "loom/sdk/float16.hpp"

namespace {

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

}  // namespace
