// The argument contract of PackedAttention (loom/sdk/ops/packed_attention.hpp), checked the same way
// by every backend that offers it, and the key band of a packed query, which every backend
// computes the same way.
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

/// starts: i32 [S + 1] on the device, S ≥ 1; max_sequence in [1, N]. (Its values are the
/// caller's promise: a device backend cannot read them without a synchronisation.)
inline int64_t check_sequence_starts(const ArgumentChecks& check, const loom::Tensor& starts,
                                     int64_t max_sequence, int64_t tokens) {
  check.tensor("starts", starts, {loom::DType::i32});
  check.require(starts.ndim == 1 && starts.shape[0] >= 2,
                "starts " + starts.describe() + " must be [S + 1] with S ≥ 1 sequences");
  check.require(
      max_sequence >= 1 && max_sequence <= tokens,
      "max_sequence " + std::to_string(max_sequence) + " must be in [1, " + std::to_string(tokens) + "]");
  return starts.shape[0] - 1;
}

/// packed_attention_forward's arguments: q, k, v, ctx [1, H, N, d]; lse [1, H, N].
inline PackedDims check_packed_attention_forward(const ArgumentChecks& check, const loom::Tensor& q,
                                                 const loom::Tensor& k, const loom::Tensor& v,
                                                 const loom::Tensor& starts, int64_t max_sequence, float p,
                                                 const loom::Tensor& ctx, const loom::Tensor& lse) {
  const AttentionDims n = check_attention_forward(check, q, k, v, loom::Tensor{}, p, ctx, lse);
  check.require(n.batch == 1, "q " + q.describe() + " must be [1, H, N, d] (packed tokens)");
  return {n, check_sequence_starts(check, starts, max_sequence, n.seq), max_sequence};
}

/// packed_attention_backward's arguments.
inline PackedDims check_packed_attention_backward(const ArgumentChecks& check, const loom::Tensor& d_ctx,
                                                  const loom::Tensor& q, const loom::Tensor& k,
                                                  const loom::Tensor& v, const loom::Tensor& ctx,
                                                  const loom::Tensor& lse, const loom::Tensor& starts,
                                                  int64_t max_sequence, float p, const loom::Tensor& dq,
                                                  const loom::Tensor& dk, const loom::Tensor& dv,
                                                  const loom::Tensor& delta) {
  const AttentionDims n =
      check_attention_backward(check, d_ctx, q, k, v, ctx, lse, loom::Tensor{}, p, dq, dk, dv, delta);
  check.require(n.batch == 1, "q " + q.describe() + " must be [1, H, N, d] (packed tokens)");
  return {n, check_sequence_starts(check, starts, max_sequence, n.seq), max_sequence};
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

/// The keys [first, last] packed query i of the sequence [begin, end) may attend to under an
/// effective window (−1: the whole sequence).
inline KeyBand packed_key_band(int64_t i, int64_t begin, int64_t end, int64_t window) {
  if (window < 0) return {begin, end - 1};
  return {std::max<int64_t>(begin, i - window), std::min<int64_t>(end - 1, i + window)};
}

}  // namespace loom_backend
