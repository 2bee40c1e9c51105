// What the CPU-driven attention kernel tests share: 16-bit values as the kernels store them, and a
// kernel body run over a whole grid, block by block, lane by lane (lane_emulator).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "lane_emulator.hpp"
#include "lane_primitives.cuh"
#include "loom/sdk/float16.hpp"

namespace loom_cuda::emulation {

/// v rounded to 16-bit S (loom::BFloat16 or loom::Half), to nearest even.
template <typename S>
S round_to(float v) {
  if constexpr (std::is_same_v<S, loom::BFloat16>)
    return S{loom::f32_to_bf16_bits(v)};
  else
    return S{loom::f32_to_f16_bits(v)};
}

template <typename S>
std::vector<S> rounded(const std::vector<float>& v) {
  std::vector<S> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = round_to<S>(v[i]);
  return out;
}

template <typename S>
std::vector<float> widened(const std::vector<S>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = lane::widen<S>(v[i].bits);
  return out;
}

/// Runs kernel body K over the grid (blocks_x, bh_count) on the CPU; shared memory starts as NaN
/// bytes in every block, so reading anything not staged shows.
template <typename K, typename Args>
void run_grid(const Args& args, int64_t blocks_x, int64_t bh_count) {
  std::vector<uint32_t> shared(K::kSharedBytes / 4 + 4);
  for (int64_t bh = 0; bh < bh_count; ++bh)
    for (int64_t x = 0; x < blocks_x; ++x) {
      std::memset(shared.data(), 0xff, shared.size() * 4);
      auto* base = reinterpret_cast<unsigned char*>(shared.data());
      const auto errors =
          run_block(K::kThreads, [&](int thread) { K::run(args, base, static_cast<int>(x), bh, thread); });
      ASSERT_TRUE(errors.empty()) << "block (" << x << ", " << bh << "): " << errors.front();
    }
}

}  // namespace loom_cuda::emulation
