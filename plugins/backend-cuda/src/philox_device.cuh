// The Philox4x32-10 stream of loom/sdk/philox.hpp on the device (the SDK's functions are host
// code): the same rounds, written with __umulhi. The dropout tests compare the bits with the CPU.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace loom_cuda {

/// All four words of Philox block `block` (elements 4·block .. 4·block + 3 of the stream).
__device__ __forceinline__ uint4 philox_block(uint64_t seed, uint64_t block) {
  uint32_t c0 = static_cast<uint32_t>(block), c1 = static_cast<uint32_t>(block >> 32), c2 = 0u, c3 = 0u;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const uint32_t hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c1 = lo1;
    c3 = lo0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return make_uint4(c0, c1, c2, c3);
}

/// Philox4x32-10 word `index` of the stream `seed`: the same function as loom::philox_word
/// (loom/sdk/philox.hpp): word index % 4 of block index / 4. Tests compare the two.
__device__ __forceinline__ uint32_t philox_word(uint64_t seed, uint64_t index) {
  const uint4 words = philox_block(seed, index >> 2);
  const uint32_t word = index & 3u;
  return word == 0 ? words.x : word == 1 ? words.y : word == 2 ? words.z : words.w;
}

/// Words first .. first + 3 of the stream `seed`: the dropout words of four consecutive elements
/// (one Philox block when first % 4 == 0, else the two it straddles).
__device__ __forceinline__ uint4 philox_words4(uint64_t seed, uint64_t first) {
  const uint4 a = philox_block(seed, first >> 2);
  const uint32_t skip = first & 3u;
  if (skip == 0) return a;
  const uint4 b = philox_block(seed, (first >> 2) + 1);
  return skip == 1   ? make_uint4(a.y, a.z, a.w, b.x)
         : skip == 2 ? make_uint4(a.z, a.w, b.x, b.y)
                     : make_uint4(a.w, b.x, b.y, b.z);
}

}  // namespace loom_cuda
