// The argument contract of PackedAttention (loom/sdk/ops/packed_attention.hpp), checked the same way
// by every backend that offers it, and the walk over its sequences every backend takes: each
// sequence is attention over a batch of one row of its length (its rows of the head views, its
// block of lse and delta, its first dropout element), so a backend may run its FusedAttention /
// WindowedAttention code on it unchanged.
#pragma once

#include <algorithm>
#include <string>

#include "loom/sdk/tensor.hpp"
#include "loom_backend/argument_checks.hpp"
#include "loom_backend/attention_contract.hpp"
#include "loom_backend/rotary_embedding_contract.hpp"

namespace loom_backend {

/// Extents of a packed call: the [1, H, N, d] views, S sequences, the longest one's length.
struct PackedDims {
  AttentionDims heads;  ///< batch 1, seq N
  int64_t sequences, max_sequence;
};

/// starts: i32 [S + 1] on the device, S ≥ 1, and the same values on the host: 0, increasing, N;
/// max_sequence their longest difference.
inline int64_t check_sequence_starts(const ArgumentChecks& check, const loom::Tensor& starts,
                                     const int32_t* starts_host, int64_t max_sequence, int64_t tokens) {
  check.tensor("starts", starts, {loom::DType::i32});
  check.require(starts.ndim == 1 && starts.shape[0] >= 2,
                "starts " + starts.describe() + " must be [S + 1] with S ≥ 1 sequences");
  check.require(starts_host != nullptr, "starts_host must hold the starts in host memory");
  const int64_t sequences = starts.shape[0] - 1;
  check.require(starts_host[0] == 0 && starts_host[sequences] == tokens,
                "starts must run from 0 to N = " + std::to_string(tokens) + ", not from " +
                    std::to_string(starts_host[0]) + " to " + std::to_string(starts_host[sequences]));
  int64_t longest = 0;
  for (int64_t s = 0; s < sequences; ++s) {
    check.require(starts_host[s + 1] > starts_host[s], "sequence " + std::to_string(s) + " of starts is empty");
    longest = std::max<int64_t>(longest, starts_host[s + 1] - starts_host[s]);
  }
  check.require(max_sequence == longest, "max_sequence " + std::to_string(max_sequence) +
                                             " is not the longest sequence's length " + std::to_string(longest));
  return sequences;
}

/// packed_attention_forward's arguments: q, k, v, ctx [1, H, N, d]; lse [1, H, N].
inline PackedDims check_packed_attention_forward(const ArgumentChecks& check, const loom::Tensor& q,
                                                 const loom::Tensor& k, const loom::Tensor& v,
                                                 const loom::Tensor& starts, const int32_t* starts_host,
                                                 int64_t max_sequence, float p, const loom::Tensor& ctx,
                                                 const loom::Tensor& lse) {
  const AttentionDims n = check_attention_forward(check, q, k, v, loom::Tensor{}, p, ctx, lse);
  check.require(n.batch == 1, "q " + q.describe() + " must be [1, H, N, d] (packed tokens)");
  return {n, check_sequence_starts(check, starts, starts_host, max_sequence, n.seq), max_sequence};
}

/// packed_attention_backward's arguments.
inline PackedDims check_packed_attention_backward(const ArgumentChecks& check, const loom::Tensor& d_ctx,
                                                  const loom::Tensor& q, const loom::Tensor& k,
                                                  const loom::Tensor& v, const loom::Tensor& ctx,
                                                  const loom::Tensor& lse, const loom::Tensor& starts,
                                                  const int32_t* starts_host, int64_t max_sequence, float p,
                                                  const loom::Tensor& dq, const loom::Tensor& dk,
                                                  const loom::Tensor& dv, const loom::Tensor& delta) {
  const AttentionDims n =
      check_attention_backward(check, d_ctx, q, k, v, ctx, lse, loom::Tensor{}, p, dq, dk, dv, delta);
  check.require(n.batch == 1, "q " + q.describe() + " must be [1, H, N, d] (packed tokens)");
  return {n, check_sequence_starts(check, starts, starts_host, max_sequence, n.seq), max_sequence};
}

/// packed_rotary_apply's arguments: rotary_apply's with x [1, H, N, d] and positions i32 [N].
inline AttentionDims check_packed_rotary_apply(const ArgumentChecks& check, const loom::Tensor& x,
                                               const loom::Tensor& y, const loom::Tensor& positions,
                                               double theta) {
  const AttentionDims n = check_rotary_apply(check, x, y, theta);
  check.require(n.batch == 1, "x " + x.describe() + " must be [1, H, N, d] (packed tokens)");
  check.tensor("positions", positions, {loom::DType::i32});
  check.shape("positions", positions, {n.seq});
  return n;
}

/// One sequence of a packed call as a batch of one row: tokens [start, start + length).
struct PackedSequenceCall {
  int64_t start, length;
  int64_t first_statistic;  ///< its [H, L] block of lse and delta: float H·start
  uint64_t first_element;   ///< its first dropout element: H·Σ L² over the sequences before it
  /// Its rows of a [1, H, N, d] head view: [1, H, L, d].
  loom::Tensor rows(const loom::Tensor& heads) const { return heads.narrow(2, start, length); }
  /// Its block of a [1, H, N] lse or delta tensor: [1, H, L] contiguous.
  loom::Tensor statistics(const loom::Tensor& t) const {
    return loom::Tensor::contiguous(static_cast<float*>(t.data) + first_statistic, loom::DType::f32,
                                    {1, t.shape[1], length}, t.device);
  }
};

/// Calls fn(PackedSequenceCall) for every sequence of a checked packed call, in order.
template <typename Fn>
void for_each_packed_sequence(const PackedDims& packed, const int32_t* starts_host, Fn&& fn) {
  const int64_t H = packed.heads.heads;
  uint64_t element = 0;
  for (int64_t s = 0; s < packed.sequences; ++s) {
    const int64_t start = starts_host[s], length = starts_host[s + 1] - start;
    fn(PackedSequenceCall{start, length, H * start, element});
    element += static_cast<uint64_t>(H * length * length);
  }
}

}  // namespace loom_backend
