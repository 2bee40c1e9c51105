// PythonRandom: see python_random.hpp. Constants are MT19937's (Matsumoto & Nishimura 1997) as
// CPython uses them.
#include "prep/python_random.hpp"

namespace loom::host {
namespace {
constexpr int kN = 624;
constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu;
constexpr uint32_t kUpperMask = 0x80000000u;
constexpr uint32_t kLowerMask = 0x7fffffffu;
}  // namespace

void PythonRandom::init_genrand(uint32_t seed) {
  state_[0] = seed;
  for (int i = 1; i < kN; ++i)
    state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  index_ = kN;
}

PythonRandom::PythonRandom(uint64_t seed) {
  // random.seed(int): the key is |seed| as little-endian 32-bit words (one zero word for 0).
  std::vector<uint32_t> key;
  for (uint64_t rest = seed; rest != 0; rest >>= 32) key.push_back(static_cast<uint32_t>(rest));
  if (key.empty()) key.push_back(0);
  // init_by_array
  init_genrand(19650218u);
  int i = 1;
  size_t j = 0;
  const int key_length = static_cast<int>(key.size());
  for (int k = kN > key_length ? kN : key_length; k > 0; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1664525u)) + key[j] +
                static_cast<uint32_t>(j);
    ++i, ++j;
    if (i >= kN) state_[0] = state_[kN - 1], i = 1;
    if (j >= key.size()) j = 0;
  }
  for (int k = kN - 1; k > 0; --k) {
    state_[i] =
        (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1566083941u)) - static_cast<uint32_t>(i);
    ++i;
    if (i >= kN) state_[0] = state_[kN - 1], i = 1;
  }
  state_[0] = 0x80000000u;
  index_ = kN;
}

uint32_t PythonRandom::next_uint32() {
  if (index_ >= kN) {
    for (int k = 0; k < kN; ++k) {
      const uint32_t y = (state_[k] & kUpperMask) | (state_[(k + 1) % kN] & kLowerMask);
      state_[k] = state_[(k + kM) % kN] ^ (y >> 1) ^ ((y & 1u) != 0 ? kMatrixA : 0u);
    }
    index_ = 0;
  }
  uint32_t y = state_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

double PythonRandom::random() {
  const uint32_t a = next_uint32() >> 5;
  const uint32_t b = next_uint32() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

uint64_t PythonRandom::getrandbits(int bits) {
  // CPython fills words least-significant first; each word keeps the top bits of a draw.
  if (bits <= 32) return next_uint32() >> (32 - bits);
  const uint64_t low = next_uint32();
  const uint64_t high = next_uint32() >> (64 - bits);
  return low | (high << 32);
}

uint64_t PythonRandom::randbelow(uint64_t n) {
  if (n == 0) return 0;
  int bits = 0;
  for (uint64_t rest = n; rest != 0; rest >>= 1) ++bits;
  uint64_t value = getrandbits(bits);
  while (value >= n) value = getrandbits(bits);
  return value;
}

int64_t PythonRandom::randint(int64_t low, int64_t high) {
  return low + static_cast<int64_t>(randbelow(static_cast<uint64_t>(high - low) + 1));
}

}  // namespace loom::host
