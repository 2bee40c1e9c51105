// The words of the Philox4x32-10 stream of loom/sdk/philox.hpp that dropout draws, computed a run
// of blocks at a time with the block loop vectorised (dropout.cpp, residual_layernorm.cpp).
//
// Word w of the stream keyed by seed is word w mod 4 of block w / 4; an element's dropout
// decision depends only on its word's index, so every chunking of the work draws the same bits.
#pragma once

#include <cstdint>

namespace loom_cpu {

/// Philox words of blocks [first_block, first_block + blocks) into words[4·j + w]. The loop over
/// blocks is vectorised (one block per SIMD lane); the rounds match philox4x32_10 exactly.
inline void philox_blocks(uint64_t first_block, int64_t blocks, uint64_t seed, uint32_t* words) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u, kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
#pragma omp simd
  for (int64_t j = 0; j < blocks; ++j) {
    const uint64_t block = first_block + static_cast<uint64_t>(j);
    uint32_t c0 = static_cast<uint32_t>(block), c1 = static_cast<uint32_t>(block >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
      const uint64_t p0 = static_cast<uint64_t>(kMul0) * c0;
      const uint64_t p1 = static_cast<uint64_t>(kMul1) * c2;
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
      c1 = static_cast<uint32_t>(p1);
      c3 = static_cast<uint32_t>(p0);
      c0 = n0;
      c2 = n2;
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    words[4 * j + 0] = c0;
    words[4 * j + 1] = c1;
    words[4 * j + 2] = c2;
    words[4 * j + 3] = c3;
  }
}

}  // namespace loom_cpu
