// The warp-level primitives of the Tensor-Core kernels, callable from one lane's code on the GPU
// and on the CPU.
//
// The Tensor-Core attention kernels (flash_attention_*.cuh) are written as __host__ __device__
// block bodies: one call per thread, with every cross-lane operation going through the functions
// below. On the GPU they are the PTX instructions (mma.sync m16n8k16 with f32 accumulation,
// ldmatrix, cp.async, shfl, bar.sync). On the CPU — where the kernels' index logic is tested, since
// CI has no GPU — they call `LaneOps`, which tests implement with one CPU thread per lane and the
// fragment layouts of the PTX ISA (tests/emulated/lane_emulator.*). The CPU side needs no CUDA
// headers: this file compiles with a plain C++ compiler.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "loom/sdk/float16.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define LOOM_LANE_FN __host__ __device__ __forceinline__
#else
#define LOOM_LANE_FN inline
#endif
// Loops over a thread's fragments must unroll on the GPU: an array indexed by a run-time value
// leaves the registers for local memory. (The host compiler knows no such pragma.)
#if defined(__CUDA_ARCH__)
#define LOOM_UNROLL _Pragma("unroll")
#else
#define LOOM_UNROLL
#endif

namespace loom_cuda::lane {

/// The CPU implementation of the primitives (one object per emulated thread). Fragments are the
/// calling lane's registers, as the PTX ISA lays them out ("Matrix Fragments for mma.m16n8k16").
class LaneOps {
 public:
  virtual ~LaneOps() = default;
  /// __syncthreads(): every thread of the block.
  virtual void block_sync() = 0;
  /// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32 d, a, b, c (bf16: true for
  /// bf16 operands, false for f16).
  virtual void mma_16816(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4],
                         bool bf16) = 0;
  /// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 r, [row]: this lane supplies one row address.
  virtual void ldmatrix_x4(uint32_t r[4], const void* row, bool trans) = 0;
  /// __shfl_xor_sync(full mask, v, lane_mask).
  virtual float shfl_xor(float v, int lane_mask) = 0;
  /// __shfl_sync(full mask, v, source_lane).
  virtual uint32_t shfl_index(uint32_t v, int source_lane) = 0;
  /// __ballot_sync(full mask, predicate): bit l set when lane l's predicate is true.
  virtual uint32_t ballot(bool predicate) = 0;
};

#if !defined(__CUDA_ARCH__)
/// The emulated thread the calling CPU thread is (set by the emulator; unused on the GPU).
inline thread_local LaneOps* host_lane = nullptr;
#endif

LOOM_LANE_FN void block_sync() {
#if defined(__CUDA_ARCH__)
  __syncthreads();
#else
  host_lane->block_sync();
#endif
}

/// D = A·B + C over one 16×8×16 tile; T is loom::BFloat16 or loom::Half (the operands' type).
template <typename T>
LOOM_LANE_FN void mma_16816(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4]) {
  static_assert(sizeof(T) == 2, "16-bit operands");
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, loom::BFloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
  }
#else
  host_lane->mma_16816(d, a, b, c, std::is_same_v<T, loom::BFloat16>);
#endif
}

/// Four 8×8 b16 matrices from shared memory: lanes 8m .. 8m + 7 give the row addresses of matrix
/// m (16 bytes each, 16-byte aligned); register m of lane l receives row l/4, columns 2(l%4) and
/// 2(l%4) + 1 of matrix m — or, transposed, rows 2(l%4) and 2(l%4) + 1 of column l/4.
template <bool kTrans>
LOOM_LANE_FN void ldmatrix_x4(uint32_t r[4], const void* row) {
#if defined(__CUDA_ARCH__)
  const auto address = static_cast<uint32_t>(__cvta_generic_to_shared(row));
  if constexpr (kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
#else
  host_lane->ldmatrix_x4(r, row, kTrans);
#endif
}

LOOM_LANE_FN float shfl_xor(float v, int lane_mask) {
#if defined(__CUDA_ARCH__)
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
#else
  return host_lane->shfl_xor(v, lane_mask);
#endif
}

LOOM_LANE_FN uint32_t shfl_index(uint32_t v, int source_lane) {
#if defined(__CUDA_ARCH__)
  return __shfl_sync(0xffffffffu, v, source_lane);
#else
  return host_lane->shfl_index(v, source_lane);
#endif
}

LOOM_LANE_FN uint32_t ballot(bool predicate) {
#if defined(__CUDA_ARCH__)
  return __ballot_sync(0xffffffffu, predicate);
#else
  return host_lane->ballot(predicate);
#endif
}

/// 16 bytes global → shared without passing through registers (cp.async.cg, L2 only); both
/// addresses 16-byte aligned. Completes at cp_async_wait; the CPU copies at once.
LOOM_LANE_FN void cp_async_16(void* shared_destination, const void* global_source) {
#if defined(__CUDA_ARCH__)
  const auto address = static_cast<uint32_t>(__cvta_generic_to_shared(shared_destination));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address),
               "l"(__cvta_generic_to_global(global_source)));
#else
  std::memcpy(shared_destination, global_source, 16);
#endif
}

/// Closes the group of this thread's cp.async copies issued since the last commit.
LOOM_LANE_FN void cp_async_commit() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

/// Waits until at most kPending of this thread's committed groups are still in flight (a block
/// then needs block_sync() before reading what other threads copied).
template <int kPending>
LOOM_LANE_FN void cp_async_wait() {
#if defined(__CUDA_ARCH__)
  // "memory": no load of shared memory is moved above the wait by the compiler (the block_sync()
  // that follows is a barrier to it too; this keeps a thread's own copies safe without one).
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

/// e^x for the softmax (the GPU's ex2.approx: relative error ≈ 2⁻²², far below the 16-bit
/// rounding the probabilities then get).
LOOM_LANE_FN float fast_exp(float x) {
#if defined(__CUDA_ARCH__)
  return exp2f(x * 1.4426950408889634f);
#else
  return __builtin_exp2f(x * 1.4426950408889634f);
#endif
}

LOOM_LANE_FN float natural_log(float x) {
#if defined(__CUDA_ARCH__)
  return logf(x);
#else
  return __builtin_logf(x);
#endif
}

/// Two f32 rounded (to nearest even) to 16-bit T, `low` in bits 0–15: one 32-bit operand register.
template <typename T>
LOOM_LANE_FN uint32_t pack_pair(float low, float high) {
  uint16_t lo, hi;
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, loom::BFloat16>) {
    lo = __bfloat16_as_ushort(__float2bfloat16_rn(low));
    hi = __bfloat16_as_ushort(__float2bfloat16_rn(high));
  } else {
    lo = __half_as_ushort(__float2half_rn(low));
    hi = __half_as_ushort(__float2half_rn(high));
  }
#else
  if constexpr (std::is_same_v<T, loom::BFloat16>) {
    lo = loom::f32_to_bf16_bits(low);
    hi = loom::f32_to_bf16_bits(high);
  } else {
    lo = loom::f32_to_f16_bits(low);
    hi = loom::f32_to_f16_bits(high);
  }
#endif
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

/// The f32 value of 16-bit T bits.
template <typename T>
LOOM_LANE_FN float widen(uint16_t bits) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, loom::BFloat16>)
    return __uint_as_float(static_cast<uint32_t>(bits) << 16);
  else
    return __half2float(__ushort_as_half(bits));
#else
  if constexpr (std::is_same_v<T, loom::BFloat16>)
    return loom::bf16_bits_to_f32(bits);
  else
    return loom::f16_bits_to_f32(bits);
#endif
}

}  // namespace loom_cuda::lane
