// Loads and stores of f32/bf16/f16 activations as f32, and dispatch on a float dtype.
//
// Kernels are templates over the storage type S (float, BFloat16 or Half); arithmetic is always
// f32. The 16-bit paths are the integer formulas of loom/sdk/float16.hpp (round to nearest even),
// written so the compiler vectorises them with the surrounding loop.
#pragma once

#include <string>

#include "loom/sdk/error.hpp"
#include "loom/sdk/float16.hpp"
#include "loom/sdk/tensor.hpp"

namespace loom_cpu {

using loom::BFloat16;
using loom::DType;
using loom::Half;

inline float load(const float* p, int64_t i) {
  return p[i];
}
inline float load(const BFloat16* p, int64_t i) {
  return loom::bf16_bits_to_f32(p[i].bits);
}
inline float load(const Half* p, int64_t i) {
  return loom::f16_bits_to_f32(p[i].bits);
}
inline void store(float* p, int64_t i, float v) {
  p[i] = v;
}
inline void store(BFloat16* p, int64_t i, float v) {
  p[i].bits = loom::f32_to_bf16_bits(v);
}
inline void store(Half* p, int64_t i, float v) {
  p[i].bits = loom::f32_to_f16_bits(v);
}

/// Calls `body(S{})` with S = float, BFloat16 or Half matching `dtype` (other dtypes: error naming op).
template <typename Body>
void with_float_storage(DType dtype, const char* op, Body&& body) {
  switch (dtype) {
    case DType::f32:
      body(float{});
      return;
    case DType::bf16:
      body(BFloat16{});
      return;
    case DType::f16:
      body(Half{});
      return;
    default:
      throw loom::Error(std::string(op) + ": dtype " + loom::dtype_name(dtype) +
                        " is not supported (f32, bf16 or f16)");
  }
}

}  // namespace loom_cpu
