// Sums, maxima and minima over a warp and over a block, in a fixed butterfly/tree order, so every
// reduction built on them is deterministic.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace loom_cuda {

/// Sum over the 32 lanes of a warp (every lane gets the result; fixed butterfly order).
template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

/// Maximum over the 32 lanes of a warp (every lane gets the result).
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// Sum over a block of blockDim.x threads (a multiple of 32, ≤ 1024); every thread gets the result.
/// `shared` holds ≥ 32 T. Contains __syncthreads: call from every thread of the block.
template <typename T>
__device__ __forceinline__ T block_sum(T v, T* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // `shared` may still be read by a previous block_sum
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T total = lane < warps ? shared[lane] : T(0);
  return warp_sum(total);
}

/// Maximum over a block (as block_sum).
__device__ __forceinline__ float block_max(float v, float* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const float total = lane < warps ? shared[lane] : -INFINITY;
  return warp_max(total);
}

/// Smallest int64 over a block (as block_sum): the first index of something, INT64_MAX for none.
__device__ __forceinline__ int64_t block_min(int64_t v, int64_t* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const int64_t other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = other < v ? other : v;
  }
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : INT64_MAX;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const int64_t other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = other < v ? other : v;
  }
  return v;
}

}  // namespace loom_cuda
