// f32 loads and stores of every float storage type on the device, rounding exactly as
// loom/sdk/float16.hpp (so GPU and CPU results agree bit for bit). The host dispatch from a
// DType to its storage type is backend-contracts' with_float_storage, shared with backend/cpu.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "loom/sdk/float16.hpp"
#include "loom/sdk/tensor.hpp"
#include "loom_backend/float_dispatch.hpp"

namespace loom_cuda {

__device__ __forceinline__ float to_float(float v) {
  return v;
}
__device__ __forceinline__ float to_float(loom::BFloat16 v) {
  return __uint_as_float(static_cast<uint32_t>(v.bits) << 16);
}
__device__ __forceinline__ float to_float(loom::Half v) {
  return __half2float(__ushort_as_half(v.bits));
}

/// f32 → storage type S, round to nearest even with the NaN rules of float16.hpp (bit-identical
/// to the CPU backend).
template <typename S>
__device__ __forceinline__ S from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ loom::BFloat16 from_float<loom::BFloat16>(float v) {
  const uint32_t bits = __float_as_uint(v);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (bits >> 16) | 0x0040u;
  return loom::BFloat16{static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded)};
}
template <>
__device__ __forceinline__ loom::Half from_float<loom::Half>(float v) {
  const uint32_t bits = __float_as_uint(v);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)  // NaN: keep sign and top payload bits, quiet (as float16.hpp)
    return loom::Half{
        static_cast<uint16_t>(((bits >> 16) & 0x8000u) | 0x7e00u | ((magnitude >> 13) & 0x3ffu))};
  return loom::Half{__half_as_ushort(__float2half_rn(v))};  // RNE, subnormals, overflow → ±inf
}

template <typename S>
__device__ __forceinline__ float load(const S* p, int64_t i) {
  return to_float(p[i]);
}
template <typename S>
__device__ __forceinline__ void store(S* p, int64_t i, float v) {
  p[i] = from_float<S>(v);
}

using loom_backend::with_float_storage;

}  // namespace loom_cuda
