// Loads and stores of f32/bf16 activations as f32, and dispatch on a float dtype.
//
// Kernels are templates over the storage type S (float or BFloat16); arithmetic is always f32.
// The bf16 paths are plain integer shifts and the RNE formula of loom/sdk/float16.hpp, written so
// the compiler vectorises them with the surrounding loop.
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

/// Calls `body(S{})` with S = float or BFloat16 matching `dtype` (other dtypes: error naming op).
template <typename Body>
void with_float_storage(DType dtype, const char* op, Body&& body) {
  switch (dtype) {
    case DType::f32:
      body(float{});
      return;
    case DType::bf16:
      body(BFloat16{});
      return;
    default:
      throw loom::Error(std::string(op) + ": dtype " + loom::dtype_name(dtype) +
                        " is not supported (f32 or bf16)");
  }
}

/// As with_float_storage, also accepting f16.
template <typename Body>
void with_any_float_storage(DType dtype, const char* op, Body&& body) {
  if (dtype == DType::f16) {
    body(Half{});
    return;
  }
  with_float_storage(dtype, op, body);
}

}  // namespace loom_cpu
