// The host-memory check for inf/NaN in a float buffer (backends provide their own op for device
// memory). Tests exponent bits instead of calling isfinite so the loop vectorises; scans in chunks
// so a non-finite value early in a large buffer ends the scan early.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace loom_precision {

inline bool any_nonfinite(const float* data, size_t count) {
  constexpr size_t kChunk = 8192;
  constexpr uint32_t kExponent = 0x7f800000u;  // all-ones exponent: inf or NaN
  for (size_t start = 0; start < count; start += kChunk) {
    const size_t end = count - start < kChunk ? count : start + kChunk;
    uint32_t found = 0;
    for (size_t i = start; i < end; ++i) {
      uint32_t bits;
      std::memcpy(&bits, data + i, sizeof(bits));
      found |= static_cast<uint32_t>((bits & kExponent) == kExponent);
    }
    if (found != 0) return true;
  }
  return false;
}

}  // namespace loom_precision
