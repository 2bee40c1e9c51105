// EpochOrder: which instances a rank visits, in which order, in one epoch (dataset.hpp contract).
//
// Instances are numbered 0..N-1 and come in groups (one per shard file; a single group for text
// datasets). With shuffling, epoch e permutes the groups and, inside each group, its members with
// a generator keyed by (seed, e) — instances of one file stay together, so a reader holds one
// file at a time. The sequence does not depend on the number of ranks. Ranks consume it in
// global batches of world × batch_size consecutive positions, rank r taking the r-th block of
// batch_size (the last global batch of an epoch fills ranks in order, so later ranks may get
// fewer rows or none). A position in this sequence is the global data cursor, valid for any
// world size. Without shuffling the sequence is 0..N-1. Deterministic across machines and builds (own
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

/// How ranks split an epoch's sequence.
struct RankSlicing {
  int32_t rank = 0;
  int32_t world = 1;
  uint64_t batch_size = 1;
  /// Rows rank `rank` gets of a global batch of `global_rows` (≤ world × batch_size) positions.
  uint64_t rows_of(uint64_t global_rows) const;
};

/// The instances `slicing.rank` visits in `epoch` from sequence position `start` (where a global
/// batch begins) up to `end`, in order, as instance ids. `group_sizes` partition 0..N-1 into
/// consecutive ranges.
std::vector<uint64_t> rank_order(const std::vector<uint64_t>& group_sizes, bool shuffle, uint64_t seed,
                                 uint64_t epoch, uint64_t start, uint64_t end, const RankSlicing& slicing);

/// Instances `slicing.rank` visits in a whole epoch of `total` (fewer when `drop_last` drops a
/// final global batch smaller than world × batch_size).
uint64_t rank_share(uint64_t total, const RankSlicing& slicing, bool drop_last);

}  // namespace loom_datasets
