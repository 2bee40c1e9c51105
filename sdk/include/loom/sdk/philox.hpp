// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) and the
// dropout mask rule every backend shares.
//
// A counter-based generator: the random words for a counter depend only on (key, counter), so an
// element's dropout decision is the same whatever thread computes it, on any backend. The
// constants and round structure are those of Random123 and cuRAND's Philox4_32_10.
#pragma once

#include <cstdint>

#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// Four 32-bit words: a Philox counter or output block.
struct Philox4x32 {
  uint32_t word[4];
};

/// Philox4x32 with 10 rounds: the four random words of `counter` under the 64-bit `key`.
inline Philox4x32 philox4x32_10(Philox4x32 counter, uint64_t key) noexcept {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  uint32_t* c = counter.word;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c[2];
    const uint32_t next0 = static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0;
    const uint32_t next1 = static_cast<uint32_t>(p1);
    const uint32_t next2 = static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1;
    const uint32_t next3 = static_cast<uint32_t>(p0);
    c[0] = next0;
    c[1] = next1;
    c[2] = next2;
    c[3] = next3;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return counter;
}

/// The random word of element number `index` of the stream keyed by `seed`: word index % 4 of the
/// Philox block with counter (index / 4 low, high, 0, 0). Dropout ops call this with
/// index = offset + element (row-major element number of the tensor).
inline uint32_t philox_word(uint64_t seed, uint64_t index) noexcept {
  const uint64_t block = index >> 2;
  const Philox4x32 out = philox4x32_10(
      Philox4x32{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0u, 0u}}, seed);
  return out.word[index & 3u];
}

/// The integer threshold of drop probability p (0 ≤ p < 1): an element is DROPPED when its word
/// is < threshold, kept otherwise. threshold = round(p · 2^32), clamped to 2^32 - 1.
inline uint32_t dropout_threshold(float p) noexcept {
  if (!(p > 0.0f)) return 0u;
  const double scaled = static_cast<double>(p) * 4294967296.0 + 0.5;
  return scaled >= 4294967295.0 ? 0xffffffffu : static_cast<uint32_t>(scaled);
}

LOOM_SDK_NAMESPACE_END
