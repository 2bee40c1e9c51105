// PythonRandom: the exact random stream of CPython's `random.Random(seed)` for the calls BERT's
// create_pretraining_data.py makes (random, randint, shuffle), so `loom prep pretraining` makes
// the same draws as the reference script given the same documents.
//
// Algorithm (CPython Modules/_randommodule.c, Lib/random.py): MT19937 seeded with
// init_by_array(32-bit words of |seed|); random() = (a·2^26 + b) / 2^53 with a = next >> 5,
// b = next >> 6; _randbelow(n) draws getrandbits(bit_length(n)) until the value is < n;
// shuffle is Fisher–Yates from the back with _randbelow(i + 1).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace loom::host {

class PythonRandom {
 public:
  /// Same state as Python's `random.Random(seed)` for a non-negative integer seed.
  explicit PythonRandom(uint64_t seed);

  /// Uniform double in [0, 1): `random.random()`.
  double random();
  /// Uniform integer in [low, high], both inclusive: `random.randint(low, high)`.
  int64_t randint(int64_t low, int64_t high);
  /// Uniform integer in [0, n): `random._randbelow(n)`; 0 when n == 0.
  uint64_t randbelow(uint64_t n);
  /// `random.shuffle(items)`.
  template <typename T>
  void shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i-- > 1;) std::swap(items[i], items[randbelow(i + 1)]);
  }

 private:
  uint32_t next_uint32();
  uint64_t getrandbits(int bits);
  void init_genrand(uint32_t seed);

  std::array<uint32_t, 624> state_{};
  int index_ = 625;
};

}  // namespace loom::host
