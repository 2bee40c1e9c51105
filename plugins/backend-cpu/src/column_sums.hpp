// Column sums with a period: out[p, c] += Σ_{r mod P = p} x[r, c] — the reduction behind bias,
// position-embedding, LayerNorm γ/β and GELU bias gradients.
//
// Work is split by (p, block of columns); each block sums its rows in increasing order in f32,
// so the result is the same for every thread count.
#pragma once

#include <cstdint>

#include "cpu_backend.hpp"

namespace loom_cpu {

/// ACCUMULATES into out [period, cols]; rows must be a multiple of period.
inline void accumulate_column_sums(const float* x, int64_t rows, int64_t cols, int64_t period, float* out,
                                   int threads) {
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for collapse(2) num_threads(threads) \
    schedule(static) if (rows * cols > kParallelMinElements)
  for (int64_t p = 0; p < period; ++p) {
    for (int64_t block = 0; block < blocks; ++block) {
      const int64_t begin = block * kBlock;
      const int64_t width = cols - begin < kBlock ? cols - begin : kBlock;
      float sums[kBlock] = {};
      for (int64_t r = p; r < rows; r += period) {
        const float* row = x + r * cols + begin;
#pragma omp simd
        for (int64_t c = 0; c < width; ++c) sums[c] += row[c];
      }
      float* target = out + p * cols + begin;
      for (int64_t c = 0; c < width; ++c) target[c] += sums[c];
    }
  }
}

}  // namespace loom_cpu
