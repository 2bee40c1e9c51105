// EpochOrder: which instances a rank visits, in which order, in one epoch (dataset.hpp contract).
//
// Instances are numbered 0..N-1 and come in groups (one per shard file; a single group for text
// datasets). With shuffling, epoch e permutes the groups and, inside each group, its members with
// a generator keyed by (seed, e) — instances of one file stay together, so a reader holds one
// file at a time. The rank takes positions rank, rank + world, ... of the resulting sequence.
// Without shuffling the sequence is 0..N-1. Deterministic across machines and builds (own
// generator and Fisher–Yates, not std::shuffle, whose algorithm is implementation-defined).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace loom_datasets {

/// SplitMix64 step: a well-mixed 64-bit value of `x` (used to derive independent streams).
uint64_t mix64(uint64_t x);

/// A small counter-based generator: xoshiro-free, just SplitMix64 over a running counter.
class StreamRandom {
 public:
  explicit StreamRandom(uint64_t key) : state_(key) {}
  uint64_t next() { return mix64(state_ += 0x9e3779b97f4a7c15ull); }
  /// Uniform in [0, n) (Lemire's multiply-shift with rejection).
  uint64_t below(uint64_t n);
  /// Uniform double in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

/// The instances rank `rank` of `world` visits in `epoch`, in order, as global instance ids.
/// `group_sizes` partition 0..N-1 into consecutive ranges.
std::vector<uint64_t> rank_order(const std::vector<uint64_t>& group_sizes, bool shuffle, uint64_t seed,
                                 uint64_t epoch, int32_t rank, int32_t world);

/// Instances rank `rank` of `world` visits per epoch out of `total`.
uint64_t rank_share(uint64_t total, int32_t rank, int32_t world);

}  // namespace loom_datasets
