// Rotary position embeddings (loom/sdk/ops/rotary_embedding.hpp): each head row of x rotated in
// pairs (i, i + d/2) by the angle of its position, into y or in place.
//
// The factors cos and sin of every (position, pair) are loom_backend::rotary_factors (angles in
// double, rounded to f32 once), kept between calls in a table per theta and head dimension
// (every layer rotates q and k by the same ones) and grown when a longer sequence comes. The rows
// run in parallel; each row reads both halves of a pair before writing them, so y may be x, and
// each output is two f32 products summed and rounded once to the storage type — the same
// whatever the thread count.
#include <algorithm>
#include <cstddef>
#include <string>

#include "cpu_backend.hpp"
#include "float_storage.hpp"
#include "loom_backend/packed_attention_contract.hpp"
#include "loom_backend/rotary_embedding_contract.hpp"
#include "op_preamble.hpp"

namespace loom_cpu {
namespace {

/// Rotates the [B, H, T, d] rows of x into y by `factors` ([positions][d/2] pairs of cos, sin), with
/// the sine negated for the inverse rotation. Row t is at position t, or positions[t] when given
/// (PackedAttention::packed_rotary_apply).
template <typename S>
void rotate_rows(const loom::Tensor& x, const loom::Tensor& y, const loom_backend::AttentionDims& n,
                 const float* factors, const int32_t* positions, bool inverse, int threads) {
  const S* xp = static_cast<const S*>(x.data);
  S* yp = static_cast<S*>(y.data);
  const int64_t half = n.head_dim / 2, rows = n.batch * n.heads * n.seq;
  const float sign = inverse ? -1.0f : 1.0f;
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * n.head_dim > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = r / (n.heads * n.seq), h = (r / n.seq) % n.heads, t = r % n.seq;
    const S* xr = xp + b * x.strides[0] + h * x.strides[1] + t * x.strides[2];
    S* yr = yp + b * y.strides[0] + h * y.strides[1] + t * y.strides[2];
    const float* f = factors + 2 * (positions != nullptr ? positions[t] : t) * half;
#pragma omp simd
    for (int64_t i = 0; i < half; ++i) {
      const float c = f[2 * i], s = sign * f[2 * i + 1];
      const float lo = load(xr, i), hi = load(xr, i + half);
      store(yr, i, lo * c - hi * s);
      store(yr, i + half, hi * c + lo * s);
    }
  }
}

}  // namespace

const CpuBackend::RotaryTable& CpuBackend::rotary_table(double theta, int64_t head_dim, int64_t positions) {
  RotaryTable* table = nullptr;
  for (RotaryTable& t : rotary_tables_)
    if (t.theta == theta && t.head_dim == head_dim) table = &t;
  if (table == nullptr) {
    if (rotary_tables_.size() < kRotaryTables) {
      table = &rotary_tables_.emplace_back();
    } else {
      table = &rotary_tables_[rotary_next_];
      rotary_next_ = (rotary_next_ + 1) % kRotaryTables;
    }
    table->theta = theta;
    table->head_dim = head_dim;
    table->positions = 0;
  }
  if (positions > table->positions) {
    const int64_t half = head_dim / 2, first = table->positions;
    table->cos_sin.resize(static_cast<size_t>(2 * positions * half));
    float* f = table->cos_sin.data();
#pragma omp parallel for num_threads(threads_) schedule(static) if ((positions - first) * half > 1024)
    for (int64_t t = first; t < positions; ++t)
      for (int64_t i = 0; i < half; ++i) {
        const loom_backend::RotaryFactors factors = loom_backend::rotary_factors(t, i, head_dim, theta);
        f[2 * (t * half + i)] = factors.cos;
        f[2 * (t * half + i) + 1] = factors.sin;
      }
    table->positions = positions;
  }
  return *table;
}

void CpuBackend::rotary_apply(const loom::Tensor& x, const loom::Tensor& y, double theta, bool inverse) {
  run_op(
      "rotary_apply",
      [&](const ArgumentChecks& check) { return loom_backend::check_rotary_apply(check, x, y, theta); },
      {x.dtype},
      [&](const loom_backend::AttentionDims& n, auto storage) {
        using S = decltype(storage);
        const RotaryTable& table = rotary_table(theta, n.head_dim, n.seq);
        rotate_rows<S>(x, y, n, table.cos_sin.data(), nullptr, inverse, threads_);
      });
}

void CpuBackend::packed_rotary_apply(const loom::Tensor& x, const loom::Tensor& y,
                                     const loom::Tensor& positions, double theta, bool inverse) {
  run_op(
      "packed_rotary_apply",
      [&](const ArgumentChecks& check) {
        const loom_backend::AttentionDims n =
            loom_backend::check_packed_rotary_apply(check, x, y, positions, theta);
        const int32_t* at = positions.data_as<int32_t>();
        for (int64_t t = 0; t < n.seq; ++t)
          check.require(at[t] >= 0 && at[t] < n.seq, "positions[" + std::to_string(t) + "] = " +
                                                         std::to_string(at[t]) + " is outside [0, N = " +
                                                         std::to_string(n.seq) + ")");
        return n;
      },
      {x.dtype},
      [&](const loom_backend::AttentionDims& n, auto storage) {
        using S = decltype(storage);
        const int32_t* at = positions.data_as<int32_t>();
        const int64_t extent = n.seq == 0 ? 0 : *std::max_element(at, at + n.seq) + int64_t{1};
        const RotaryTable& table = rotary_table(theta, n.head_dim, extent);
        rotate_rows<S>(x, y, n, table.cos_sin.data(), at, inverse, threads_);
      });
}

}  // namespace loom_cpu
