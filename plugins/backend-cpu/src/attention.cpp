// Fused attention (loom/sdk/ops/fused_attention.hpp) and its windowed form
// (loom/sdk/ops/windowed_attention.hpp), the reference implementation: softmax(scale·q·kᵀ + key
// mask) with dropout, times v, one query row at a time, never storing the [B, H, T, T] matrix.
//
// It is what the GPU kernels and the unfused encoder path are tested against, so it favours
// plain loops: every sum in f32 in a fixed order (a dot product as eight partial sums over its
// d terms, the softmax and the products with v in key order), every exp through the same 8-lane
// vector call (vector_math.hpp), so a row's results are a function of its own keys alone and a
// padded row equals the same row unpadded, bit for bit. Forward rows run in parallel
// (each row owns its outputs). Backward runs one (batch, head) per task so the key-side
// gradients dk, dv are summed over query rows in a fixed order: results never depend on the
// thread count.
//
// One code serves the three families. Query i visits only the keys of its band [first, last]
// (loom_backend::key_band; every key without a window): a key outside it scores kMaskedKey, whose
// exponential is exactly 0 beside any allowed key, so leaving it out of the sums, in key order,
// changes no bit — and FusedAttention is the band of every key, the same loops. A row whose band
// holds no allowed key is uniform over all T keys, as FusedAttention's fully masked rows are, and
// visits them all. PackedAttention runs the same loops on each sequence in turn, as a batch of one
// row of its length without a key mask (loom_backend::for_each_packed_sequence).
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu_backend.hpp"
#include "float_storage.hpp"
#include "loom/sdk/philox.hpp"
#include "loom_backend/attention_contract.hpp"
#include "loom_backend/packed_attention_contract.hpp"
#include "op_preamble.hpp"
#include "vector_math.hpp"

namespace loom_cpu {
namespace {

/// Extents of the [B, H, T, d] views of one attention call.
struct Heads {
  int64_t B, H, T, d;
};
Heads heads_of(const loom_backend::AttentionDims& n) {
  return {n.batch, n.heads, n.seq, n.head_dim};
}

/// Element offset of row (b, h, i) of a [B, H, T, d] view (last stride 1).
int64_t row_offset(const loom::Tensor& t, int64_t b, int64_t h, int64_t i) {
  return b * t.strides[0] + h * t.strides[1] + i * t.strides[2];
}

/// Which keys the key mask allows (all but those ≤ ½·kMaskedKey; all without a mask), as running
/// counts per batch row, so that a row's band is known to hold an allowed key or not in O(1). A
/// row whose band holds none is uniform (as in the unfused path, where scale·s + kMaskedKey rounds
/// to kMaskedKey for every key).
class AllowedKeys {
 public:
  AllowedKeys(const float* mask, int64_t B, int64_t T) : T_(T) {
    if (mask == nullptr) return;
    before_.resize(static_cast<size_t>(B * (T + 1)));
    for (int64_t b = 0; b < B; ++b) {
      int64_t* counts = before_.data() + b * (T + 1);
      counts[0] = 0;
      for (int64_t j = 0; j < T; ++j)
        counts[j + 1] = counts[j] + (mask[b * T + j] <= 0.5f * loom::kMaskedKey ? 0 : 1);
    }
  }
  /// True when batch row b allows no key of `band`.
  bool none_in(int64_t b, loom_backend::KeyBand band) const {
    if (before_.empty()) return false;
    const int64_t* counts = before_.data() + b * (T_ + 1);
    return counts[band.last + 1] == counts[band.first];
  }

 private:
  int64_t T_;
  std::vector<int64_t> before_;  // [B, T + 1]: allowed keys of batch row b before key j
};

/// The dropout factor of probability (b, h, i, j): 0 when dropped, 1/(1 − p) when kept, 1 for p = 0.
struct DropoutMask {
  float p;
  uint64_t seed, offset;
  uint32_t threshold;
  float keep_scale;
  DropoutMask(float p_, uint64_t seed_, uint64_t offset_)
      : p(p_),
        seed(seed_),
        offset(offset_),
        threshold(loom::dropout_threshold(p_)),
        keep_scale(1.0f / (1.0f - p_)) {}
  /// Factors of row `row` = (b·H + h)·T + i for keys `keys` of [0, T) into z[j].
  void row(int64_t row, int64_t T, loom_backend::KeyBand keys, float* z) const {
    if (p == 0.0f) {
      for (int64_t j = keys.first; j <= keys.last; ++j) z[j] = 1.0f;
      return;
    }
    const uint64_t first = offset + static_cast<uint64_t>(row * T);
    for (int64_t j = keys.first; j <= keys.last; ++j)
      z[j] = loom::philox_word(seed, first + static_cast<uint64_t>(j)) >= threshold ? keep_scale : 0.0f;
  }
};

/// Σ_c a[c]·b[c] in f32 as eight partial sums (element c in sum c mod 8, in order), added in a
/// fixed tree: the loop vectorises (one chain of d sequential additions does not), and the result
/// is a function of the two rows and d alone, so a row gives the same bits in any batch.
template <typename SA, typename SB>
float dot(const SA* a, const SB* b, int64_t d) {
  constexpr int64_t kLanes = 8;
  float lanes[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= d; c += kLanes) {
#pragma omp simd
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += load(a, c + l) * load(b, c + l);
  }
  for (int64_t l = 0; c + l < d; ++l) lanes[l] += load(a, c + l) * load(b, c + l);
  return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
}

/// x[j] ← exp(x[j] − shift) for the keys of `band`, through exp_in_lanes from band.first: a key's
/// exp does not depend on how far the band reaches.
void exp_of_band(float* x, loom_backend::KeyBand band, float shift) {
  float* first = x + band.first;
  exp_in_lanes(band.last - band.first + 1, [&](int64_t j) { return first[j] - shift; },
               [&](int64_t j, float e) { first[j] = e; });
}

/// Row scores s[j] = scale·q_i·k_j + mask[j] for the keys of `band` into `s`.
template <typename S>
void row_scores(const S* q_row, const S* k, const loom::Tensor& kt, int64_t b, int64_t h,
                const float* mask_row, float scale, const Heads& n, loom_backend::KeyBand band, float* s) {
  for (int64_t j = band.first; j <= band.last; ++j)
    s[j] = scale * dot(q_row, k + row_offset(kt, b, h, j), n.d) + (mask_row != nullptr ? mask_row[j] : 0.0f);
}

/// The keys row i visits: its band, or every key when the band allows none (a uniform row).
struct RowKeys {
  loom_backend::KeyBand band, visited;
  bool uniform;
};
RowKeys row_keys(const AllowedKeys& allowed, int64_t b, int64_t i, int64_t window, int64_t T) {
  const loom_backend::KeyBand band = loom_backend::key_band(i, window, T);
  const bool uniform = allowed.none_in(b, band);
  return {band, uniform ? loom_backend::KeyBand{0, T - 1} : band, uniform};
}

template <typename S>
void forward_rows(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v, const float* mask,
                  float scale, int64_t window, const DropoutMask& dropout, const loom::Tensor& ctx,
                  float* lse, const Heads& n, int threads) {
  const S* qp = static_cast<const S*>(q.data);
  const S* kp = static_cast<const S*>(k.data);
  const S* vp = static_cast<const S*>(v.data);
  S* cp = static_cast<S*>(ctx.data);
  const AllowedKeys allowed(mask, n.B, n.T);
  const int64_t rows = n.B * n.H * n.T;
  const int64_t keys_per_row = window < 0 ? n.T : std::min(n.T, 2 * window + 1);
#pragma omp parallel num_threads(threads) if (rows * keys_per_row * n.d > kParallelMinElements)
  {
    std::vector<float> s(static_cast<size_t>(n.T)), z(static_cast<size_t>(n.T)),
        out(static_cast<size_t>(n.d));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t b = r / (n.H * n.T), h = (r / n.T) % n.H, i = r % n.T;
      const RowKeys keys = row_keys(allowed, b, i, window, n.T);
      const loom_backend::KeyBand band = keys.band;
      row_scores(qp + row_offset(q, b, h, i), kp, k, b, h, mask != nullptr ? mask + b * n.T : nullptr, scale,
                 n, band, s.data());
      float max = -INFINITY;
      for (int64_t j = band.first; j <= band.last; ++j) max = std::fmax(max, s[j]);
      exp_of_band(s.data(), band, max);  // s[j] = exp(s[j] − max) from here on
      float sum = 0.0f;
      for (int64_t j = band.first; j <= band.last; ++j) sum += s[j];
      lse[r] = max + std::log(sum);
      dropout.row(r, n.T, keys.visited, z.data());
      for (int64_t c = 0; c < n.d; ++c) out[static_cast<size_t>(c)] = 0.0f;
      for (int64_t j = keys.visited.first; j <= keys.visited.last; ++j) {
        const float prob = keys.uniform ? 1.0f / static_cast<float>(n.T) : s[j] / sum;
        const float weight = prob * z[j];
        if (weight == 0.0f) continue;
        const S* v_row = vp + row_offset(v, b, h, j);
        for (int64_t c = 0; c < n.d; ++c) out[static_cast<size_t>(c)] += weight * load(v_row, c);
      }
      S* ctx_row = cp + row_offset(ctx, b, h, i);
      for (int64_t c = 0; c < n.d; ++c) store(ctx_row, c, out[static_cast<size_t>(c)]);
    }
  }
}

template <typename S, typename SD>
void backward_heads(const loom::Tensor& d_ctx, const loom::Tensor& q, const loom::Tensor& k,
                    const loom::Tensor& v, const loom::Tensor& ctx, const float* lse, const float* mask,
                    float scale, int64_t window, const DropoutMask& dropout, const loom::Tensor& dq,
                    const loom::Tensor& dk, const loom::Tensor& dv, float* delta, const Heads& n,
                    int threads) {
  const SD* dcp = static_cast<const SD*>(d_ctx.data);
  const S* qp = static_cast<const S*>(q.data);
  const S* kp = static_cast<const S*>(k.data);
  const S* vp = static_cast<const S*>(v.data);
  const S* cp = static_cast<const S*>(ctx.data);
  float* dqp = static_cast<float*>(dq.data);
  float* dkp = static_cast<float*>(dk.data);
  float* dvp = static_cast<float*>(dv.data);
  const AllowedKeys allowed(mask, n.B, n.T);
  const int64_t pairs = n.B * n.H;
  const int64_t keys_per_row = window < 0 ? n.T : std::min(n.T, 2 * window + 1);
  const bool parallel = pairs > 1 && pairs * n.T * keys_per_row * n.d > kParallelMinElements;
#pragma omp parallel num_threads(threads) if (parallel)
  {
    std::vector<float> s(static_cast<size_t>(n.T)), z(static_cast<size_t>(n.T)), ds(static_cast<size_t>(n.T));
#pragma omp for schedule(static)
    for (int64_t pair = 0; pair < pairs; ++pair) {
      const int64_t b = pair / n.H, h = pair % n.H;
      for (int64_t j = 0; j < n.T; ++j)
        for (int64_t c = 0; c < n.d; ++c) {
          dkp[row_offset(dk, b, h, j) + c] = 0.0f;
          dvp[row_offset(dv, b, h, j) + c] = 0.0f;
        }
      for (int64_t i = 0; i < n.T; ++i) {
        const int64_t r = pair * n.T + i;
        const SD* dc_row = dcp + row_offset(d_ctx, b, h, i);
        const S* q_row = qp + row_offset(q, b, h, i);
        const S* c_row = cp + row_offset(ctx, b, h, i);
        const float row_delta = dot(dc_row, c_row, n.d);
        delta[r] = row_delta;
        const RowKeys keys = row_keys(allowed, b, i, window, n.T);
        const loom_backend::KeyBand visited = keys.visited;
        row_scores(q_row, kp, k, b, h, mask != nullptr ? mask + b * n.T : nullptr, scale, n, keys.band,
                   s.data());
        dropout.row(r, n.T, visited, z.data());
        if (!keys.uniform) exp_of_band(s.data(), visited, lse[r]);  // s[j] = exp(s[j] − lse) = P_ij
        for (int64_t j = visited.first; j <= visited.last; ++j) {
          const float prob = keys.uniform ? 1.0f / static_cast<float>(n.T) : s[j];
          const S* v_row = vp + row_offset(v, b, h, j);
          const float dprob = dot(dc_row, v_row, n.d);
          ds[static_cast<size_t>(j)] = prob * (dprob * z[j] - row_delta);
          float* dv_row = dvp + row_offset(dv, b, h, j);
          const float weight = prob * z[j];
          for (int64_t c = 0; c < n.d; ++c) dv_row[c] += weight * load(dc_row, c);
        }
        float* dq_row = dqp + row_offset(dq, b, h, i);
        for (int64_t c = 0; c < n.d; ++c) dq_row[c] = 0.0f;
        for (int64_t j = visited.first; j <= visited.last; ++j) {
          const float g = scale * ds[static_cast<size_t>(j)];
          const S* k_row = kp + row_offset(k, b, h, j);
          float* dk_row = dkp + row_offset(dk, b, h, j);
          for (int64_t c = 0; c < n.d; ++c) {
            dq_row[c] += g * load(k_row, c);
            dk_row[c] += g * load(q_row, c);
          }
        }
      }
    }
  }
}

/// Runs fn(call, threads) for every sequence of a packed call. Sequences own disjoint rows of every
/// output, so they run in parallel, one thread each (a sequence is too small to split its heads
/// over threads, and a parallel region per sequence costs more than it saves); a lone sequence gets
/// every thread. Each sequence's result is computed by one thread in a fixed order: the same bits
/// whatever the thread count.
template <typename Fn>
void for_sequences(const loom_backend::PackedDims& packed, const int32_t* starts_host, int threads, Fn&& fn) {
  std::vector<loom_backend::PackedSequenceCall> calls;
  loom_backend::for_each_packed_sequence(packed, starts_host,
                                         [&](const loom_backend::PackedSequenceCall& c) { calls.push_back(c); });
  if (calls.size() == 1) {
    fn(calls.front(), threads);
    return;
  }
  const auto count = static_cast<int64_t>(calls.size());
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t i = 0; i < count; ++i) fn(calls[static_cast<size_t>(i)], 1);
}

}  // namespace

bool CpuBackend::fused_attention(int64_t head_dim, int64_t max_seq) const {
  return fused_attention_ && head_dim > 0 && max_seq > 0;
}

void CpuBackend::attention_forward(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v,
                                   const loom::Tensor& key_mask, float scale, float p, uint64_t seed,
                                   uint64_t offset, const loom::Tensor& ctx, const loom::Tensor& lse) {
  banded_attention_forward("attention_forward", q, k, v, key_mask, scale, -1, p, seed, offset, ctx, lse);
}

void CpuBackend::attention_backward(const loom::Tensor& d_ctx, const loom::Tensor& q, const loom::Tensor& k,
                                    const loom::Tensor& v, const loom::Tensor& ctx, const loom::Tensor& lse,
                                    const loom::Tensor& key_mask, float scale, float p, uint64_t seed,
                                    uint64_t offset, const loom::Tensor& dq, const loom::Tensor& dk,
                                    const loom::Tensor& dv, const loom::Tensor& delta) {
  banded_attention_backward("attention_backward", d_ctx, q, k, v, ctx, lse, key_mask, scale, -1, p, seed,
                            offset, dq, dk, dv, delta);
}

void CpuBackend::windowed_attention_forward(const loom::Tensor& q, const loom::Tensor& k,
                                            const loom::Tensor& v, const loom::Tensor& key_mask, float scale,
                                            int64_t window, float p, uint64_t seed, uint64_t offset,
                                            const loom::Tensor& ctx, const loom::Tensor& lse) {
  banded_attention_forward("windowed_attention_forward", q, k, v, key_mask, scale, window, p, seed, offset,
                           ctx, lse);
}

void CpuBackend::windowed_attention_backward(const loom::Tensor& d_ctx, const loom::Tensor& q,
                                             const loom::Tensor& k, const loom::Tensor& v,
                                             const loom::Tensor& ctx, const loom::Tensor& lse,
                                             const loom::Tensor& key_mask, float scale, int64_t window,
                                             float p, uint64_t seed, uint64_t offset, const loom::Tensor& dq,
                                             const loom::Tensor& dk, const loom::Tensor& dv,
                                             const loom::Tensor& delta) {
  banded_attention_backward("windowed_attention_backward", d_ctx, q, k, v, ctx, lse, key_mask, scale, window,
                            p, seed, offset, dq, dk, dv, delta);
}

void CpuBackend::banded_attention_forward(const char* op, const loom::Tensor& q, const loom::Tensor& k,
                                          const loom::Tensor& v, const loom::Tensor& key_mask, float scale,
                                          int64_t window, float p, uint64_t seed, uint64_t offset,
                                          const loom::Tensor& ctx, const loom::Tensor& lse) {
  run_op(
      op,
      [&](const ArgumentChecks& check) {
        return heads_of(
            loom_backend::check_windowed_attention_forward(check, q, k, v, key_mask, window, p, ctx, lse));
      },
      {q.dtype},
      [&](const Heads& n, auto s) {
        using S = decltype(s);
        const float* mask = key_mask.defined() ? key_mask.data_as<float>() : nullptr;
        const DropoutMask dropout(p, seed, offset);
        forward_rows<S>(q, k, v, mask, scale, loom_backend::effective_window(window, n.T), dropout, ctx,
                        lse.data_as<float>(), n, threads_);
      });
}

void CpuBackend::banded_attention_backward(const char* op, const loom::Tensor& d_ctx, const loom::Tensor& q,
                                           const loom::Tensor& k, const loom::Tensor& v,
                                           const loom::Tensor& ctx, const loom::Tensor& lse,
                                           const loom::Tensor& key_mask, float scale, int64_t window, float p,
                                           uint64_t seed, uint64_t offset, const loom::Tensor& dq,
                                           const loom::Tensor& dk, const loom::Tensor& dv,
                                           const loom::Tensor& delta) {
  run_op(
      op,
      [&](const ArgumentChecks& check) {
        return heads_of(loom_backend::check_windowed_attention_backward(
            check, d_ctx, q, k, v, ctx, lse, key_mask, window, p, dq, dk, dv, delta));
      },
      {q.dtype},
      [&](const Heads& n, auto s) {
        using S = decltype(s);
        const float* mask = key_mask.defined() ? key_mask.data_as<float>() : nullptr;
        const DropoutMask dropout(p, seed, offset);
        const int64_t band = loom_backend::effective_window(window, n.T);
        auto run = [&](auto sd) {
          using SD = decltype(sd);
          backward_heads<S, SD>(d_ctx, q, k, v, ctx, lse.data_as<float>(), mask, scale, band, dropout, dq, dk,
                                dv, delta.data_as<float>(), n, threads_);
        };
        // d_ctx is f32 or q's dtype (the contract): a choice of two, not a dispatch over the three
        // storage types, so no kernel is compiled for a pairing that cannot occur.
        if (d_ctx.dtype == DType::f32)
          run(float{});
        else
          run(S{});
      });
}

void CpuBackend::packed_attention_forward(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v,
                                          const loom::Tensor& starts, const int32_t* starts_host,
                                          int64_t max_sequence, float scale, int64_t window, float p,
                                          uint64_t seed, uint64_t offset, const loom::Tensor& ctx,
                                          const loom::Tensor& lse) {
  run_op(
      "packed_attention_forward",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_packed_attention_forward(check, q, k, v, starts, starts_host, max_sequence, p,
                                                            ctx, lse);
      },
      {q.dtype},
      [&](const loom_backend::PackedDims& packed, auto s) {
        using S = decltype(s);
        for_sequences(packed, starts_host, threads_, [&](const loom_backend::PackedSequenceCall& c, int threads) {
          const Heads n{1, packed.heads.heads, c.length, packed.heads.head_dim};
          forward_rows<S>(c.rows(q), c.rows(k), c.rows(v), nullptr, scale,
                          loom_backend::effective_window(window, c.length),
                          DropoutMask(p, seed, offset + c.first_element), c.rows(ctx),
                          lse.data_as<float>() + c.first_statistic, n, threads);
        });
      });
}

void CpuBackend::packed_attention_backward(const loom::Tensor& d_ctx, const loom::Tensor& q, const loom::Tensor& k,
                                           const loom::Tensor& v, const loom::Tensor& ctx, const loom::Tensor& lse,
                                           const loom::Tensor& starts, const int32_t* starts_host,
                                           int64_t max_sequence, float scale, int64_t window, float p,
                                           uint64_t seed, uint64_t offset, const loom::Tensor& dq,
                                           const loom::Tensor& dk, const loom::Tensor& dv, const loom::Tensor& delta) {
  run_op(
      "packed_attention_backward",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_packed_attention_backward(check, d_ctx, q, k, v, ctx, lse, starts, starts_host,
                                                             max_sequence, p, dq, dk, dv, delta);
      },
      {q.dtype},
      [&](const loom_backend::PackedDims& packed, auto s) {
        using S = decltype(s);
        auto run = [&](auto sd) {
          using SD = decltype(sd);
          for_sequences(packed, starts_host, threads_, [&](const loom_backend::PackedSequenceCall& c, int threads) {
            const Heads n{1, packed.heads.heads, c.length, packed.heads.head_dim};
            backward_heads<S, SD>(c.rows(d_ctx), c.rows(q), c.rows(k), c.rows(v), c.rows(ctx),
                                  lse.data_as<float>() + c.first_statistic, nullptr, scale,
                                  loom_backend::effective_window(window, c.length),
                                  DropoutMask(p, seed, offset + c.first_element), c.rows(dq), c.rows(dk),
                                  c.rows(dv), delta.data_as<float>() + c.first_statistic, n, threads);
          });
        };
        if (d_ctx.dtype == DType::f32)
          run(float{});
        else
          run(S{});
      });
}

}  // namespace loom_cpu
