// Rows of a [rows, C] f32 matrix as quads of four columns (quad q = columns 4q .. 4q + 3): one
// 16-byte access per quad when the row allows it (C % 4 == 0 and 16-byte aligned views: 8-byte for
// 16-bit storage), else up to four scalar accesses, so one kernel body serves every C.
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

/// Columns of quad q that exist (0 .. 4).
__device__ __forceinline__ int quad_width(int64_t q, int64_t cols) {
  const int64_t left = cols - 4 * q;
  return left >= 4 ? 4 : left > 0 ? static_cast<int>(left) : 0;
}

/// Quad q of `row` into v; columns ≥ cols read as 0. `vector`: one float4 load (row 16-byte aligned,
/// cols % 4 == 0).
__device__ __forceinline__ void load_quad(const float* row, int64_t q, int64_t cols, bool vector,
                                          float (&v)[4]) {
  if (vector) {
    const float4 t = reinterpret_cast<const float4*>(row)[q];
    v[0] = t.x;
    v[1] = t.y;
    v[2] = t.z;
    v[3] = t.w;
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) v[j] = 4 * q + j < cols ? row[4 * q + j] : 0.0f;
}

/// v into quad q of `row` (storage S, rounded as float_storage.cuh); columns ≥ cols are not written.
/// `vector`: one 16-byte store for f32, one 8-byte store of four 16-bit values otherwise.
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
