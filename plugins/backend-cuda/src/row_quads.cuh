// Rows of a [rows, C] matrix as quads of four columns (quad q = columns 4q .. 4q + 3): one
// 16-byte access per quad when the row allows it (C % 4 == 0 and 16-byte aligned views: 8-byte for
// 16-bit storage), else up to four scalar accesses, so one kernel body serves every C. A dense
// view of n elements is the row C = n (the element-wise kernels' quad paths).
//
// Values enter and leave as f32 through float_storage.cuh's to_float / from_float, element by
// element, so a quad access gives the same bits as four scalar ones.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "float_storage.cuh"

namespace loom_cuda {

inline bool is_aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}
inline bool is_aligned8(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 8 == 0;
}
/// Whether quads of storage S at p can move as single accesses: 16-byte alignment for f32, 8-byte
/// for 16-bit storage (four values of either fill one access).
template <typename S>
inline bool is_quad_aligned(const void* p) {
  return sizeof(S) == 4 ? is_aligned16(p) : is_aligned8(p);
}

/// Columns of quad q that exist (0 .. 4).
__device__ __forceinline__ int quad_width(int64_t q, int64_t cols) {
  const int64_t left = cols - 4 * q;
  return left >= 4 ? 4 : left > 0 ? static_cast<int>(left) : 0;
}

/// Quad q of `row` (storage S) into v as f32; columns ≥ cols read as 0. `vector` (cols % 4 == 0,
/// is_quad_aligned<S>(row)): one float4 load for f32, one 8-byte load of four 16-bit values
/// otherwise.
template <typename S>
__device__ __forceinline__ void load_quad(const S* row, int64_t q, int64_t cols, bool vector, float (&v)[4]) {
  if (vector) {
    if constexpr (std::is_same_v<S, float>) {
      const float4 t = reinterpret_cast<const float4*>(row)[q];
      v[0] = t.x;
      v[1] = t.y;
      v[2] = t.z;
      v[3] = t.w;
    } else {
      const uint2 t = reinterpret_cast<const uint2*>(row)[q];  // little-endian: column 4q in t.x's low half
      v[0] = to_float(S{static_cast<uint16_t>(t.x & 0xffffu)});
      v[1] = to_float(S{static_cast<uint16_t>(t.x >> 16)});
      v[2] = to_float(S{static_cast<uint16_t>(t.y & 0xffffu)});
      v[3] = to_float(S{static_cast<uint16_t>(t.y >> 16)});
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) v[j] = 4 * q + j < cols ? load(row, 4 * q + j) : 0.0f;
}

/// v into quad q of `row` (storage S, rounded as float_storage.cuh); columns ≥ cols are not written.
/// `vector` (cols % 4 == 0, is_quad_aligned<S>(row)): one 16-byte store for f32, one 8-byte store
/// of four 16-bit values otherwise.
template <typename S>
__device__ __forceinline__ void store_quad(S* row, int64_t q, int64_t cols, bool vector,
                                           const float (&v)[4]) {
  if (vector) {
    if constexpr (std::is_same_v<S, float>) {
      reinterpret_cast<float4*>(row)[q] = make_float4(v[0], v[1], v[2], v[3]);
    } else {
      const auto bits = [&](int j) { return static_cast<uint32_t>(from_float<S>(v[j]).bits); };
      reinterpret_cast<uint2*>(row)[q] = make_uint2(bits(0) | bits(1) << 16, bits(2) | bits(3) << 16);
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (4 * q + j < cols) store(row, 4 * q + j, v[j]);
}

}  // namespace loom_cuda
