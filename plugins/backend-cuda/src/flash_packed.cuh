// The Tensor-Core attention kernels over a packed batch (loom/sdk/ops/packed_attention.hpp) in one
// launch per kernel, as FlashAttention-2's variable-length entry points do, instead of one launch
// set per sequence.
//
// Each sequence of a packed call is attention over a batch of one row of its length L without a
// key mask (loom_backend::for_each_packed_sequence): its rows of the head views, its [H, L] block
// of lse and delta, its first dropout element. `Packed<Body>` runs an unchanged block body
// (Forward, RowDeltas, KeyGrads, QueryGrads) on exactly that: block (x, y) is tile x of head
// y mod H of sequence y / H; it rebases the arguments to the sequence (pointers moved to its first
// row and first statistic, shape batch 1 and seq L, the window made effective for L as
// loom_backend::effective_window does, the dropout offset moved to its first element) and hands the
// body head h as its (batch, head) index. A block whose tile starts past L returns at once: the grid
// is sized for the longest sequence. So every value the body computes is the one the per-sequence
// launch of the same body computes, bit for bit (the emulated tests check it lane by lane).
//
// Each sequence's first dropout element, H·Σ L² over the sequences before it, is made on the device
// before the launches (first_dropout_element, one thread per sequence) from the starts alone, so
// nothing is uploaded from the host; calls without dropout skip it.
//
// Plain C++ with LOOM_LANE_FN functions: the kernels and the CPU tests (tests/emulated) share it.
#pragma once

#include <cstdint>

#include "flash_attention_backward.cuh"
#include "flash_attention_delta.cuh"
#include "flash_attention_forward.cuh"

namespace loom_cuda::flash {

/// The sequences of a packed call, on the device.
struct PackedSequences {
  const int32_t* starts;            // [S + 1]: sequence s is tokens [starts[s], starts[s + 1])
  const uint64_t* first_elements;   // [S]: first_dropout_element of each; null without dropout
  int64_t sequences, heads;
  int64_t window;                   // the call's window (< 0: none), before it is made effective
};

/// H·Σ_{s' < s} L_{s'}²: sequence s's first dropout element relative to the call's offset.
LOOM_LANE_FN uint64_t first_dropout_element(const int32_t* starts, int64_t s, int64_t heads) {
  uint64_t element = 0;
  for (int64_t r = 0; r < s; ++r) {
    const auto length = static_cast<uint64_t>(starts[r + 1] - starts[r]);
    element += static_cast<uint64_t>(heads) * length * length;
  }
  return element;
}

/// One sequence of a packed call, as its blocks see it.
struct PackedSequence {
  int64_t start, length;
  uint64_t first_element;
};

LOOM_LANE_FN PackedSequence packed_sequence(const PackedSequences& packed, int64_t s) {
  const int64_t start = packed.starts[s];
  return PackedSequence{start, packed.starts[s + 1] - start,
                        packed.first_elements != nullptr ? packed.first_elements[s] : 0};
}

/// The shape of sequence `seq` alone: batch 1, seq L, the window effective for L, the dropout
/// offset at its first element.
LOOM_LANE_FN AttentionShape sequence_shape(AttentionShape shape, const PackedSequences& packed,
                                           const PackedSequence& seq) {
  shape.batch = 1;
  shape.seq = seq.length;
  shape.window = packed.window < 0 || packed.window >= seq.length - 1 ? -1 : packed.window;
  shape.offset += seq.first_element;
  return shape;
}

/// Rows of a [1, H, N, d] view from the sequence's first token on.
template <typename T>
LOOM_LANE_FN HeadRows<T> sequence_rows(HeadRows<T> rows, const PackedSequence& seq) {
  rows.data += seq.start * rows.row_stride;
  return rows;
}

/// The arguments of one sequence: each Args type of the bodies rebased (no key mask, no empty bands).
template <typename S>
LOOM_LANE_FN ForwardArgs<S> for_sequence(ForwardArgs<S> a, const PackedSequences& packed,
                                         const PackedSequence& seq) {
  a.q = sequence_rows(a.q, seq), a.k = sequence_rows(a.k, seq), a.v = sequence_rows(a.v, seq);
  a.ctx = sequence_rows(a.ctx, seq);
  a.lse += packed.heads * seq.start;
  a.shape = sequence_shape(a.shape, packed, seq);
  return a;
}

template <typename S, typename G>
LOOM_LANE_FN DeltaArgs<S, G> for_sequence(DeltaArgs<S, G> a, const PackedSequences& packed,
                                          const PackedSequence& seq) {
  a.d_ctx = sequence_rows(a.d_ctx, seq), a.ctx = sequence_rows(a.ctx, seq);
  a.delta += packed.heads * seq.start;
  a.shape = sequence_shape(a.shape, packed, seq);
  return a;
}

template <typename S, typename G>
LOOM_LANE_FN BackwardArgs<S, G> for_sequence(BackwardArgs<S, G> a, const PackedSequences& packed,
                                             const PackedSequence& seq) {
  a.q = sequence_rows(a.q, seq), a.k = sequence_rows(a.k, seq), a.v = sequence_rows(a.v, seq);
  a.d_ctx = sequence_rows(a.d_ctx, seq);
  a.dq = sequence_rows(a.dq, seq), a.dk = sequence_rows(a.dk, seq), a.dv = sequence_rows(a.dv, seq);
  a.lse += packed.heads * seq.start;
  a.delta += packed.heads * seq.start;
  a.shape = sequence_shape(a.shape, packed, seq);
  return a;
}

/// A body's arguments for the whole packed call (views [1, H, N, d], lse and delta [1, H, N]).
template <typename Args>
struct PackedArgs {
  Args args;
  PackedSequences packed;
};

/// Body over a packed call: grid (⌈max L / 64⌉, S·H).
template <typename Body>
struct Packed {
  static constexpr int kThreads = Body::kThreads, kSharedBytes = Body::kSharedBytes;
  static constexpr int kTileRows = 64;  // rows (queries or keys) each body's block owns

  template <typename Args>
  LOOM_LANE_FN static void run(const PackedArgs<Args>& a, unsigned char* shared, int block_x, int64_t sh,
                               int thread) {
    const int64_t s = sh / a.packed.heads, h = sh % a.packed.heads;
    const PackedSequence seq = packed_sequence(a.packed, s);
    if (static_cast<int64_t>(block_x) * kTileRows >= seq.length) return;  // the whole block: past L
    Body::run(for_sequence(a.args, a.packed, seq), shared, block_x, h, thread);
  }
};

}  // namespace loom_cuda::flash
