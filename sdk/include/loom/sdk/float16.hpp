// 16-bit floating-point storage types and their exact conversions to and from f32.
//
// `BFloat16` (1-8-7) and `Half` (IEEE binary16, 1-5-10) are storage only: arithmetic happens in
// f32. Narrowing rounds to nearest, ties to even (what PyTorch, oneDNN and CUDA do), keeps the
// sign of zero, maps NaN to a quiet NaN and overflow to ±infinity; widening is exact. Every
// backend converts with these rules so results agree bit for bit.
#pragma once

#include <cstdint>
#include <cstring>

#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// A bfloat16 value: the upper 16 bits of an f32.
struct BFloat16 {
  uint16_t bits;
};

/// An IEEE binary16 value.
struct Half {
  uint16_t bits;
};

/// The bit pattern of `value`.
inline uint32_t f32_bits(float value) noexcept {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// The f32 with bit pattern `bits`.
inline float f32_from_bits(uint32_t bits) noexcept {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// f32 → bf16, round to nearest even; NaN stays a (quiet) NaN.
inline uint16_t f32_to_bf16_bits(float value) noexcept {
  // Branch-free (a select), so loops calling it vectorise.
  const uint32_t bits = f32_bits(value);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (bits >> 16) | 0x0040u;
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

/// bf16 → f32, exact.
inline float bf16_bits_to_f32(uint16_t bits) noexcept {
  return f32_from_bits(static_cast<uint32_t>(bits) << 16);
}

/// f32 → binary16, round to nearest even (subnormals included); overflow gives ±infinity.
inline uint16_t f32_to_f16_bits(float value) noexcept {
  const uint32_t bits = f32_bits(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to ≥ 65520: inf
  if (magnitude < 0x38800000u) {
    // Result is subnormal (or zero): value = m · 2^-24 with m rounded to an integer.
    if (magnitude < 0x33000000u) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    const uint32_t exponent = magnitude >> 23;
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exponent;  // 14..24
    uint32_t half = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (remainder > halfway || (remainder == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Normal: rebias the exponent (127 → 15) and round the 13 dropped mantissa bits.
  const uint32_t rebased = magnitude - (112u << 23);
  const uint32_t rounded = rebased + 0xfffu + ((rebased >> 13) & 1u);
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

/// binary16 → f32, exact (subnormals, infinities and NaN included).
inline float f16_bits_to_f32(uint16_t bits) noexcept {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1fu) return f32_from_bits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return f32_from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return f32_from_bits(sign);
  // Subnormal: normalise.
  uint32_t e = 113u;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --e;
  }
  return f32_from_bits(sign | (e << 23) | ((mantissa & 0x3ffu) << 13));
}

/// Typed forms of the conversions above.
inline BFloat16 to_bf16(float value) noexcept {
  return BFloat16{f32_to_bf16_bits(value)};
}
inline Half to_f16(float value) noexcept {
  return Half{f32_to_f16_bits(value)};
}
inline float to_f32(BFloat16 value) noexcept {
  return bf16_bits_to_f32(value.bits);
}
inline float to_f32(Half value) noexcept {
  return f16_bits_to_f32(value.bits);
}
inline float to_f32(float value) noexcept {
  return value;
}

LOOM_SDK_NAMESPACE_END
