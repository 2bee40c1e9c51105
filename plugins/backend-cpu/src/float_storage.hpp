// Loads and stores of f32/bf16/f16 activations as f32 (dispatch on a float dtype:
// loom_backend/float_dispatch.hpp).
//
// Kernels are templates over the storage type S (float, BFloat16 or Half); arithmetic is always
// f32. The 16-bit paths are the integer formulas of loom/sdk/float16.hpp (round to nearest even),
// written so the compiler vectorises them with the surrounding loop.
#pragma once

#include "loom/sdk/float16.hpp"
#include "loom/sdk/tensor.hpp"
#include "loom_backend/float_dispatch.hpp"

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

/// d[i] = s[i] in D's storage, for i in [begin, end): cast's element loop, which the optimizer
/// passes run as well to write the working copy (the same bits, vectorised the same way).
template <typename S, typename D>
inline void convert_range(const S* s, D* d, int64_t begin, int64_t end) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) store(d, i, load(s, i));
}

using loom_backend::with_float_storage;

}  // namespace loom_cpu
